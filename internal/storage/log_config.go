package storage

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Kafka's topic-level log settings.
const (
	DefaultSegmentBytes       = 1 << 30                                      // segment.bytes / log.segment.bytes
	DefaultSegmentMs          = 7 * 24 * time.Hour                           // segment.ms / log.roll.ms
	DefaultSegmentIndexBytes  = 10 << 20                                     // segment.index.bytes
	DefaultIndexIntervalBytes = 4096                                         // index.interval.bytes
	DefaultRetentionMs        = int64(7 * 24 * time.Hour / time.Millisecond) // retention.ms
	noFlush                   = math.MaxInt64
)

// LogConfig holds the settings of one partition log, named after Kafka's
// topic-level configs. A zero field means "Kafka's default", so LogConfig{}
// is a valid configuration.
type LogConfig struct {
	// SegmentBytes (segment.bytes) is the size at which the active segment is
	// rolled: an append that would make it larger goes to a new segment.
	// Default 1 GiB. A segment may exceed it only when it holds a single
	// append larger than this.
	SegmentBytes int64

	// SegmentMs (segment.ms) rolls the active segment once its first batch is
	// this much older than the batch being appended (by record timestamps,
	// as Kafka does) or, for segments without timestamps, once this much
	// time has passed since the segment was created (by Now). Default 7 days.
	SegmentMs time.Duration

	// SegmentIndexBytes (segment.index.bytes) is the preallocated size of
	// each index file of the active segment; a full index also rolls the
	// segment. Default 10 MiB.
	SegmentIndexBytes int

	// IndexIntervalBytes (index.interval.bytes) is how many log bytes pass
	// between two index entries. Default 4096.
	IndexIntervalBytes int

	// FlushMessages (flush.messages) forces an fsync once this many offsets
	// are appended but not flushed. Default math.MaxInt64: never, leaving
	// durability to replication and the page cache, as Kafka does.
	FlushMessages int64

	// FlushMs (flush.ms, milliseconds) forces an fsync once the last one is
	// this old, checked on append and by LogManager. Default math.MaxInt64.
	FlushMs int64

	// RetentionMs (retention.ms) and RetentionBytes (retention.bytes) are
	// carried for the retention task; this package does not enforce them
	// yet. Defaults 7 days and -1 (unlimited). A zero RetentionBytes means
	// the default, so use -1 explicitly only for clarity.
	RetentionMs    int64
	RetentionBytes int64

	// Now is the clock used for segment.ms and flush.ms. Default time.Now.
	Now func() time.Time
}

// DefaultLogConfig returns Kafka's defaults, all fields filled in.
func DefaultLogConfig() LogConfig { return LogConfig{}.withDefaults() }

// withDefaults fills zero fields with Kafka's defaults.
func (c LogConfig) withDefaults() LogConfig {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMs == 0 {
		c.SegmentMs = DefaultSegmentMs
	}
	if c.SegmentIndexBytes == 0 {
		c.SegmentIndexBytes = DefaultSegmentIndexBytes
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.FlushMessages == 0 {
		c.FlushMessages = noFlush
	}
	if c.FlushMs == 0 {
		c.FlushMs = noFlush
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = DefaultRetentionMs
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports the first invalid field, named by its Kafka config key.
// Kafka's own lower bounds apply: segment.bytes >= 14 (one empty batch
// header would not fit below that) and segment.index.bytes >= 12 (one
// time-index entry).
func (c LogConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.SegmentBytes < 14 || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("invalid value %d for segment.bytes: want 14..%d", c.SegmentBytes, math.MaxInt32)
	case c.SegmentMs < time.Millisecond:
		return fmt.Errorf("invalid value %v for segment.ms: want at least 1 ms", c.SegmentMs)
	case c.SegmentIndexBytes < timeIndexEntrySize:
		return fmt.Errorf("invalid value %d for segment.index.bytes: want at least %d", c.SegmentIndexBytes, timeIndexEntrySize)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("invalid value %d for index.interval.bytes: want >= 0", c.IndexIntervalBytes)
	case c.FlushMessages < 1:
		return fmt.Errorf("invalid value %d for flush.messages: want >= 1", c.FlushMessages)
	case c.FlushMs < 0:
		return fmt.Errorf("invalid value %d for flush.ms: want >= 0", c.FlushMs)
	case c.RetentionMs < -1:
		return fmt.Errorf("invalid value %d for retention.ms: want >= -1", c.RetentionMs)
	}
	return nil
}
