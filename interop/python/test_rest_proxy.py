"""Python `requests` against the REST Proxy that `samsa server` runs
(issue 17): v2 (binary, json) and v3 (json, binary, streaming) produce read
back with confluent-kafka, a v2 consumer instance reading what
confluent-kafka produced and committing offsets confluent-kafka then sees,
and Confluent's error codes for bad input, which produces nothing.
"""

import base64
import json
import uuid

import pytest

requests = pytest.importorskip("requests")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

CLIENT = pytest.mark.parametrize("client", ["python requests (REST Proxy)"])
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


def b64(s):
    return base64.b64encode(s.encode()).decode()


def consume_all(samsa, topic, n):
    """Reads n records of topic with a fresh confluent-kafka group."""
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8],
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    try:
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and not m.error():
                got.append(m)
            if len(got) == n:
                break
    finally:
        c.close()
    return sorted(got, key=lambda m: (m.partition(), m.offset()))


def end_offsets(samsa, topic, partitions=1):
    """The high watermark of each partition, asked of the broker."""
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": "wm-" + uuid.uuid4().hex[:8]})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in range(partitions)]
    finally:
        c.close()


def cluster_base(url):
    cluster = requests.get(f"{url}/v3/clusters", timeout=60).json()["data"][0]["cluster_id"]
    return f"{url}/v3/clusters/{cluster}"


@CLIENT
@pytest.mark.feature("rest proxy: v2 produce binary, read with confluent-kafka")
def test_v2_produce(samsa, topic, client):
    url = samsa.rest_proxy_url()
    samsa.create_topic(topic, partitions=2)
    body = {"records": [{"key": b64(f"k{i}"), "value": b64(f"v{i}"), "partition": 1} for i in range(3)]}
    r = requests.post(f"{url}/topics/{topic}", data=json.dumps(body), headers={"Content-Type": BINARY}, timeout=60)
    assert r.status_code == 200, r.text
    offsets = r.json()["offsets"]
    assert [(o["partition"], o["offset"], o["error_code"]) for o in offsets] == [(1, 0, None), (1, 1, None), (1, 2, None)]
    got = consume_all(samsa, topic, 3)
    assert [(m.partition(), m.offset(), m.key(), m.value()) for m in got] == \
        [(1, i, f"k{i}".encode(), f"v{i}".encode()) for i in range(3)]
    assert end_offsets(samsa, topic, 2) == [0, 3]


@CLIENT
@pytest.mark.feature("rest proxy: v2 produce json, read with confluent-kafka")
def test_v2_produce_json(samsa, topic, client):
    url = samsa.rest_proxy_url()
    samsa.create_topic(topic)
    values = [{"n": 0, "s": "zero"}, [1, 2, 3], "two", 3.5, None]
    body = {"records": [{"key": f"k{i}", "value": v} for i, v in enumerate(values)]}
    # The partition path form of the same request.
    r = requests.post(f"{url}/topics/{topic}/partitions/0", data=json.dumps(body),
                      headers={"Content-Type": JSON, "Accept": V2}, timeout=60)
    assert r.status_code == 200, r.text
    assert [(o["partition"], o["offset"]) for o in r.json()["offsets"]] == [(0, i) for i in range(5)]
    got = consume_all(samsa, topic, 5)
    assert [m.offset() for m in got] == list(range(5))
    # The json format writes each key and value as its JSON text; a null
    # value is a null record value (a tombstone), as Confluent's proxy writes it.
    assert [json.loads(m.key()) for m in got] == [f"k{i}" for i in range(5)]
    assert [json.loads(m.value()) for m in got[:4]] == values[:4]
    assert got[4].value() is None


@CLIENT
@pytest.mark.feature("rest proxy: v3 produce json and binary, read with confluent-kafka")
def test_v3_produce(samsa, topic, client):
    url = samsa.rest_proxy_url()
    base = cluster_base(url)
    r = requests.post(f"{base}/topics", json={"topic_name": topic, "partitions_count": 2}, timeout=60)
    assert r.status_code == 201, r.text
    sent = [
        ({"partition_id": 1, "key": {"type": "JSON", "data": "k0"}, "value": {"type": "JSON", "data": {"n": 0}}},
         b'"k0"', b'{"n":0}'),
        ({"partition_id": 1, "key": {"type": "BINARY", "data": b64("k1")}, "value": {"type": "BINARY", "data": b64("v1")}},
         b"k1", b"v1"),
        ({"partition_id": 1, "key": {"type": "STRING", "data": "k2"}, "value": {"type": "BINARY", "data": b64("v2")}},
         b"k2", b"v2"),
    ]
    for i, (rec, _, _) in enumerate(sent):
        r = requests.post(f"{base}/topics/{topic}/records", json=rec, timeout=60)
        assert r.status_code == 200, r.text
        rep = r.json()
        assert (rep["error_code"], rep["topic_name"], rep["partition_id"], rep["offset"]) == (200, topic, 1, i), rep
    got = consume_all(samsa, topic, 3)
    assert [(m.partition(), m.offset(), m.key()) for m in got] == [(1, i, k) for i, (_, k, _) in enumerate(sent)]
    assert json.loads(got[0].value()) == {"n": 0}
    assert [m.value() for m in got[1:]] == [v for _, _, v in sent[1:]]
    assert end_offsets(samsa, topic, 2) == [0, 3]


@CLIENT
@pytest.mark.feature("rest proxy: v3 streaming produce")
def test_v3_stream(samsa, topic, client):
    url = samsa.rest_proxy_url()
    base = cluster_base(url)
    r = requests.post(f"{base}/topics", json={"topic_name": topic, "partitions_count": 1}, timeout=60)
    assert r.status_code == 201, r.text

    def stream():
        for i in range(3):
            yield json.dumps({"key": {"type": "STRING", "data": f"k{i}"}, "value": {"type": "JSON", "data": {"n": i}}}).encode()
    # A generator body goes out chunked: one connection, one report per record.
    r = requests.post(f"{base}/topics/{topic}/records", data=stream(), headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 200, r.text
    reports = [json.loads(line) for line in r.text.splitlines()]
    assert [(x["error_code"], x["offset"]) for x in reports] == [(200, 0), (200, 1), (200, 2)]
    got = consume_all(samsa, topic, 3)
    assert [(m.offset(), m.key(), json.loads(m.value())) for m in got] == [(i, f"k{i}".encode(), {"n": i}) for i in range(3)]


@CLIENT
@pytest.mark.feature("rest proxy: v2 consumer instance")
def test_v2_consumer_instance(samsa, topic, client):
    url = samsa.rest_proxy_url()
    samsa.create_topic(topic)
    p = Producer({"bootstrap.servers": samsa.bootstrap})
    for i in range(4):
        p.produce(topic, key=json.dumps(f"k{i}"), value=json.dumps({"n": i}))
    assert p.flush(15) == 0
    group = "g-" + uuid.uuid4().hex[:8]
    h = {"Content-Type": V2}
    r = requests.post(f"{url}/consumers/{group}", headers=h, timeout=60,
                      data=json.dumps({"name": "c", "format": "json", "auto.offset.reset": "earliest",
                                       "auto.commit.enable": "false"}))
    assert r.status_code == 200, r.text
    assert r.json()["instance_id"] == "c"
    base = r.json()["base_uri"]
    assert base.endswith(f"/consumers/{group}/instances/c")
    assert requests.post(f"{base}/subscription", headers=h, data=json.dumps({"topics": [topic]}), timeout=60).status_code == 204
    assert requests.get(f"{base}/subscription", timeout=60).json() == {"topics": [topic]}
    wrong = requests.get(f"{base}/records", headers={"Accept": BINARY}, timeout=60)
    assert (wrong.status_code, wrong.json()["error_code"]) == (406, 40601)
    recs = []
    for _ in range(60):
        r = requests.get(f"{base}/records?timeout=1000", headers={"Accept": JSON}, timeout=60)
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith(JSON)
        recs += r.json()
        if len(recs) >= 4:
            break
    assert [(x["topic"], x["partition"], x["offset"], x["key"], x["value"]) for x in recs] == \
        [(topic, 0, i, f"k{i}", {"n": i}) for i in range(4)]
    # Nothing is committed until the instance commits.
    probe = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": group})
    try:
        assert probe.committed([TopicPartition(topic, 0)], timeout=15)[0].offset < 0
    finally:
        probe.close()
    # An empty commit commits what the instance has fetched.
    assert requests.post(f"{base}/offsets", headers=h, timeout=60).status_code == 200
    r = requests.get(f"{base}/offsets", headers=h, data=json.dumps({"partitions": [{"topic": topic, "partition": 0}]}), timeout=60)
    assert r.status_code == 200, r.text
    assert [(o["topic"], o["partition"], o["offset"]) for o in r.json()["offsets"]] == [(topic, 0, 4)]
    assert requests.delete(base, headers=h, timeout=60).status_code == 204
    gone = requests.get(f"{base}/records", headers={"Accept": JSON}, timeout=60)
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)
    # The broker holds the commit: confluent-kafka sees it and, joining the
    # group, starts after it.
    p.produce(topic, key=json.dumps("k4"), value=json.dumps({"n": 4}))
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        assert c.committed([TopicPartition(topic, 0)], timeout=15)[0].offset == 4
        c.subscribe([topic])
        m = None
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and not m.error():
                break
        assert m is not None and (m.offset(), m.key()) == (4, b'"k4"')
    finally:
        c.close()


@CLIENT
@pytest.mark.feature("rest proxy: bad input")
def test_bad_input(samsa, topic, client):
    url = samsa.rest_proxy_url()
    samsa.create_topic(topic)
    missing = "nope-" + topic
    good = '{"records":[{"value":"eA=="}]}'
    cases = [
        ("unknown topic", "/topics/" + missing, BINARY, good, 404, 40401),
        ("plain JSON content type", f"/topics/{topic}", "application/json", good, 415, 415),
        ("text content type", f"/topics/{topic}", "text/plain", good, 415, 415),
        ("malformed JSON", f"/topics/{topic}", BINARY, '{"records":[{"value":', 400, 400),
        ("malformed JSON, json format", f"/topics/{topic}", JSON, '{"records":[{"value":{"a":}]}', 400, 400),
        ("base64 that does not decode", f"/topics/{topic}", BINARY, '{"records":[{"value":"eA=="},{"value":"not base64!"}]}', 422, 422),
        ("unknown partition", f"/topics/{topic}/partitions/9", BINARY, good, 404, 40402),
    ]
    for what, path, ct, body, status, code in cases:
        r = requests.post(url + path, data=body, headers={"Content-Type": ct}, timeout=60)
        assert (r.status_code, r.json()["error_code"]) == (status, code), (what, r.text)

    base = cluster_base(url)
    v3_good = '{"value":{"type":"BINARY","data":"eA=="}}'
    v3_cases = [
        ("v3 unknown topic", f"{base}/topics/{missing}/records", "application/json", v3_good, 404, 40403),
        ("v3 wrong content type", f"{base}/topics/{topic}/records", "text/plain", v3_good, 415, 415),
        ("v3 malformed JSON", f"{base}/topics/{topic}/records", "application/json", '{"value":{"type":', 400, 400),
    ]
    for what, u, ct, body, status, code in v3_cases:
        r = requests.post(u, data=body, headers={"Content-Type": ct}, timeout=60)
        assert r.status_code == status, (what, r.text)
        # A stream answers 200 at once when its first record is good; a bad
        # first record makes the status and the first report's error_code.
        assert json.loads(r.text.splitlines()[0])["error_code"] == code, (what, r.text)

    # Nothing was produced, and no topic was created by the requests.
    assert end_offsets(samsa, topic) == [0]
    r = requests.get(f"{url}/topics/{topic}/partitions/0/offsets", timeout=60)
    assert r.json() == {"beginning_offset": 0, "end_offset": 0}
    assert requests.get(f"{url}/topics/{missing}", timeout=60).status_code == 404
    assert missing not in requests.get(f"{url}/topics", timeout=60).json()
