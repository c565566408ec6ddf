package connector

import "time"

// Header is one record header; the value is carried as bytes.
type Header struct {
	Key   string
	Value []byte
}

// Record is a source or sink record. Sources fill Topic, the key and value
// with their schemas, and SourcePartition/SourceOffset (each a
// JSON-serializable map: the worker stores them in the offset topic).
// Sinks receive Topic, Partition and Offset of the Kafka record as well.
type Record struct {
	Topic       string
	Partition   int32 // -1: let the producer choose
	KeySchema   *Schema
	Key         any
	ValueSchema *Schema
	Value       any
	Timestamp   time.Time
	Headers     []Header

	SourcePartition map[string]any
	SourceOffset    map[string]any

	Offset int64 // sink records: the record's offset in its partition
}

// Clone returns a shallow copy, for transforms that change fields.
func (r *Record) Clone() *Record {
	c := *r
	c.Headers = append([]Header(nil), r.Headers...)
	return &c
}

// TopicPartition names a partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}
