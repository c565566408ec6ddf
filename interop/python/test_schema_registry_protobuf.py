"""confluent-kafka's Protobuf serdes against the Schema Registry that
`samsa server` runs (issue 16): typed records through the broker with an
import registered as a reference, evolution accepted and refused per
compatibility level. The message classes are built from descriptors at run
time, so no protoc is needed.
"""

import uuid

import pytest

sr = pytest.importorskip("confluent_kafka.schema_registry")
pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

CLIENT = pytest.mark.parametrize("client", ["confluent"])
F = descriptor_pb2.FieldDescriptorProto


@pytest.fixture
def registry(samsa):
    return SchemaRegistryClient({"url": samsa.registry_url(), "timeout": 60})


def file_proto(name, package, deps, message, fields):
    """A proto3 file holding one message; fields are (name, number, type, type_name)."""
    f = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3", dependency=deps)
    m = f.message_type.add(name=message)
    for fname, num, typ, type_name in fields:
        m.field.add(name=fname, number=num, type=typ, type_name=type_name, label=F.LABEL_OPTIONAL)
    return f


@CLIENT
@pytest.mark.feature("schema registry: Protobuf serializer produce+consume, import as reference")
def test_protobuf_serde(samsa, registry, topic, client):
    samsa.create_topic(topic)
    tag = uuid.uuid4().hex[:8]
    address = file_proto(f"geo{tag}/address.proto", "py.geo", [], "Address", [("city", 1, F.TYPE_STRING, None)])
    user = file_proto(f"app{tag}/user.proto", "py.app", [address.name], "User", [
        ("name", 1, F.TYPE_STRING, None), ("home", 2, F.TYPE_MESSAGE, ".py.geo.Address"), ("age", 3, F.TYPE_INT32, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(address)
    pool.Add(user)
    User = message_factory.GetMessageClass(pool.FindMessageTypeByName("py.app.User"))

    ser = pb.ProtobufSerializer(User, registry)
    de = pb.ProtobufDeserializer(User, {}, registry)
    ctx = SerializationContext(topic, MessageField.VALUE)
    users = [User(name=f"user-{i}", age=i, home={"city": f"city-{i}"}) for i in range(3)]
    p = Producer({"bootstrap.servers": samsa.bootstrap})
    for u in users:
        p.produce(topic, value=ser(u, ctx))
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": samsa.bootstrap, "group.id": "g-" + tag, "auto.offset.reset": "earliest"})
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
    assert latest.version == 1 and latest.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject) for r in latest.schema.references] == [(address.name, address.name)]


USER_V1 = 'syntax = "proto3";\npackage py;\nmessage User {\n  string name = 1;\n}\n'
USER_V2 = 'syntax = "proto3";\npackage py;\nmessage User {\n  string name = 1;\n  int64 age = 2;\n}\n'
USER_BAD = 'syntax = "proto3";\npackage py;\nmessage User {\n  string name = 1;\n  string age = 2;\n}\n'


@CLIENT
@pytest.mark.feature("schema registry: Protobuf compatibility levels")
def test_protobuf_compatibility(registry, client):
    subject = "py-pb-" + uuid.uuid4().hex[:8]
    v1 = registry.register_schema(subject, Schema(USER_V1, "PROTOBUF"))
    v2 = registry.register_schema(subject, Schema(USER_V2, "PROTOBUF"))
    assert v2 != v1
    assert registry.register_schema(subject, Schema(USER_V2.replace("\n", " \n"), "PROTOBUF")) == v2
    assert registry.test_compatibility(subject, Schema(USER_BAD, "PROTOBUF")) is False
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema(subject, Schema(USER_BAD, "PROTOBUF"))
    assert e.value.error_code == 409 and "FIELD_SCALAR_KIND_CHANGED" in e.value.error_message
    registry.set_compatibility(subject, "NONE")
    registry.register_schema(subject, Schema(USER_BAD, "PROTOBUF"))
    assert registry.get_versions(subject) == [1, 2, 3]
    with pytest.raises(SchemaRegistryError) as e:
        registry.register_schema(subject, Schema('syntax = "proto3"; message M { Nope n = 1; }', "PROTOBUF"))
    assert e.value.error_code == 42201
