"""confluent-kafka's SchemaRegistryClient and Avro serdes against the Schema
Registry that `samsa server` runs (issue 16): typed records through the
broker, evolution accepted and refused per compatibility level, deletes and
modes, each checked by the values and error codes a user would see.
"""

import os
import re
import signal
import subprocess
import time
import uuid

import pytest

sr = pytest.importorskip("confluent_kafka.schema_registry")
avro = pytest.importorskip("confluent_kafka.schema_registry.avro")

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError  # noqa: E402

CLIENT = pytest.mark.parametrize("client", ["confluent"])

USER_V1 = '{"type":"record","name":"User","namespace":"py","fields":[{"name":"name","type":"string"}]}'
USER_V2 = ('{"type":"record","name":"User","namespace":"py","fields":[{"name":"name","type":"string"},'
           '{"name":"age","type":"int","default":0}]}')
USER_BAD = ('{"type":"record","name":"User","namespace":"py","fields":[{"name":"name","type":"string"},'
            '{"name":"email","type":"string"}]}')


@pytest.fixture
def registry(samsa):
    # The first write waits for the registry's leader election (the
    # group's 3 s initial rebalance delay): more than httpx's 5 s default
    # timeout allows on a loaded machine.
    return SchemaRegistryClient({"url": samsa.registry_url(), "timeout": 60})


def error_code(call):
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return e.value.error_code


@CLIENT
@pytest.mark.feature("schema registry: Avro serializer produce+consume")
def test_avro_serde(samsa, registry, topic, client):
    samsa.create_topic(topic)
    ser = avro.AvroSerializer(registry, USER_V2)
    de = avro.AvroDeserializer(registry)
    ctx = SerializationContext(topic, MessageField.VALUE)
    users = [{"name": f"user-{i}", "age": i} for i in range(5)]
    p = Producer({"bootstrap.servers": samsa.bootstrap})
    for u in users:
        p.produce(topic, value=ser(u, ctx))
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8],
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    try:
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got.append(de(m.value(), ctx))
            if len(got) == len(users):
                break
    finally:
        c.close()
    assert got == users
    latest = registry.get_latest_version(topic + "-value")
    assert latest.version == 1 and latest.schema.schema_type == "AVRO"


@CLIENT
@pytest.mark.feature("schema registry: compatibility levels")
def test_compatibility(registry, client):
    subject = "py-compat-" + uuid.uuid4().hex[:8]
    v1 = registry.register_schema(subject, Schema(USER_V1, "AVRO"))
    v2 = registry.register_schema(subject, Schema(USER_V2, "AVRO"))
    assert v2 != v1
    assert registry.register_schema(subject, Schema(USER_V2, "AVRO")) == v2
    assert registry.test_compatibility(subject, Schema(USER_BAD, "AVRO")) is False
    assert error_code(lambda: registry.register_schema(subject, Schema(USER_BAD, "AVRO"))) == 409
    registry.set_compatibility(subject, "NONE")
    assert registry.get_compatibility(subject) == "NONE"
    registry.register_schema(subject, Schema(USER_BAD, "AVRO"))
    assert registry.get_versions(subject) == [1, 2, 3]
    assert error_code(lambda: registry.register_schema(subject, Schema("{not json", "AVRO"))) == 42201


@CLIENT
@pytest.mark.feature("schema registry: soft/hard delete and modes")
def test_delete_and_modes(registry, client):
    subject = "py-del-" + uuid.uuid4().hex[:8]
    registry.register_schema(subject, Schema(USER_V1, "AVRO"))
    assert registry.delete_subject(subject) == [1]
    assert subject not in registry.get_subjects()
    assert registry.delete_subject(subject, permanent=True) == [1]
    assert error_code(lambda: registry.get_versions(subject)) == 40401
    assert registry.update_mode(subject, "READONLY") == "READONLY"
    assert registry.get_mode(subject) == "READONLY"
    assert error_code(lambda: registry.register_schema(subject, Schema(USER_V1, "AVRO"))) == 42205


# JSON Schema: an Address subject that a Person schema references by the
# URL its $ref uses.
ADDRESS = ('{"$id":"https://example.com/address.json","type":"object",'
           '"properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}')
ADDRESS_URL = "https://example.com/address.json"
PERSON_V1 = ('{"type":"object","properties":{"name":{"type":"string"},'
             '"home":{"$ref":"https://example.com/address.json"}},'
             '"required":["name"],"additionalProperties":false}')
# Closed content model: an optional property may be added (BACKWARD) ...
PERSON_V2 = PERSON_V1.replace('"name":{"type":"string"}', '"name":{"type":"string"},"age":{"type":"integer"}')
# ... a required one may not.
PERSON_BAD = PERSON_V2.replace('"required":["name"]', '"required":["name","email"]').replace(
    '"age":{"type":"integer"}', '"age":{"type":"integer"},"email":{"type":"string"}')


def json_schema(text, refs=()):
    return Schema(text, "JSON", references=[sr.SchemaReference(n, s, v) for n, s, v in refs])


@CLIENT
@pytest.mark.feature("schema registry: JSON Schema serializer produce+consume, with a reference")
def test_json_serde(samsa, registry, topic, client):
    jsonser = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
    samsa.create_topic(topic)
    address_subject = "py-address-" + uuid.uuid4().hex[:8]
    registry.register_schema(address_subject, json_schema(ADDRESS))
    person = json_schema(PERSON_V2, [(ADDRESS_URL, address_subject, 1)])
    ser = jsonser.JSONSerializer(person, registry)
    de = jsonser.JSONDeserializer(None, schema_registry_client=registry)
    ctx = SerializationContext(topic, MessageField.VALUE)
    people = [{"name": f"p-{i}", "age": i, "home": {"city": f"city-{i}"}} for i in range(3)]
    p = Producer({"bootstrap.servers": samsa.bootstrap})
    for person_value in people:
        p.produce(topic, value=ser(person_value, ctx))
    assert p.flush(15) == 0
    # The serializer validates against the schema and its reference.
    with pytest.raises(SerializationError, match="city"):
        ser({"name": "x", "home": {"town": "nowhere"}}, ctx)
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8],
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    try:
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got.append(de(m.value(), ctx))
            if len(got) == len(people):
                break
    finally:
        c.close()
    assert got == people
    latest = registry.get_latest_version(topic + "-value")
    assert latest.version == 1 and latest.schema.schema_type == "JSON"
    assert [r.name for r in latest.schema.references] == [ADDRESS_URL]
    assert registry.get_referenced_by(address_subject, 1) == [latest.schema_id]


@CLIENT
@pytest.mark.feature("schema registry: JSON Schema compatibility levels")
def test_json_compatibility(registry, client):
    address_subject = "py-address-" + uuid.uuid4().hex[:8]
    registry.register_schema(address_subject, json_schema(ADDRESS))
    refs = [(ADDRESS_URL, address_subject, 1)]
    subject = "py-json-compat-" + uuid.uuid4().hex[:8]
    v1 = registry.register_schema(subject, json_schema(PERSON_V1, refs))
    # Whitespace and key order do not make another schema.
    assert registry.register_schema(subject, json_schema(PERSON_V1.replace(",", ", "), refs)) == v1
    v2 = registry.register_schema(subject, json_schema(PERSON_V2, refs))
    assert v2 != v1
    assert registry.test_compatibility(subject, json_schema(PERSON_BAD, refs)) is False
    assert error_code(lambda: registry.register_schema(subject, json_schema(PERSON_BAD, refs))) == 409
    # FORWARD: data of the new schema must be valid for the old one;
    # going back to v1 (no age) passes. FULL also needs the converse,
    # which v1's closed content model refuses (v2's data may hold age).
    registry.set_compatibility(subject, "FORWARD")
    assert registry.test_compatibility(subject, json_schema(PERSON_V1, refs)) is True
    registry.set_compatibility(subject, "FULL")
    assert registry.test_compatibility(subject, json_schema(PERSON_V1, refs)) is False
    registry.set_compatibility(subject, "NONE")
    registry.register_schema(subject, json_schema(PERSON_BAD, refs))
    assert registry.get_versions(subject) == [1, 2, 3]
    for bad in ('{"type":', '{"type":5}', '{"$ref":"https://example.com/nowhere.json"}'):
        assert error_code(lambda: registry.register_schema(subject, json_schema(bad))) == 42201
    assert registry.get_versions(subject) == [1, 2, 3]


@CLIENT
@pytest.mark.feature("schema registry: HTTP basic auth")
def test_basic_auth(samsa, client, tmp_path):
    # A `samsa registry` requiring basic authentication, on the same
    # cluster and _schemas as the server's (a write it does not lead is
    # forwarded with the client's credentials).
    users = tmp_path / "users.properties"
    users.write_text("alice: alice-secret,developer\n")
    log = open(tmp_path / "registry.log", "w+")
    proc = subprocess.Popen([os.environ["SAMSA_BIN"], "registry", "--bootstrap", samsa.bootstrap,
                             "--listen", "http://127.0.0.1:0", "--users-file", str(users)],
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        url = None
        for _ in range(300):
            log.seek(0)
            m = re.search(r'msg="schema registry listening" listener=(\S+)', log.read())
            if m:
                url = m.group(1)
                break
            time.sleep(0.1)
        assert url, "no registry URL in the log"
        subject = "auth-" + uuid.uuid4().hex[:8]
        anonymous = SchemaRegistryClient({"url": url, "timeout": 60})
        with pytest.raises(SchemaRegistryError) as e:
            anonymous.register_schema(subject, Schema(USER_V1, "AVRO"))
        assert e.value.http_status_code == 401 and e.value.error_code == 401
        wrong = SchemaRegistryClient({"url": url, "timeout": 60, "basic.auth.user.info": "alice:nope"})
        assert error_code(lambda: wrong.get_subjects()) == 401
        alice = SchemaRegistryClient({"url": url, "timeout": 60, "basic.auth.user.info": "alice:alice-secret"})
        sid = alice.register_schema(subject, Schema(USER_V1, "AVRO"))
        assert alice.get_latest_version(subject).schema_id == sid
        assert subject in alice.get_subjects()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        log.close()
