package streams

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Serde turns values of type T into record bytes and back. The topic is the
// one the bytes are written to or read from (registry-backed serdes use it
// for the subject name).
//
// A nil byte slice is Kafka's null: Deserialize(nil) must return the zero
// value without error.
type Serde[T any] interface {
	Serialize(topic string, v T) ([]byte, error)
	Deserialize(topic string, b []byte) (T, error)
}

// SerdeFuncs makes a Serde out of two functions.
type SerdeFuncs[T any] struct {
	Ser   func(topic string, v T) ([]byte, error)
	Deser func(topic string, b []byte) (T, error)
}

// Serialize calls Ser.
func (s SerdeFuncs[T]) Serialize(topic string, v T) ([]byte, error) { return s.Ser(topic, v) }

// Deserialize calls Deser.
func (s SerdeFuncs[T]) Deserialize(topic string, b []byte) (T, error) { return s.Deser(topic, b) }

// Bytes passes bytes through unchanged (Kafka's ByteArraySerde).
func Bytes() Serde[[]byte] {
	return SerdeFuncs[[]byte]{
		Ser:   func(_ string, v []byte) ([]byte, error) { return v, nil },
		Deser: func(_ string, b []byte) ([]byte, error) { return b, nil },
	}
}

// String is UTF-8 text (Kafka's StringSerde). Null reads as "".
func String() Serde[string] {
	return SerdeFuncs[string]{
		Ser:   func(_ string, v string) ([]byte, error) { return []byte(v), nil },
		Deser: func(_ string, b []byte) (string, error) { return string(b), nil },
	}
}

// Int32 is a 4-byte big-endian integer (Kafka's IntegerSerde). Null reads as 0.
func Int32() Serde[int32] {
	return SerdeFuncs[int32]{
		Ser: func(_ string, v int32) ([]byte, error) { return binary.BigEndian.AppendUint32(nil, uint32(v)), nil },
		Deser: func(topic string, b []byte) (int32, error) {
			if b == nil {
				return 0, nil
			}
			if len(b) != 4 {
				return 0, fmt.Errorf("int32 serde: %d bytes from topic %q, want 4", len(b), topic)
			}
			return int32(binary.BigEndian.Uint32(b)), nil
		},
	}
}

// Int64 is an 8-byte big-endian integer (Kafka's LongSerde). Null reads as 0.
func Int64() Serde[int64] {
	return SerdeFuncs[int64]{
		Ser: func(_ string, v int64) ([]byte, error) { return binary.BigEndian.AppendUint64(nil, uint64(v)), nil },
		Deser: func(topic string, b []byte) (int64, error) {
			if b == nil {
				return 0, nil
			}
			if len(b) != 8 {
				return 0, fmt.Errorf("int64 serde: %d bytes from topic %q, want 8", len(b), topic)
			}
			return int64(binary.BigEndian.Uint64(b)), nil
		},
	}
}

// JSON encodes T with encoding/json. Null reads as the zero T.
func JSON[T any]() Serde[T] {
	return SerdeFuncs[T]{
		Ser: func(_ string, v T) ([]byte, error) { return json.Marshal(v) },
		Deser: func(topic string, b []byte) (T, error) {
			var v T
			if b == nil {
				return v, nil
			}
			if err := json.Unmarshal(b, &v); err != nil {
				return v, fmt.Errorf("json serde: topic %q: %w", topic, err)
			}
			return v, nil
		},
	}
}
