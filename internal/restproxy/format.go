package restproxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// A format is one of Confluent's embedded data formats: how a request's
// JSON key or value becomes record bytes, and how record bytes are
// answered as JSON. A schema format adds itself here with an encode that
// resolves the request's schema first.
type format struct {
	name string
	// encode turns one key or value of a request into record bytes; JSON
	// null is a null key or value.
	encode func(v json.RawMessage) ([]byte, error)
	// decode answers record bytes as JSON (nil bytes answer null).
	decode func(b []byte) (json.RawMessage, error)
}

// formats by the name in the content type (application/vnd.kafka.NAME.v2+json)
// and a consumer instance's "format".
var formats = map[string]*format{
	"binary": {name: "binary", encode: encodeBinary, decode: decodeBinary},
	"json":   {name: "json", encode: encodeJSON, decode: decodeJSON},
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
