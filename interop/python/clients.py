"""One small adapter per Python client, so every test runs against both.

Records travel as Rec tuples; headers are a list of (str, bytes|None) pairs
and timestamps are milliseconds of CreateTime.
"""

import time
from collections import namedtuple

Rec = namedtuple("Rec", "partition offset key value headers timestamp")

# After the n records a read asks for, it keeps polling this many seconds:
# a record beyond n (stored twice, or never meant to be visible) then shows
# up in the result, whose length the tests check.
DRAIN = 1.0


def read_n(more, n, timeout, drain):
    """Reads records from more(done, until), a generator that polls until
    done() or the time until, until n arrived or timeout passed, then for
    drain seconds more. A (partition, offset) delivered twice is a
    failure."""
    got = []
    for r in more(lambda: len(got) >= n, time.time() + timeout):
        got.append(r)
    if len(got) >= n:
        for r in more(lambda: False, time.time() + drain):
            got.append(r)
    seen = set()
    for r in got:
        assert (r.partition, r.offset) not in seen, \
            f"partition {r.partition} offset {r.offset} delivered twice"
        seen.add((r.partition, r.offset))
    return got

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


class Confluent:
    name = "confluent"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def produce(self, topic, recs, compression="none", acks="all", idempotent=True):
        from confluent_kafka import Producer
        p = Producer({
            "bootstrap.servers": self.bootstrap,
            "compression.type": compression,
            "acks": acks,
            "enable.idempotence": idempotent,
            "linger.ms": 20,
            "message.timeout.ms": 20000,
        })
        offsets = [None] * len(recs)
        errors = []

        def cb(i):
            def done(err, msg):
                if err is not None:
                    errors.append(err)
                else:
                    offsets[i] = msg.offset()
            return done

        for i, r in enumerate(recs):
            p.produce(topic, value=r.value, key=r.key, partition=r.partition,
                      timestamp=r.timestamp or 0, headers=r.headers or None, on_delivery=cb(i))
        assert p.flush(20) == 0, "undelivered records"
        assert not errors, errors
        return offsets

    def _consumer(self, extra=None):
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": self.bootstrap, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "group.id": "unused-assign-only"}
        conf.update(extra or {})
        return Consumer(conf)

    @staticmethod
    def _rec(m):
        return Rec(m.partition(), m.offset(), m.key(), m.value(),
                   [(k, v) for k, v in (m.headers() or [])], m.timestamp()[1])

    def consume(self, topic, partitions, n, start=None, timeout=20):
        """Assigns the partitions at offset `start` (default: beginning), reads n records."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition
        c = self._consumer()
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING if start is None else start)
                      for p in partitions])
            return self._poll(c, n, timeout)
        finally:
            c.close()

    def _poll(self, c, n, timeout, drain=DRAIN):
        def more(done, until):
            while not done() and time.time() < until:
                m = c.poll(0.2)
                if m is None:
                    continue
                assert m.error() is None, m.error()
                yield self._rec(m)
        return read_n(more, n, timeout, drain)

    def offsets(self, topic, partition, ts):
        """(earliest, latest, first offset with timestamp >= ts)."""
        from confluent_kafka import TopicPartition
        c = self._consumer()
        try:
            low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            at = c.offsets_for_times([TopicPartition(topic, partition, ts)], timeout=10)[0]
            return low, high, at.offset
        finally:
            c.close()

    def admin_offsets(self, topic, partition):
        """(earliest, latest, max-timestamp offset) through AdminClient.list_offsets."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        tp = TopicPartition(topic, partition)
        out = []
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.max_timestamp()):
            res = a.list_offsets({tp: spec}, request_timeout=15)
            out.append(res[tp].result(timeout=15).offset)
        return tuple(out)

    def create_topics(self, names, partitions):
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        fs = a.create_topics([NewTopic(n, partitions, 1) for n in names], request_timeout=15)
        for f in fs.values():
            f.result(timeout=15)

    def delete_topics(self, names):
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        for f in a.delete_topics(names, request_timeout=15).values():
            f.result(timeout=15)

    def list_topics(self):
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        md = a.list_topics(timeout=10)
        return {name: len(t.partitions) for name, t in md.topics.items()}

    def group_consume(self, topic, group, n, timeout=15):
        """Subscribes in `group`, reads n records, commits; returns (records, committed)."""
        from confluent_kafka import TopicPartition
        c = self._consumer({"group.id": group, "session.timeout.ms": 10000})
        try:
            c.subscribe([topic])
            got = self._poll(c, n, timeout)
            assert len(got) == n, f"group consumed {len(got)} of {n} records"
            c.commit(asynchronous=False)
            parts = sorted({r.partition for r in got})
            committed = c.committed([TopicPartition(topic, p) for p in parts], timeout=10)
            return got, {tp.partition: tp.offset for tp in committed}
        finally:
            c.close()


    def transact(self, topic, aborted, committed, txn_id):
        """Produces `aborted` values in a transaction it aborts, then
        `committed` values in one it commits, all to partition 0."""
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": txn_id,
                      "linger.ms": 5, "message.timeout.ms": 20000})
        p.init_transactions(20)
        for values, commit in ((aborted, False), (committed, True)):
            p.begin_transaction()
            for v in values:
                p.produce(topic, value=v, partition=0)
            assert p.flush(20) == 0, "undelivered records"
            if commit:
                p.commit_transaction(20)
            else:
                p.abort_transaction(20)

    def read_isolated(self, topic, isolation, n, timeout=20):
        """Reads partition 0 from the start with the given isolation level."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition
        c = self._consumer({"isolation.level": isolation})
        try:
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            # Nothing beyond n may arrive: _poll keeps reading after n.
            return self._poll(c, n, timeout)
        finally:
            c.close()


class KafkaPython:
    name = "kafkapython"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def produce(self, topic, recs, compression="none", acks="all", idempotent=True):
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=self.bootstrap,
                          compression_type=None if compression == "none" else compression,
                          acks=acks if acks in ("all",) else int(acks),
                          enable_idempotence=idempotent, linger_ms=20,
                          request_timeout_ms=10000, max_block_ms=15000)
        try:
            futs = [p.send(topic, value=r.value, key=r.key, partition=r.partition,
                           timestamp_ms=r.timestamp, headers=r.headers or None)
                    for r in recs]
            p.flush(20)
            return [f.get(10).offset for f in futs]
        finally:
            p.close(5)

    def _consumer(self, **extra):
        from kafka import KafkaConsumer
        kw = dict(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                  auto_offset_reset="earliest", request_timeout_ms=15000)
        kw.update(extra)
        return KafkaConsumer(**kw)

    @staticmethod
    def _rec(m):
        return Rec(m.partition, m.offset, m.key, m.value, list(m.headers or []), m.timestamp)

    def _poll(self, c, n, timeout, drain=DRAIN):
        def more(done, until):
            # Whole polls: records a poll returned are never dropped.
            while not done() and time.time() < until:
                for tp, ms in sorted(c.poll(timeout_ms=200).items()):
                    yield from (self._rec(m) for m in ms)
        return read_n(more, n, timeout, drain)

    def consume(self, topic, partitions, n, start=None, timeout=20):
        from kafka import TopicPartition
        c = self._consumer()
        try:
            tps = [TopicPartition(topic, p) for p in partitions]
            c.assign(tps)
            if start is None:
                c.seek_to_beginning(*tps)
            else:
                for tp in tps:
                    c.seek(tp, start)
            return self._poll(c, n, timeout)
        finally:
            c.close()

    def offsets(self, topic, partition, ts):
        from kafka import TopicPartition
        c = self._consumer()
        try:
            tp = TopicPartition(topic, partition)
            low = c.beginning_offsets([tp])[tp]
            high = c.end_offsets([tp])[tp]
            at = c.offsets_for_times({tp: ts})[tp]
            return low, high, None if at is None else at.offset
        finally:
            c.close()

    def admin_offsets(self, topic, partition):
        from kafka import KafkaAdminClient, TopicPartition
        from kafka.admin import OffsetSpec
        a = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            tp = TopicPartition(topic, partition)
            out = []
            for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST, OffsetSpec.MAX_TIMESTAMP):
                out.append(a.list_partition_offsets({tp: spec})[tp].offset)
            return tuple(out)
        finally:
            a.close()

    def create_topics(self, names, partitions):
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        a = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            a.create_topics([NewTopic(n, partitions, 1) for n in names], timeout_ms=15000)
        finally:
            a.close()

    def delete_topics(self, names):
        from kafka import KafkaAdminClient
        a = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            a.delete_topics(names, timeout_ms=15000)
        finally:
            a.close()

    def list_topics(self):
        from kafka import KafkaAdminClient
        a = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            return {t["name"]: len(t["partitions"]) for t in a.describe_topics()}
        finally:
            a.close()

    def group_consume(self, topic, group, n, timeout=15):
        from kafka import TopicPartition
        c = self._consumer(group_id=group, session_timeout_ms=10000)
        try:
            c.subscribe([topic])
            got = self._poll(c, n, timeout)
            assert len(got) == n, f"group consumed {len(got)} of {n} records"
            c.commit()
            parts = sorted({r.partition for r in got})
            return got, {p: c.committed(TopicPartition(topic, p)) for p in parts}
        finally:
            c.close()

    def transact(self, topic, aborted, committed, txn_id):
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=txn_id,
                          enable_idempotence=True, linger_ms=5,
                          request_timeout_ms=10000, max_block_ms=15000)
        try:
            p.init_transactions()
            for values, commit in ((aborted, False), (committed, True)):
                p.begin_transaction()
                futs = [p.send(topic, value=v, partition=0) for v in values]
                p.flush(20)
                for f in futs:
                    f.get(10)
                if commit:
                    p.commit_transaction()
                else:
                    p.abort_transaction()
        finally:
            p.close(5)

    def read_isolated(self, topic, isolation, n, timeout=20):
        from kafka import TopicPartition
        c = self._consumer(isolation_level=isolation)
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek_to_beginning(tp)
            # Nothing beyond n may arrive: _poll keeps reading after n.
            return self._poll(c, n, timeout)
        finally:
            c.close()

CLIENTS = {"confluent": Confluent, "kafkapython": KafkaPython}
