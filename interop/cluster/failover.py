"""confluent-kafka (librdkafka) producing through a leader kill.

    failover.py BOOTSTRAP TOPIC COUNT LEADER_PID

Produces COUNT records to partition 0 of TOPIC with acks=all and
idempotence, sends SIGKILL to LEADER_PID once a third of them are
acknowledged, keeps producing, then reads the partition back and prints
one line: "acked=N errors=N read=N unique=N missing=N duplicates=N".
"""

import os
import signal
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def main(bootstrap, topic, count, leader_pid):
    acked, errors = [], []

    def on_delivery(err, msg):
        (errors if err else acked).append(err or msg.value().decode())

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 5,
                  "message.timeout.ms": 60000})
    killed = False
    for i in range(count):
        p.produce(topic, value=f"p{i}".encode(), partition=0, on_delivery=on_delivery)
        p.poll(0)
        if i % 50 == 49:
            time.sleep(0.05)  # spread the records over a few seconds
        if not killed and i == count // 2:
            while len(acked) < count // 3:
                p.poll(0.1)  # half sent: make sure the kill lands mid-stream
        if not killed and len(acked) >= count // 3:
            os.kill(leader_pid, signal.SIGKILL)
            killed = True
    p.flush(90)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-failover",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    seen = []
    deadline = time.time() + 30
    while len(seen) < len(acked) and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.append(m.value().decode())
    c.close()
    missing = len(set(acked) - set(seen))
    print(f"killed={killed} acked={len(acked)} errors={len(errors)} read={len(seen)} "
          f"unique={len(set(seen))} missing={missing} duplicates={len(seen) - len(set(seen))}")
    if errors:
        print("first error:", errors[0], file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
