package restproxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
)

// A format is one of Confluent's embedded data formats: how a request's
// JSON keys and values become record bytes, and how record bytes are
// answered as JSON. Schema formats (avro.go) resolve the request's schema
// (key_schema/value_schema text, registered, or key_schema_id/
// value_schema_id) through the Schema Registry: avro (avro.go),
// jsonschema and protobuf (schemaformats.go).
type format struct {
	name string
	// codec prepares the encoding of a produce request's keys (isKey) or
	// values; schema and id are the request's key_schema(_id) or
	// value_schema(_id), subject the registry subject (TopicNameStrategy).
	codec func(ctx context.Context, p *Proxy, subject string, isKey bool, schema *string, id *int) (codec, error)
	// decode answers record bytes as JSON (nil bytes answer null).
	decode func(ctx context.Context, p *Proxy, b []byte) (json.RawMessage, error)
}

// codec encodes one key or value; JSON null is a null key or value.
// schemaID is answered as key_schema_id or value_schema_id (nil for
// schemaless formats).
type codec struct {
	schemaID *int
	encode   func(v json.RawMessage) ([]byte, error)
}

// formats by the name in the content type (application/vnd.kafka.NAME.v2+json)
// and a consumer instance's "format".
var formats = map[string]*format{
	"binary":     {name: "binary", codec: plain(encodeBinary), decode: ignoreCtx(decodeBinary)},
	"json":       {name: "json", codec: plain(encodeJSON), decode: ignoreCtx(decodeJSON)},
	"avro":       {name: "avro", codec: avroCodec, decode: decodeAvro},
	"jsonschema": {name: "jsonschema", codec: kindCodec(jsonSchemaKind), decode: kindDecode(jsonSchemaKind)},
	"protobuf":   {name: "protobuf", codec: kindCodec(protobufKind), decode: kindDecode(protobufKind)},
}

func plain(enc func(json.RawMessage) ([]byte, error)) func(context.Context, *Proxy, string, bool, *string, *int) (codec, error) {
	return func(context.Context, *Proxy, string, bool, *string, *int) (codec, error) {
		return codec{encode: enc}, nil
	}
}

func ignoreCtx(dec func([]byte) (json.RawMessage, error)) func(context.Context, *Proxy, []byte) (json.RawMessage, error) {
	return func(_ context.Context, _ *Proxy, b []byte) (json.RawMessage, error) { return dec(b) }
}

func isNull(v json.RawMessage) bool {
	return len(v) == 0 || bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func encodeBinary(v json.RawMessage) ([]byte, error) {
	if isNull(v) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, errf(422, 422, "binary data must be a base64 string: %v", err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errf(422, 422, "binary data is not base64: %v", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func decodeBinary(b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

func encodeJSON(v json.RawMessage) ([]byte, error) {
	if isNull(v) {
		return nil, nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, v); err != nil {
		return nil, errf(422, 422, "invalid JSON data: %v", err)
	}
	return out.Bytes(), nil
}

func decodeJSON(b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(b) {
		return nil, errf(500, 50002, "record data is not JSON; consume it with the binary format")
	}
	return json.RawMessage(b), nil
}
