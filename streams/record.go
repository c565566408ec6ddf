package streams

import "time"

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one typed record flowing through a topology. Processors forward
// records downstream; a sink serializes them to a topic. Timestamp is the
// record's event time: sources take it from the Kafka record, and
// operators keep it unless they set another.
type Record[K, V any] struct {
	Key       K
	Value     V
	Timestamp time.Time
	Headers   []Header
}

// KeyValue is a key and a value, the element type FlatMap returns.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// KV builds a KeyValue.
func KV[K, V any](k K, v V) KeyValue[K, V] { return KeyValue[K, V]{k, v} }

// rec is a record between nodes: the untyped form the runtime carries.
// Typed wrappers assert Key and Value to the types their node was built
// with; the builder's generics guarantee the assertion holds.
type rec struct {
	key, value any
	ts         int64 // milliseconds since the epoch, as on the wire
	headers    []Header
}

func toRec[K, V any](r Record[K, V]) rec {
	return rec{key: r.Key, value: r.Value, ts: r.Timestamp.UnixMilli(), headers: r.Headers}
}

func fromRec[K, V any](r rec) Record[K, V] {
	var k K
	var v V
	if r.key != nil {
		k = r.key.(K)
	}
	if r.value != nil {
		v = r.value.(V)
	}
	return Record[K, V]{Key: k, Value: v, Timestamp: time.UnixMilli(r.ts), Headers: r.headers}
}
