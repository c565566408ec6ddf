"""confluent-kafka's SchemaRegistryClient against the Schema Registry that
`samsa server` runs (issue 16): soft and hard deletes of versions and
subjects, READONLY and IMPORT modes, for Protobuf and JSON Schema (the Avro
cases are in test_schema_registry.py). Each step is checked by the values and
Confluent error codes a user would see.
"""

import json
import random
import uuid

import pytest

sr = pytest.importorskip("confluent_kafka.schema_registry")
requests = pytest.importorskip("requests")

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402

CLIENT = pytest.mark.parametrize("client", ["confluent"])

# Three versions of one schema in each format, each backward compatible
# with the one before (JSON Schema: a closed content model, to which an
# optional property may be added).
SCHEMAS = {
    "PROTOBUF": (
        'syntax = "proto3";\npackage pymodes;\nmessage User {\n  string name = 1;\n}\n',
        'syntax = "proto3";\npackage pymodes;\nmessage User {\n  string name = 1;\n  int64 age = 2;\n}\n',
        'syntax = "proto3";\npackage pymodes;\nmessage User {\n  string name = 1;\n  int64 age = 2;\n  bool ok = 3;\n}\n',
    ),
    "JSON": (
        '{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}',
        '{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"],'
        '"additionalProperties":false}',
        '{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"}},'
        '"required":["name"],"additionalProperties":false}',
    ),
}
FORMATS = pytest.mark.parametrize("schema_type", sorted(SCHEMAS))


@pytest.fixture
def registry(samsa):
    return SchemaRegistryClient({"url": samsa.registry_url(), "timeout": 60})


def uncached(samsa):
    """A client with nothing cached: the client caches schemas by id, and
    these tests need the registry's own answer after a delete."""
    return SchemaRegistryClient({"url": samsa.registry_url(), "timeout": 60})


def error_code(call):
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return e.value.error_code


def post_version(url, subject, body):
    """POST /subjects/{subject}/versions with a body the client cannot send
    (an explicit id and version); returns the status and the decoded answer."""
    r = requests.post(f"{url}/subjects/{subject}/versions", data=json.dumps(body),
                      headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}, timeout=60)
    return r.status_code, r.json()


@CLIENT
@FORMATS
@pytest.mark.feature("schema registry: soft/hard delete", param="schema_type")
def test_delete(samsa, registry, client, schema_type):
    v1, v2, _ = SCHEMAS[schema_type]
    subject = f"py-del-{schema_type.lower()}-" + uuid.uuid4().hex[:8]
    id1 = registry.register_schema(subject, Schema(v1, schema_type))
    id2 = registry.register_schema(subject, Schema(v2, schema_type))
    assert registry.get_versions(subject) == [1, 2]

    # A soft-deleted version is gone from the subject but still resolvable
    # by id; deleting it again is 40406, permanently deleting a live one 40407.
    assert registry.delete_version(subject, 1) == 1
    assert registry.get_versions(subject) == [2]
    assert error_code(lambda: registry.get_version(subject, 1)) == 40402
    assert uncached(samsa).get_schema(id1).schema_type == schema_type
    assert error_code(lambda: registry.delete_version(subject, 1)) == 40406
    assert error_code(lambda: registry.delete_version(subject, 2, permanent=True)) == 40407
    assert registry.delete_version(subject, 1, permanent=True) == 1
    assert error_code(lambda: uncached(samsa).get_schema(id1)) == 40403

    # The subject: soft, then hard; the ids of its schemas go with it.
    assert error_code(lambda: registry.delete_subject(subject, permanent=True)) == 40405
    assert registry.delete_subject(subject) == [2]
    assert subject not in registry.get_subjects()
    assert error_code(lambda: registry.delete_subject(subject)) == 40404
    assert uncached(samsa).get_schema(id2).schema_type == schema_type
    assert registry.delete_subject(subject, permanent=True) == [2]
    assert error_code(lambda: registry.get_versions(subject)) == 40401
    assert error_code(lambda: uncached(samsa).get_schema(id2)) == 40403

    # Registering again starts the subject over at version 1.
    registry.register_schema(subject, Schema(v1, schema_type))
    assert registry.get_versions(subject) == [1]


@CLIENT
@FORMATS
@pytest.mark.feature("schema registry: READONLY mode", param="schema_type")
def test_readonly(registry, client, schema_type):
    v1, v2, _ = SCHEMAS[schema_type]
    subject = f"py-ro-{schema_type.lower()}-" + uuid.uuid4().hex[:8]
    registry.register_schema(subject, Schema(v1, schema_type))
    assert registry.update_mode(subject, "READONLY") == "READONLY"
    assert registry.get_mode(subject) == "READONLY"
    # Writes are refused with 42205 and change nothing; reads still work.
    assert error_code(lambda: registry.register_schema(subject, Schema(v2, schema_type))) == 42205
    assert error_code(lambda: registry.delete_subject(subject)) == 42205
    assert registry.get_versions(subject) == [1]
    assert registry.get_latest_version(subject).schema.schema_type == schema_type
    assert registry.update_mode(subject, "READWRITE") == "READWRITE"
    registry.register_schema(subject, Schema(v2, schema_type))
    assert registry.get_versions(subject) == [1, 2]


@CLIENT
@FORMATS
@pytest.mark.feature("schema registry: IMPORT mode with explicit ids", param="schema_type")
def test_import(samsa, registry, client, schema_type):
    v1, v2, v3 = SCHEMAS[schema_type]
    url = samsa.registry_url()
    subject = f"py-import-{schema_type.lower()}-" + uuid.uuid4().hex[:8]
    # Outside IMPORT mode an explicit id is refused.
    status, body = post_version(url, subject, {"schema": v1, "schemaType": schema_type, "id": 1_000_000, "version": 1})
    assert (status, body["error_code"]) == (422, 42205)

    # Ids far above anything the other tests allocate, different per run.
    first = random.randrange(2_000_000, 3_000_000)
    assert registry.update_mode(subject, "IMPORT") == "IMPORT"
    status, body = post_version(url, subject, {"schema": v1, "schemaType": schema_type, "id": first, "version": 3})
    assert (status, body) == (200, {"id": first})
    status, body = post_version(url, subject, {"schema": v2, "schemaType": schema_type, "id": first + 5, "version": 7})
    assert (status, body) == (200, {"id": first + 5})
    assert registry.get_versions(subject) == [3, 7]
    latest = registry.get_latest_version(subject)
    assert (latest.schema_id, latest.version, latest.schema.schema_type) == (first + 5, 7, schema_type)
    assert registry.get_schema(first).schema_type == schema_type
    # A taken id may not name another schema: 42207.
    other = f"{subject}-other"
    assert registry.update_mode(other, "IMPORT") == "IMPORT"
    status, body = post_version(url, other, {"schema": v2, "schemaType": schema_type, "id": first, "version": 1})
    assert (status, body["error_code"]) == (422, 42207)

    # Back in READWRITE, new schemas get ids above the imported ones.
    assert registry.update_mode(subject, "READWRITE") == "READWRITE"
    new_id = registry.register_schema(subject, Schema(v3, schema_type))
    assert new_id > first + 5
    assert registry.get_versions(subject) == [3, 7, 8]


ORDER = ('{"type":"record","name":"Order","namespace":"pyctx","fields":[{"name":"id","type":"long"},'
         '{"name":"item","type":"string"}]}')


@CLIENT
@pytest.mark.feature("schema registry: contexts (Avro serde under a qualified subject)")
def test_context_serde(samsa, registry, topic, client):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.schema_registry import avro
    from confluent_kafka.serialization import MessageField, SerializationContext

    # A fresh context: its first schema gets id 1 of that context, whatever
    # id 1 of the default context is. The serializer registers under the
    # qualified subject; the deserializer asks for the id with that subject,
    # so the registry resolves it in the context.
    context = ".py" + uuid.uuid4().hex[:8]

    def strategy(ctx, record_name):
        return f":{context}:{ctx.topic}-value"

    samsa.create_topic(topic)
    ser = avro.AvroSerializer(registry, ORDER, conf={"subject.name.strategy": strategy})
    de = avro.AvroDeserializer(registry, conf={"subject.name.strategy": strategy})
    sctx = SerializationContext(topic, MessageField.VALUE)
    orders = [{"id": i, "item": f"item-{i}"} for i in range(3)]
    p = Producer({"bootstrap.servers": samsa.bootstrap})
    for o in orders:
        p.produce(topic, value=ser(o, sctx))
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8],
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, ids = [], set()
    try:
        for _ in range(300):
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                ids.add(int.from_bytes(m.value()[1:5], "big"))
                got.append(de(m.value(), sctx))
            if len(got) == len(orders):
                break
    finally:
        c.close()
    assert got == orders
    assert ids == {1}
    subject = f":{context}:{topic}-value"
    assert registry.get_latest_version(subject).schema_id == 1
    assert context in registry.get_contexts()
    assert subject in registry.get_subjects()
    fresh = uncached(samsa)
    assert fresh.get_schema(1, subject_name=subject).schema_str == ORDER
