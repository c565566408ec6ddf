"""Python `requests` against the REST Proxy that `samsa server` runs
(issue 17): v2 produce read back with confluent-kafka, a v2 consumer
instance reading what confluent-kafka produced, v3 streaming produce, and
Confluent's error codes for bad input.
"""

import base64
import json
import uuid

import pytest

requests = pytest.importorskip("requests")

from confluent_kafka import Consumer, Producer  # noqa: E402

CLIENT = pytest.mark.parametrize("client", ["python requests (REST Proxy)"])
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"


def b64(s):
    return base64.b64encode(s.encode()).decode()


def consume_all(samsa, topic, n):
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
    return got


@CLIENT
@pytest.mark.feature("rest proxy: v2 produce, read with confluent-kafka")
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
    base = r.json()["base_uri"]
    assert requests.post(f"{base}/subscription", headers=h, data=json.dumps({"topics": [topic]}), timeout=60).status_code == 204
    wrong = requests.get(f"{base}/records", headers={"Accept": BINARY}, timeout=60)
    assert (wrong.status_code, wrong.json()["error_code"]) == (406, 40601)
    recs = []
    for _ in range(60):
        r = requests.get(f"{base}/records?timeout=1000", headers={"Accept": "application/vnd.kafka.json.v2+json"}, timeout=60)
        assert r.status_code == 200, r.text
        recs += r.json()
        if len(recs) >= 4:
            break
    assert [(x["offset"], x["key"], x["value"]) for x in recs] == [(i, f"k{i}", {"n": i}) for i in range(4)]
    assert requests.post(f"{base}/offsets", headers=h, timeout=60).status_code == 200
    r = requests.get(f"{base}/offsets", headers=h, data=json.dumps({"partitions": [{"topic": topic, "partition": 0}]}), timeout=60)
    assert r.json()["offsets"][0]["offset"] == 4
    assert requests.delete(base, timeout=60).status_code == 204
    gone = requests.get(f"{base}/records", headers={"Accept": "application/vnd.kafka.json.v2+json"}, timeout=60)
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)


@CLIENT
@pytest.mark.feature("rest proxy: v3 topics and streaming produce")
def test_v3(samsa, topic, client):
    url = samsa.rest_proxy_url()
    cluster = requests.get(f"{url}/v3/clusters", timeout=60).json()["data"][0]["cluster_id"]
    base = f"{url}/v3/clusters/{cluster}"
    r = requests.post(f"{base}/topics", json={"topic_name": topic, "partitions_count": 1}, timeout=60)
    assert r.status_code == 201, r.text

    def stream():
        for i in range(3):
            yield json.dumps({"key": {"type": "STRING", "data": f"k{i}"}, "value": {"type": "JSON", "data": {"n": i}}}).encode()
    r = requests.post(f"{base}/topics/{topic}/records", data=stream(), headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 200, r.text
    reports = [json.loads(line) for line in r.text.splitlines()]
    assert [(x["error_code"], x["offset"]) for x in reports] == [(200, 0), (200, 1), (200, 2)]
    got = consume_all(samsa, topic, 3)
    assert [(m.key(), json.loads(m.value())) for m in got] == [(f"k{i}".encode(), {"n": i}) for i in range(3)]


@CLIENT
@pytest.mark.feature("rest proxy: bad input")
def test_bad_input(samsa, topic, client):
    url = samsa.rest_proxy_url()
    samsa.create_topic(topic)
    cases = [
        ("/topics/nope-" + topic, BINARY, '{"records":[{"value":"eA=="}]}', 404, 40401),
        (f"/topics/{topic}", "application/json", '{"records":[{"value":"eA=="}]}', 415, 415),
        (f"/topics/{topic}", BINARY, '{"records":[{"value":', 400, 400),
        (f"/topics/{topic}", BINARY, '{"records":[{"value":"not base64!"}]}', 422, 422),
        (f"/topics/{topic}/partitions/9", BINARY, '{"records":[{"value":"eA=="}]}', 404, 40402),
    ]
    for path, ct, body, status, code in cases:
        r = requests.post(url + path, data=body, headers={"Content-Type": ct}, timeout=60)
        assert (r.status_code, r.json()["error_code"]) == (status, code), (path, r.text)
    r = requests.get(f"{url}/topics/{topic}/partitions/0/offsets", timeout=60)
    assert r.json() == {"beginning_offset": 0, "end_offset": 0}
