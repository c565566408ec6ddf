package storage

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Defaults of Kafka's topic-level log settings.
const (
	DefaultSegmentBytes       = 1 << 30                                      // segment.bytes / log.segment.bytes
	DefaultSegmentMs          = 7 * 24 * time.Hour                           // segment.ms / log.roll.ms
	DefaultSegmentIndexBytes  = 10 << 20                                     // segment.index.bytes
	DefaultIndexIntervalBytes = 4096                                         // index.interval.bytes
	DefaultRetentionMs        = int64(7 * 24 * time.Hour / time.Millisecond) // retention.ms
	DefaultFileDeleteDelayMs  = 60_000                                       // file.delete.delay.ms
	DefaultDeleteRetentionMs  = int64(24 * time.Hour / time.Millisecond)     // delete.retention.ms
	DefaultMinCleanableRatio  = 0.5                                          // min.cleanable.dirty.ratio
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

	// RetentionMs (retention.ms) and RetentionBytes (retention.bytes) bound
	// a log whose CleanupPolicy includes delete: the retention task deletes
	// whole segments whose largest timestamp is older than RetentionMs, and
	// the oldest segments while the log is larger than RetentionBytes.
	// Defaults 7 days and -1; -1 means unlimited for both. A zero
	// RetentionBytes means the default, so use -1 explicitly only for
	// clarity.
	RetentionMs    int64
	RetentionBytes int64

	// CleanupPolicy (cleanup.policy) is delete, compact or both. Zero means
	// Kafka's default, delete.
	CleanupPolicy CleanupPolicy

	// FileDeleteDelayMs (file.delete.delay.ms) is how long a deleted
	// segment's files stay on disk, renamed to *.deleted, before they are
	// removed. Default 60000.
	FileDeleteDelayMs int64

	// DeleteRetentionMs (delete.retention.ms) is how long the cleaner keeps
	// a tombstone after it first rewrote the batch holding it, so that
	// consumers reading from the start see the deletion. Default 1 day.
	DeleteRetentionMs int64

	// MinCleanableDirtyRatio (min.cleanable.dirty.ratio) is the share of
	// uncleaned bytes a compacted log needs before the cleaner picks it.
	// Default 0.5; zero means the default, so use a tiny positive value
	// to clean whenever anything is dirty.
	MinCleanableDirtyRatio float64

	// MinCompactionLagMs (min.compaction.lag.ms) keeps records younger
	// than this out of cleaning; default 0. MaxCompactionLagMs
	// (max.compaction.lag.ms) forces cleaning once the oldest uncleaned
	// record is this old, whatever the dirty ratio; default MaxInt64.
	MinCompactionLagMs int64
	MaxCompactionLagMs int64

	// Now is the clock used for segment.ms and flush.ms. Default time.Now.
	Now func() time.Time

	// Fault, when set, is called before each write ("write") and fsync
	// ("sync") of the log's segment files with the operation and the
	// file's path (the .log file; its indexes are synced with it), and
	// before the fsync of the partition directory that ends a flush
	// ("sync" with the directory's path); an error it returns is that
	// operation's failure. Tests use it to inject disk faults (ENOSPC,
	// EIO) in the spirit of pebble's errorfs, and to model power loss
	// (internal/powerloss); production leaves it nil.
	Fault func(op, path string) error

	// Files is the cache of open segment and index files the log shares
	// with the other logs of the process (not a Kafka config: the broker
	// sizes it with samsa.log.max.open.files). Nil means the process's
	// shared cache, sized from RLIMIT_NOFILE. A log keeps the cache it was
	// opened with; SetConfig does not change it.
	Files *FileCache
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
	if c.CleanupPolicy == 0 {
		c.CleanupPolicy = CleanupDelete
	}
	if c.FileDeleteDelayMs == 0 {
		c.FileDeleteDelayMs = DefaultFileDeleteDelayMs
	}
	if c.DeleteRetentionMs == 0 {
		c.DeleteRetentionMs = DefaultDeleteRetentionMs
	}
	if c.MinCleanableDirtyRatio == 0 {
		c.MinCleanableDirtyRatio = DefaultMinCleanableRatio
	}
	if c.MaxCompactionLagMs == 0 {
		c.MaxCompactionLagMs = math.MaxInt64
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Files == nil {
		c.Files = sharedFileCache()
	}
	return c
}

// CleanupPolicy is Kafka's cleanup.policy: a set of delete and compact.
type CleanupPolicy uint8

// Cleanup policies; CleanupDelete|CleanupCompact is "compact,delete".
const (
	CleanupDelete  CleanupPolicy = 1 << 0
	CleanupCompact CleanupPolicy = 1 << 1
)

// Delete reports whether retention deletes old segments.
func (p CleanupPolicy) Delete() bool { return p&CleanupDelete != 0 }

// Compact reports whether the log cleaner compacts the log.
func (p CleanupPolicy) Compact() bool { return p&CleanupCompact != 0 }

func (p CleanupPolicy) String() string {
	switch p {
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupDelete | CleanupCompact:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", uint8(p))
}

// ParseCleanupPolicy reads a cleanup.policy value: a comma-separated list
// of "delete" and "compact" (Kafka's spelling; order and spaces do not
// matter).
func ParseCleanupPolicy(v string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for _, f := range strings.Split(v, ",") {
		switch strings.TrimSpace(f) {
		case "delete":
			p |= CleanupDelete
		case "compact":
			p |= CleanupCompact
		default:
			return 0, fmt.Errorf("invalid value %q for cleanup.policy: want delete, compact or compact,delete", v)
		}
	}
	return p, nil
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
	case c.RetentionBytes < -1:
		return fmt.Errorf("invalid value %d for retention.bytes: want >= -1", c.RetentionBytes)
	case c.CleanupPolicy > CleanupDelete|CleanupCompact:
		return fmt.Errorf("invalid value %v for cleanup.policy: want delete, compact or compact,delete", c.CleanupPolicy)
	case c.FileDeleteDelayMs < 0:
		return fmt.Errorf("invalid value %d for file.delete.delay.ms: want >= 0", c.FileDeleteDelayMs)
	case c.DeleteRetentionMs < 0:
		return fmt.Errorf("invalid value %d for delete.retention.ms: want >= 0", c.DeleteRetentionMs)
	case c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1:
		return fmt.Errorf("invalid value %v for min.cleanable.dirty.ratio: want 0..1", c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return fmt.Errorf("invalid value %d for min.compaction.lag.ms: want >= 0", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return fmt.Errorf("invalid value %d for max.compaction.lag.ms: want >= 1", c.MaxCompactionLagMs)
	}
	return nil
}
