package connector

import "context"

// Connector is what source and sink connectors share. The worker calls
// Start with the connector's config, TaskConfigs to split the work into
// at most maxTasks tasks, and Stop.
type Connector interface {
	Version() string
	Config() ConfigDef
	Start(props map[string]string) error
	TaskConfigs(maxTasks int) ([]map[string]string, error)
	Stop() error
}

// SourceConnector produces records into Kafka through its SourceTasks.
type SourceConnector interface {
	Connector
	NewTask() SourceTask
}

// SinkConnector writes records from Kafka through its SinkTasks.
type SinkConnector interface {
	Connector
	NewTask() SinkTask
}

// OffsetReader reads the offsets the worker committed for a source
// partition (nil when none), so a task resumes where it stopped.
type OffsetReader interface {
	Offset(partition map[string]any) map[string]any
}

// SourceTask copies records from a system into Kafka.
type SourceTask interface {
	Start(offsets OffsetReader, props map[string]string) error
	// Poll returns the next records; it may block until ctx ends and
	// may return none. An error fails the task.
	Poll(ctx context.Context) ([]*Record, error)
	// Commit is called after the offsets of all records returned so far
	// were stored.
	Commit() error
	Stop() error
}

// SinkTask copies records from Kafka into a system.
type SinkTask interface {
	Start(props map[string]string) error
	// Put hands over records; it may buffer them until Flush.
	Put(records []*Record) error
	// Flush makes every record given to Put durable; the worker commits
	// the consumer offsets (the next offset to read per partition) only
	// after Flush returns nil.
	Flush(offsets map[TopicPartition]int64) error
	Stop() error
}
