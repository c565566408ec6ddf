// @confluentinc/schemaregistry (Confluent's JavaScript Schema Registry
// client, Avro and JSON Schema serdes) against the registry `samsa server` runs.
// Usage: node registry.cjs URL [BOOTSTRAP]. Prints one
// "feature TAB pass|fail|skip TAB note" line per check; run.sh records
// them. With BOOTSTRAP (and kcat on the PATH) Avro values serialized here
// go through the broker: produced and read back with kcat.
const sr = require("@confluentinc/schemaregistry");
const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const url = process.argv[2];
const bootstrap = process.argv[3];
const userV1 = '{"type":"record","name":"User","namespace":"js","fields":[{"name":"name","type":"string"}]}';
const userV2 = '{"type":"record","name":"User","namespace":"js","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}';
const userBad = '{"type":"record","name":"User","namespace":"js","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}';

function report(feature, ok, note = "", status = ok ? "pass" : "fail") {
  console.log(`${feature}\t${status}\t${String(note).replace(/\s+/g, " ")}`);
}

function haveKcat() {
  try {
    execFileSync("kcat", ["-V"], { stdio: "ignore" });
    return true;
  } catch (e) {
    return false;
  }
}

async function check(feature, fn) {
  try {
    const note = await fn();
    report(feature, note === true || note === undefined, note === true || note === undefined ? "" : note);
  } catch (e) {
    report(feature, false, e && e.message);
  }
}

async function errorCode(fn) {
  try {
    await fn();
  } catch (e) {
    return e.errorCode;
  }
  return 0;
}

async function main() {
  const client = new sr.SchemaRegistryClient({ baseURLs: [url], cacheCapacity: 100 });
  const suffix = Date.now().toString(36);

  await check("schema registry: Avro serializer round trip", async () => {
    const topic = "js-" + suffix;
    const id = await client.register(topic + "-value", { schemaType: "AVRO", schema: userV2 });
    // The serializer writes with the subject's latest schema.
    const ser = new sr.AvroSerializer(client, sr.SerdeType.VALUE, { autoRegisterSchemas: false, useLatestVersion: true });
    const bytes = await ser.serialize(topic, { name: "ada", age: 36 });
    if (bytes[0] !== 0 || bytes.readInt32BE(1) !== id) return `header ${bytes.subarray(0, 5).toString("hex")}, want id ${id}`;
    const de = new sr.AvroDeserializer(client, sr.SerdeType.VALUE, {});
    const got = await de.deserialize(topic, bytes);
    if (got.name !== "ada" || got.age !== 36) return `deserialized ${JSON.stringify(got)}`;
    return true;
  });

  const throughBroker = "schema registry: Avro serializer, produced and consumed with kcat";
  if (!bootstrap || !haveKcat()) {
    report(throughBroker, false, bootstrap ? "kcat not installed" : "no broker address", "skip");
  } else {
    await check(throughBroker, async () => {
      // The serializer writes with the subject's latest schema, kcat
      // produces each serialized value as one message (one file per
      // message) and reads them back raw; a deserializer with a client
      // of its own resolves the id through the registry again.
      const topic = "js-kcat-" + suffix;
      const registered = await client.register(topic + "-value", { schemaType: "AVRO", schema: userV2 });
      const ser = new sr.AvroSerializer(client, sr.SerdeType.VALUE, { autoRegisterSchemas: false, useLatestVersion: true });
      const users = [{ name: "ada", age: 36 }, { name: "grace", age: 45 }, { name: "line\nbreak", age: 0 }];
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "js-kcat-"));
      const files = [];
      let id = 0;
      for (const [i, u] of users.entries()) {
        const bytes = await ser.serialize(topic, u);
        id = bytes.readInt32BE(1);
        files.push(path.join(dir, `m${i}`));
        fs.writeFileSync(files[i], bytes);
      }
      execFileSync("kcat", ["-P", "-b", bootstrap, "-t", topic, ...files], { timeout: 30000 });
      const read = [];
      for (let offset = 0; offset < users.length; offset++) {
        read.push(execFileSync("kcat", ["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", String(offset),
          "-c", "1", "-e", "-f", "%s"], { timeout: 30000 }));
      }
      fs.rmSync(dir, { recursive: true });
      const de = new sr.AvroDeserializer(new sr.SchemaRegistryClient({ baseURLs: [url] }), sr.SerdeType.VALUE, {});
      const got = [];
      for (const b of read) {
        if (b[0] !== 0 || b.readInt32BE(1) !== id) return `read back header ${b.subarray(0, 5).toString("hex")}, want id ${id}`;
        got.push(await de.deserialize(topic, b));
      }
      if (JSON.stringify(got) !== JSON.stringify(users)) return `read back ${JSON.stringify(got)}`;
      return registered === id || `registered id ${registered}, the messages carry ${id}`;
    });
  }

  await check("schema registry: contexts (Avro serde under a qualified subject)", async () => {
    // A fresh context: its first schema is id 1 of that context. The
    // serializer and a deserializer with a client of its own name the
    // subject through a strategy qualifying it with the context, and the
    // deserializer's id lookup passes that subject.
    const context = ".js" + suffix;
    const strategy = (topic) => `:${context}:${topic}-value`;
    const topic = "js-ctx-" + suffix;
    const id = await client.register(strategy(topic), { schemaType: "AVRO", schema: userV2 });
    if (id !== 1) return `first id of ${context}: ${id}, want 1`;
    const ser = new sr.AvroSerializer(client, sr.SerdeType.VALUE,
      { autoRegisterSchemas: false, useLatestVersion: true, subjectNameStrategy: strategy });
    const bytes = await ser.serialize(topic, { name: "ada", age: 36 });
    if (bytes.readInt32BE(1) !== 1) return `serialized with id ${bytes.readInt32BE(1)}, want 1`;
    const de = new sr.AvroDeserializer(new sr.SchemaRegistryClient({ baseURLs: [url] }), sr.SerdeType.VALUE,
      { subjectNameStrategy: strategy });
    const got = await de.deserialize(topic, bytes);
    if (got.name !== "ada" || got.age !== 36) return `deserialized ${JSON.stringify(got)}`;
    const res = await fetch(`${url}/contexts`);
    const contexts = await res.json();
    return contexts.includes(context) || `contexts ${JSON.stringify(contexts)} without ${context}`;
  });

  await check("schema registry: JSON Schema serializer round trip", async () => {
    const topic = "js-json-" + suffix;
    const schema = '{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"],"additionalProperties":false}';
    const id = await client.register(topic + "-value", { schemaType: "JSON", schema });
    const ser = new sr.JsonSerializer(client, sr.SerdeType.VALUE, { autoRegisterSchemas: false, useLatestVersion: true, validate: true });
    const bytes = await ser.serialize(topic, { name: "ada", age: 36 });
    if (bytes[0] !== 0 || bytes.readInt32BE(1) !== id) return `header ${bytes.subarray(0, 5).toString("hex")}, want id ${id}`;
    const de = new sr.JsonDeserializer(client, sr.SerdeType.VALUE, {});
    const got = await de.deserialize(topic, bytes);
    if (got.name !== "ada" || got.age !== 36) return `deserialized ${JSON.stringify(got)}`;
    // The serializer validates against the registered schema.
    let refused = false;
    try {
      await ser.serialize(topic, { name: "ada", email: "a@b" });
    } catch (e) {
      refused = true;
    }
    return refused || "an object outside the closed schema was serialized";
  });

  await check("schema registry: compatibility levels", async () => {
    const subject = "js-compat-" + suffix;
    const v1 = await client.register(subject, { schemaType: "AVRO", schema: userV1 });
    const v2 = await client.register(subject, { schemaType: "AVRO", schema: userV2 });
    if (v1 === v2) return `same id ${v1} for two schemas`;
    if (await client.testCompatibility(subject, -1, { schemaType: "AVRO", schema: userBad })) return "incompatible schema reported compatible";
    const code = await errorCode(() => client.register(subject, { schemaType: "AVRO", schema: userBad }));
    if (code !== 409) return `incompatible registration: error code ${code}, want 409`;
    await client.updateCompatibility(subject, "NONE");
    await client.register(subject, { schemaType: "AVRO", schema: userBad });
    const latest = await client.getLatestSchemaMetadata(subject);
    return latest.version === 3 || `latest version ${latest.version}, want 3`;
  });

  await check("schema registry: soft/hard delete", async () => {
    const subject = "js-del-" + suffix;
    await client.register(subject, { schemaType: "AVRO", schema: userV1 });
    const soft = await client.deleteSubject(subject, false);
    const hard = await client.deleteSubject(subject, true);
    if (JSON.stringify(soft) !== "[1]" || JSON.stringify(hard) !== "[1]") return `deleted ${soft} then ${hard}`;
    const code = await errorCode(() => client.getLatestSchemaMetadata(subject));
    return code === 40401 || `after delete: error code ${code}, want 40401`;
  });
}

main().catch((e) => {
  report("schema registry: client", false, e && e.message);
});
