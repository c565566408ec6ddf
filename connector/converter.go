package connector

import (
	"fmt"
	"strings"
)

// Converter turns Connect data into the bytes of a Kafka record's key or
// value and back (Kafka's org.apache.kafka.connect.storage.Converter).
type Converter interface {
	// Configure gets the converter's own keys (key.converter.* or
	// value.converter.* with the prefix cut).
	Configure(props map[string]string, isKey bool) error
	FromConnect(topic string, s *Schema, v any) ([]byte, error)
	ToConnect(topic string, b []byte) (*Schema, any, error)
}

// NewConverter returns the converter a class name or short alias names:
// org.apache.kafka.connect.storage.StringConverter,
// org.apache.kafka.connect.converters.ByteArrayConverter,
// org.apache.kafka.connect.json.JsonConverter.
func NewConverter(class string) (Converter, error) {
	switch shortName(class) {
	case "StringConverter":
		return &StringConverter{}, nil
	case "ByteArrayConverter":
		return &ByteArrayConverter{}, nil
	case "JsonConverter":
		return &JsonConverter{SchemasEnable: true}, nil
	}
	return nil, fmt.Errorf("class %s could not be found", class)
}

func shortName(class string) string {
	if i := strings.LastIndexByte(class, '.'); i >= 0 {
		return class[i+1:]
	}
	return class
}

// StringConverter writes values as UTF-8 text (Kafka's
// StringConverter); it reads any bytes back as an optional string.
type StringConverter struct{}

// Configure accepts converter.encoding=UTF8 only.
func (*StringConverter) Configure(props map[string]string, _ bool) error {
	for _, k := range []string{"converter.encoding", "serializer.encoding", "deserializer.encoding"} {
		if e, ok := props[k]; ok && !strings.EqualFold(strings.ReplaceAll(e, "-", ""), "utf8") {
			return fmt.Errorf("%s=%s: only UTF8 is supported", k, e)
		}
	}
	return nil
}

// FromConnect writes v's string form.
func (*StringConverter) FromConnect(_ string, _ *Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	}
	return []byte(fmt.Sprint(v)), nil
}

// ToConnect reads b as an optional string.
func (*StringConverter) ToConnect(_ string, b []byte) (*Schema, any, error) {
	if b == nil {
		return OptionalStringSchema, nil, nil
	}
	return OptionalStringSchema, string(b), nil
}

// ByteArrayConverter passes bytes through (Kafka's ByteArrayConverter).
type ByteArrayConverter struct{}

// Configure has nothing to configure.
func (*ByteArrayConverter) Configure(map[string]string, bool) error { return nil }

// FromConnect accepts bytes only.
func (*ByteArrayConverter) FromConnect(_ string, s *Schema, v any) ([]byte, error) {
	if s != nil && s.Type != Bytes {
		return nil, fmt.Errorf("invalid schema type for ByteArrayConverter: %s", s.Type)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	}
	return nil, fmt.Errorf("ByteArrayConverter is not compatible with objects of type %T", v)
}

// ToConnect returns b as optional bytes.
func (*ByteArrayConverter) ToConnect(_ string, b []byte) (*Schema, any, error) {
	if b == nil {
		return OptionalBytesSchema, nil, nil
	}
	return OptionalBytesSchema, b, nil
}
