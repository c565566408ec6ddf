package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/wire"
)

// Errors returned by Log. Callers map them to Kafka error codes:
// ErrOffsetOutOfRange → OFFSET_OUT_OF_RANGE, ErrOffsetsOutOfOrder → the
// follower's fetch is broken (Kafka's UnexpectedAppendOffsetException),
// ErrClosed → the partition is not (or no longer) hosted here
// (NOT_LEADER_OR_FOLLOWER / KAFKA_STORAGE_ERROR), ErrStorage →
// KAFKA_STORAGE_ERROR.
var (
	ErrOffsetOutOfRange  = errors.New("offset out of range")
	ErrOffsetsOutOfOrder = errors.New("batch offsets out of order")
	ErrClosed            = errors.New("log is closed")
	// ErrStorage wraps a failed write or fsync of the log's files (a full
	// disk, an I/O error). Like Kafka, which takes a log directory offline
	// on its first IOException, the log is then offline: every later
	// append, read and flush fails with the same error until the log is
	// opened again (a restart), because after a failed write or fsync what
	// the files hold is no longer known. Close does not flush it and
	// reports the failure, so no clean-shutdown marker skips its recovery.
	// Clients are answered KAFKA_STORAGE_ERROR.
	ErrStorage = &wire.Error{Code: kerr.KafkaStorageError, Message: "storage failure"}
)

// OpenOptions carry what the LogManager knows about a log from its
// checkpoints. The zero value (nothing known) makes Open recover every
// segment.
type OpenOptions struct {
	// RecoveryPoint is the offset below which the log is known to be on
	// disk. The segment holding it and every later one are scanned.
	RecoveryPoint int64
	// LogStartOffset from log-start-offset-checkpoint; it never goes below
	// the first segment's base offset.
	LogStartOffset int64
	// CleanShutdown skips the scan: the log was flushed and closed. Indexes
	// that fail their sanity checks are still rebuilt.
	CleanShutdown bool
}

// Log is one partition's log: an ordered list of segments, the last of which
// (the active segment) receives appends. See the package doc for the
// concurrency design.
type Log struct {
	dir       string
	topic     string
	partition int32
	logger    *slog.Logger

	segs     atomic.Pointer[[]*segment] // immutable slice, ordered by base offset
	leo      atomic.Int64               // log end offset: next offset to assign
	logStart atomic.Int64
	closed   atomic.Bool
	failed   atomic.Pointer[error] // ErrStorage: the log is offline (fail)
	// onFail, when set, learns of the failure that took the log offline
	// (the LogManager takes the log's directory offline). It is called
	// with the log's locks possibly held and must not block.
	onFail atomic.Pointer[func(error)]

	// structMu is held exclusively (after mu) by operations that remove or
	// shorten files; readers hold it shared.
	structMu sync.RWMutex

	mu struct {
		sync.Mutex
		cfg LogConfig
		// recoveryPoint: below it every segment is fsynced with its
		// indexes, so a restart after a crash recovers from there on.
		recoveryPoint int64
		// syncedTo (>= recoveryPoint): below it the records are fsynced
		// (SyncTo); the active segment's indexes may not be, as a restart
		// after a crash rebuilds them.
		syncedTo   int64
		mustSync   int64 // the end of the last append whose fsync was due (SyncedEnd)
		lastFlush  time.Time
		generation int64 // bumped by truncation: invalidates background flushes
		metas      []batchMeta
		topicID    [16]byte
		hasTopicID bool
		// topicIDUnsynced: partition.metadata was written without
		// fsync (SetTopicID).
		topicIDUnsynced bool
		closeHook       func() // SetCloseHook: final producer snapshot
	}
	flushes sync.WaitGroup // background flushes started by roll
	// dirDirty: a file was created in the log's directory since SyncTo
	// last fsynced it.
	dirDirty atomic.Bool

	// syncing is closed when the running group-commit flush (SyncTo)
	// ends; nil while none runs. Guarded by syncMu, taken before mu.
	syncMu  sync.Mutex
	syncing chan struct{}

	// snapMu serialises producer snapshot writes with the truncations that
	// invalidate them (producer_state_snapshot.go). Taken before mu.
	snapMu     sync.Mutex
	snapListed *[]int64       // under snapMu: the snapshots listSegments saw, until one is written or removed
	snapGen    atomic.Int64   // bumped by every truncation
	snapWrites sync.WaitGroup // WriteProducerSnapshotAsync goroutines

	// epochs is the leader epoch cache (leader_epoch.go); appends,
	// truncations and log start moves keep it in step with the log.
	epochs *epochCache
	// metaUnsynced: partition.metadata was written without fsync, or
	// leader-epoch-checkpoint is behind the cache; the next append
	// makes both durable first (syncMetaFilesLocked).
	metaUnsynced atomic.Bool

	hw          atomic.Int64   // high watermark for retention; -1: use the log end offset
	deletes     sync.WaitGroup // goroutines removing *.deleted files (retention.go)
	stopDeletes chan struct{}  // closed by shutdown: remove pending files now

	testHook func(step string) // tests: called at each step of a cleaner swap
}

// SegmentInfo describes a segment, for tests and tools.
type SegmentInfo struct {
	BaseOffset       int64
	NextOffset       int64 // offset after its last batch
	Size             int64 // bytes
	IndexEntries     int
	TimeIndexEntries int
	MaxTimestamp     int64 // -1 when no batch has a timestamp
}

// Open opens (creating if needed) the log in dir and recovers every segment.
func Open(dir string, cfg LogConfig, logger *slog.Logger) (*Log, error) {
	return OpenWithOptions(dir, cfg, logger, OpenOptions{})
}

// OpenWithOptions opens the log in dir, recovering the segments that
// opts says may hold unflushed data.
func OpenWithOptions(dir string, cfg LogConfig, logger *slog.Logger, opts OpenOptions) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, partition: -1, stopDeletes: make(chan struct{})}
	l.hw.Store(-1)
	if topic, p, err := ParseLogDirName(filepath.Base(dir)); err == nil {
		l.topic, l.partition = topic, p
	}
	l.logger = logger.With("dir", dir)
	l.mu.cfg = cfg
	l.mu.lastFlush = cfg.Now()
	id, idErr := readPartitionMetadata(dir)
	if idErr == nil {
		l.mu.topicID, l.mu.hasTopicID = id, true
	}
	if err := l.load(opts); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if idErr != nil && !errors.Is(idErr, os.ErrNotExist) {
		// SetTopicID writes the file without fsync and the first append
		// fsyncs it: a power loss can leave an empty or torn file only
		// in a log without records, which is then as good as new.
		if l.leo.Load() > 0 || len(l.segments()) > 1 {
			for _, s := range l.segments() {
				s.close()
			}
			return nil, idErr
		}
		l.logger.Warn("ignoring unreadable partition.metadata of an empty log", "err", idErr)
	}
	if err := l.loadEpochs(); err != nil {
		for _, s := range l.segments() {
			s.close()
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return l, nil
}

// ParseLogDirName splits a partition directory name "<topic>-<partition>".
// Topic names may contain '-', so the partition follows the last one.
func ParseLogDirName(name string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", -1, fmt.Errorf("%q is not a <topic>-<partition> directory name", name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", -1, fmt.Errorf("%q is not a <topic>-<partition> directory name", name)
	}
	return name[:i], int32(p), nil
}

// LogDirName is the directory name of a partition, Kafka's "<topic>-<p>".
func LogDirName(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

func (l *Log) segments() []*segment { return *l.segs.Load() }

// ActiveSegmentBaseOffset is the base offset of the segment receiving
// appends; a change tells the partition layer that the log rolled.
func (l *Log) ActiveSegmentBaseOffset() int64 {
	segs := l.segments()
	return segs[len(segs)-1].baseOffset
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Topic and Partition come from the directory name; "" and -1 when it is
// not of the form <topic>-<partition>.
func (l *Log) Topic() string { return l.topic }

// Partition is the partition number from the directory name.
func (l *Log) Partition() int32 { return l.partition }

// TopicID returns the id from partition.metadata, if there is one.
func (l *Log) TopicID() ([16]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.topicID, l.mu.hasTopicID
}

// SetTopicID records the topic id in partition.metadata. In a log
// without records (a partition being created) the file is written without
// fsync: the log's first append fsyncs it before writing
// (syncMetaFilesLocked), so a partition directory that a power loss left
// without it holds no record, and taking it for the topic's partition
// (GetOrCreate writes the id again) cannot mix two topics' records.
// Creating a partition costs no fsync. A log with records gets the file
// written and fsynced at once.
func (l *Log) SetTopicID(id [16]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.hasTopicID && l.mu.topicID == id {
		return nil
	}
	path := filepath.Join(l.dir, partitionMetadataFile)
	if l.leo.Load() > 0 || len(l.segments()) > 1 {
		if err := writeFileAtomic(path, partitionMetadata(id)); err != nil {
			return err
		}
		l.mu.topicID, l.mu.hasTopicID = id, true
		return nil
	}
	if err := l.injectFault("replace", path); err != nil {
		return err
	}
	if err := writeFileUnsynced(path, partitionMetadata(id)); err != nil {
		return err
	}
	l.mu.topicID, l.mu.hasTopicID = id, true
	l.mu.topicIDUnsynced = true
	l.metaUnsynced.Store(true)
	return nil
}

// syncMetaFilesLocked fsyncs partition.metadata if it was written
// without fsync, writes leader-epoch-checkpoint if it is behind the
// cache (epochCache), and fsyncs the directory. An append calls it
// before it writes, so that no record can reach the disk before the
// files that say which topic and leader epoch it belongs to.
func (l *Log) syncMetaFilesLocked() error {
	// Cleared first: an AssignLeaderEpoch racing with this sets it again.
	l.metaUnsynced.Store(false)
	var err error
	synced := false
	if l.mu.topicIDUnsynced {
		path := filepath.Join(l.dir, partitionMetadataFile)
		err = errors.Join(l.injectFault("sync", path), syncFile(path))
		synced = err == nil
	}
	if err == nil {
		var epochs bool
		epochs, err = l.epochs.sync()
		synced = synced || epochs
	}
	if err == nil && synced {
		err = errors.Join(l.injectFault("sync", l.dir), syncDir(l.dir))
	}
	if err != nil {
		l.metaUnsynced.Store(true)
		return err
	}
	l.mu.topicIDUnsynced = false
	return nil
}

// NeedsMetaSync reports whether the next append must first make the
// partition's metadata files durable (syncMetaFilesLocked): the first
// append after the partition's creation or a change of leader epoch.
func (l *Log) NeedsMetaSync() bool { return l.metaUnsynced.Load() }

// SyncMetaFiles does now what the next append would do first when
// NeedsMetaSync: a produce request to many such partitions makes them
// durable in parallel (replica.Manager.SyncMetaFiles) instead of one
// append after the other. A failure takes the log offline, as in append.
func (l *Log) SyncMetaFiles() error {
	if !l.metaUnsynced.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.failure(); err != nil {
		return err
	}
	if !l.metaUnsynced.Load() {
		return nil
	}
	if err := l.syncMetaFilesLocked(); err != nil {
		return l.fail("sync partition metadata", err)
	}
	return nil
}

// Config returns the log's configuration with defaults filled in.
func (l *Log) Config() LogConfig {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cfg
}

// SetConfig changes the configuration (dynamic topic configs). A new
// segment.index.bytes applies from the next segment.
func (l *Log) SetConfig(cfg LogConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cfg.Fault == nil {
		cfg.Fault = l.mu.cfg.Fault
	}
	cfg.Files = l.mu.cfg.Files
	l.mu.cfg = cfg.withDefaults()
	return nil
}

// LogStartOffset is the first offset a consumer may read.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset is the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// RecoveryPoint is the offset below which everything is fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.recoveryPoint
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.structMu.RLock()
	defer l.structMu.RUnlock()
	var out []SegmentInfo
	for _, s := range l.segments() {
		out = append(out, SegmentInfo{
			BaseOffset:       s.baseOffset,
			NextOffset:       s.nextOffset.Load(),
			Size:             s.size.Load(),
			IndexEntries:     s.index.entries(),
			TimeIndexEntries: s.timeIndex.entries(),
			MaxTimestamp:     s.maxTimestamp.Load(),
		})
	}
	return out
}

// Append assigns offsets to one batch, from the log end offset on, by
// rewriting its base offset in place, and appends it. The caller has
// validated the batch (internal/record). It returns the batch's base offset.
func (l *Log) Append(batch []byte) (baseOffset int64, err error) {
	first, _, err := l.AppendBatches(batch)
	return first, err
}

// AppendParsedUnsynced is Append for a batch whose header the caller has
// parsed already (the produce path parses it once, in the broker: h must
// be what record.ParseHeader(batch) returns now, which the record.Header
// setters keep it while the caller rewrites the batch), without the wait
// for an fsync the flush policy makes due: it returns syncUpTo > 0 when
// one is, and the caller must then call SyncTo(syncUpTo) before it tells
// anyone the batch is written. A leader appends so under its partition lock and syncs
// after releasing it, so that concurrent producers share fsyncs.
func (l *Log) AppendParsedUnsynced(batch []byte, h record.Header) (baseOffset, syncUpTo int64, err error) {
	l.mu.Lock()
	first, last, sync, err := l.appendLocked(batch, true, &h)
	l.mu.Unlock()
	if err != nil || !sync {
		return first, 0, err
	}
	return first, last + 1, nil
}

// SyncedEnd is the log end offset, less what appends wait to fsync
// (those the flush policy made due): a leader's high watermark does not
// pass it, so that with flush.messages=1 no consumer reads a record a
// power loss could take, as Kafka's leader fsyncs before it moves the
// high watermark. Without a due fsync it is the log end offset.
func (l *Log) SyncedEnd() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	leo := l.leo.Load()
	if l.mu.syncedTo < min(l.mu.mustSync, leo) {
		return l.mu.syncedTo
	}
	return leo
}

// AppendBatches is Append for several batches back to back. The batches get
// consecutive offsets and go into one segment. It returns the first and last
// offsets assigned.
func (l *Log) AppendBatches(batches []byte) (first, last int64, err error) {
	return l.append(batches, true, nil)
}

// AppendAsFollower appends batches that already carry offsets (copied from
// the leader). Offsets must increase and start at or after the log end
// offset; gaps are allowed (compacted leaders have them).
func (l *Log) AppendAsFollower(batches []byte) (first, last int64, err error) {
	return l.append(batches, false, nil)
}

// AppendAsFollowerUnsynced is AppendAsFollower without the wait for an
// fsync that flush.messages or flush.ms made due: the batches are durable
// once SyncTo(syncUpTo) returns; syncUpTo is 0 when no fsync was due. A
// replica fetcher appends every partition of a fetch answer so, and
// fsyncs them together.
func (l *Log) AppendAsFollowerUnsynced(batches []byte) (first, last, syncUpTo int64, err error) {
	l.mu.Lock()
	first, last, sync, err := l.appendLocked(batches, false, nil)
	l.mu.Unlock()
	if err != nil || !sync {
		return first, last, 0, err
	}
	return first, last, last + 1, nil
}

// append appends batches; parsed, when not nil, is the first batch's
// header, parsed by the caller. When flush.messages or flush.ms make an
// fsync due, it returns once the batches are fsynced.
func (l *Log) append(batches []byte, assign bool, parsed *record.Header) (first, last int64, err error) {
	l.mu.Lock()
	first, last, sync, err := l.appendLocked(batches, assign, parsed)
	l.mu.Unlock()
	if err != nil || !sync {
		return first, last, err
	}
	// The fsync runs without mu, so that appends to this log go on
	// meanwhile and the next fsync makes all of them durable at once.
	return first, last, l.SyncTo(last + 1)
}

func (l *Log) appendLocked(batches []byte, assign bool, parsed *record.Header) (first, last int64, sync bool, err error) {
	if l.closed.Load() {
		return 0, 0, false, ErrClosed
	}
	if err := l.failure(); err != nil {
		return 0, 0, false, err
	}
	if l.metaUnsynced.Load() {
		if err := l.syncMetaFilesLocked(); err != nil {
			return 0, 0, false, l.fail("sync partition metadata", err)
		}
	}
	metas, maxTs, err := l.scanLocked(batches, assign, parsed)
	if err != nil {
		return 0, 0, false, err
	}
	first = metas[0].baseOffset
	last = metas[len(metas)-1].lastOffset
	cfg := l.mu.cfg
	segs := l.segments()
	active := segs[len(segs)-1]
	if active.unsized {
		if err := active.resizeIndexes(cfg.SegmentIndexBytes); err != nil {
			return 0, 0, false, l.fail("size indexes", err)
		}
		active.unsized = false
	}
	if active.shouldRoll(cfg, len(batches), last, maxTs) ||
		active.size.Load() == 0 && last-active.baseOffset > math.MaxInt32 {
		if active, err = l.rollLocked(first); err != nil {
			return 0, 0, false, l.fail("roll", err)
		}
	}
	if err := l.injectFault("write", active.path); err != nil {
		return 0, 0, false, l.fail("append", err)
	}
	if err := active.append(batches, metas, cfg.IndexIntervalBytes); err != nil {
		return 0, 0, false, l.fail("append", err)
	}
	l.leo.Store(last + 1)
	if err := l.assignBatchEpochsLocked(metas); err != nil {
		return first, last, false, l.fail("leader epoch cache", err)
	}
	if !l.flushDueLocked() {
		return first, last, false, nil
	}
	l.mu.mustSync = last + 1
	return first, last, true, nil
}

// fail takes the log offline after a failed write or fsync of op and
// returns the ErrStorage error every later operation answers. Only the
// first failure is kept: it is the cause.
func (l *Log) fail(op string, err error) error {
	if errors.Is(err, ErrStorage) {
		return err
	}
	ferr := fmt.Errorf("%w: %s of log %s: %w; the log is offline until restart", ErrStorage, op, l.dir, err)
	if l.failed.CompareAndSwap(nil, &ferr) {
		l.logger.Error("log storage failure, log offline", "op", op, "err", err)
		if fn := l.onFail.Load(); fn != nil {
			(*fn)(ferr)
		}
	}
	return *l.failed.Load()
}

// takeOffline takes the log offline because another log of its directory
// failed: every later operation answers err.
func (l *Log) takeOffline(err error) { l.failed.CompareAndSwap(nil, &err) }

// failure is the error that took the log offline, or nil.
func (l *Log) failure() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Failed reports the error that took the log offline (ErrStorage), or nil.
func (l *Log) Failed() error { return l.failure() }

// injectFault runs the test hook LogConfig.Fault.
func (l *Log) injectFault(op, path string) error {
	if f := l.mu.cfg.Fault; f != nil {
		return f(op, path)
	}
	return nil
}

// scanLocked walks the headers of batches, checks them, assigns offsets if
// asked, and returns one batchMeta per batch and the largest timestamp. It
// changes nothing until every header has been checked. parsed, when not
// nil, is the first batch's header, which is then not parsed again.
func (l *Log) scanLocked(batches []byte, assign bool, parsed *record.Header) ([]batchMeta, int64, error) {
	if len(batches) == 0 {
		return nil, 0, fmt.Errorf("%w: empty append", record.ErrCorrupt)
	}
	metas := l.mu.metas[:0]
	next := l.leo.Load()
	maxTs := int64(noTimestamp)
	for pos := 0; pos < len(batches); {
		var h record.Header
		if pos == 0 && parsed != nil {
			h = *parsed
		} else {
			var err error
			if h, err = record.ParseHeader(batches[pos:]); err != nil {
				return nil, 0, err
			}
		}
		if pos+h.Size() > len(batches) {
			return nil, 0, fmt.Errorf("%w: batch at byte %d needs %d bytes, %d left", record.ErrCorrupt, pos, h.Size(), len(batches)-pos)
		}
		if h.LastOffsetDelta < 0 {
			return nil, 0, fmt.Errorf("%w: last offset delta %d", record.ErrCorrupt, h.LastOffsetDelta)
		}
		base := h.BaseOffset
		if assign {
			base = next
		} else if base < next {
			return nil, 0, fmt.Errorf("%w: batch at offset %d, log end offset %d", ErrOffsetsOutOfOrder, base, next)
		}
		metas = append(metas, batchMeta{pos: pos, baseOffset: base, size: h.Size(), lastOffset: base + int64(h.LastOffsetDelta),
			maxTimestamp: h.MaxTimestamp, leaderEpoch: h.PartitionLeaderEpoch})
		maxTs = max(maxTs, h.MaxTimestamp)
		next = base + int64(h.LastOffsetDelta) + 1
		pos += h.Size()
	}
	if assign {
		for _, m := range metas {
			record.SetBaseOffset(batches[m.pos:], m.baseOffset)
		}
	}
	l.mu.metas = metas
	return metas, maxTs, nil
}

// rollLocked starts a new active segment at newBase. The old one is
// finished (final time index entry, trimmed indexes) and flushed in the
// background, as Kafka schedules flush-log on roll, so the append that
// triggered the roll does not wait for an fsync of a whole segment.
func (l *Log) rollLocked(newBase int64) (*segment, error) {
	cfg := l.mu.cfg
	segs := l.segments()
	old := segs[len(segs)-1]
	kept := segs
	if old.size.Load() == 0 {
		// Only reachable for a follower whose first batch is too far from
		// the empty segment's base: replace the empty segment.
		l.structMu.Lock()
		err := old.remove()
		l.structMu.Unlock()
		if err != nil {
			return nil, err
		}
		kept = segs[:len(segs)-1]
	} else if err := old.finishActive(); err != nil {
		return nil, err
	}
	s, err := createSegment(l.dir, newBase, cfg)
	if err != nil {
		return nil, err
	}
	l.dirDirty.Store(true)
	next := append(slices.Clone(kept), s)
	l.segs.Store(&next)
	if len(kept) == len(segs) {
		l.flushes.Add(1)
		go func() {
			defer l.flushes.Done()
			if err := l.flushUpTo(newBase); err != nil {
				l.logger.Error("flush after roll", "up_to", newBase, "err", l.fail("flush after roll", err))
			}
		}()
	}
	l.logger.Info("rolled segment", "new_base", newBase, "old_size", old.size.Load())
	return s, nil
}

// flushUpTo fsyncs the segments below upTo, which no longer change, without
// holding mu, then moves the recovery point.
func (l *Log) flushUpTo(upTo int64) error {
	l.mu.Lock()
	rp, gen := l.mu.recoveryPoint, l.mu.generation
	hook := l.mu.cfg.Fault
	fault := l.injectFault("sync", l.dir)
	l.mu.Unlock()
	if rp >= upTo {
		return nil
	}
	l.structMu.RLock()
	if l.closed.Load() || l.failure() != nil {
		l.structMu.RUnlock()
		return nil
	}
	err := fault
	for _, s := range l.segments() {
		if s.baseOffset < upTo && s.nextOffset.Load() > rp {
			if hook != nil {
				err = errors.Join(err, hook("sync", s.path))
			}
			err = errors.Join(err, s.flush())
		}
	}
	err = errors.Join(err, syncDir(l.dir))
	l.structMu.RUnlock()
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.mu.generation == gen && l.mu.recoveryPoint < upTo {
		l.mu.recoveryPoint = upTo
		l.mu.syncedTo = max(l.mu.syncedTo, upTo)
	}
	l.mu.Unlock()
	return nil
}

// syncData fsyncs the records below upTo that are not yet (the log files
// and transaction indexes of the segments past syncedTo, and the
// directory if a file was created in it), then moves syncedTo. The offset
// and time indexes are left to the roll's flush (flushUpTo), which moves
// the recovery point: a restart after a crash rebuilds them for every
// segment from the recovery point on. One fsync of the active segment
// is all a group commit costs.
func (l *Log) syncData(upTo int64) error {
	l.mu.Lock()
	from, gen := l.mu.syncedTo, l.mu.generation
	hook := l.mu.cfg.Fault
	l.mu.Unlock()
	if from >= upTo {
		return nil
	}
	l.structMu.RLock()
	if l.closed.Load() || l.failure() != nil {
		l.structMu.RUnlock()
		return nil
	}
	var err error
	for _, s := range l.segments() {
		if s.baseOffset < upTo && s.nextOffset.Load() > from {
			if hook != nil {
				err = errors.Join(err, hook("sync", s.path))
			}
			err = errors.Join(err, s.syncData())
		}
	}
	if l.dirDirty.Swap(false) {
		if hook != nil {
			err = errors.Join(err, hook("sync", l.dir))
		}
		err = errors.Join(err, syncDir(l.dir))
	}
	l.structMu.RUnlock()
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.mu.generation == gen && l.mu.syncedTo < upTo {
		l.mu.syncedTo = upTo
	}
	l.mu.Unlock()
	return nil
}

// flushDueLocked applies flush.messages and flush.ms: whether what is
// appended but not fsynced should be fsynced now.
func (l *Log) flushDueLocked() bool {
	cfg := l.mu.cfg
	unflushed := l.leo.Load() - l.mu.syncedTo
	if unflushed <= 0 {
		return false
	}
	return unflushed >= cfg.FlushMessages || cfg.Now().Sub(l.mu.lastFlush).Milliseconds() >= cfg.FlushMs
}

// SyncTo returns once every offset below upTo is fsynced (the recovery
// point is at least upTo), fsyncing if needed: a group commit. One fsync
// runs at a time, without mu; it covers everything appended when it
// starts, so appenders that wait for it meanwhile need no fsync of their
// own, and the appends that arrive during it share the next one. A
// truncation below upTo ends the wait at the new log end. A failed fsync
// takes the log offline (fail) and every waiter answers its error.
func (l *Log) SyncTo(upTo int64) error {
	for {
		l.syncMu.Lock()
		if err := l.failure(); err != nil {
			l.syncMu.Unlock()
			return err
		}
		if l.closed.Load() {
			l.syncMu.Unlock()
			return ErrClosed
		}
		l.mu.Lock()
		done := l.mu.syncedTo >= min(upTo, l.leo.Load())
		l.mu.Unlock()
		if done {
			l.syncMu.Unlock()
			return nil
		}
		if running := l.syncing; running != nil {
			l.syncMu.Unlock()
			<-running
			continue
		}
		running := make(chan struct{})
		l.syncing = running
		l.syncMu.Unlock()

		err := l.syncData(l.leo.Load())
		if err == nil {
			l.mu.Lock()
			l.mu.lastFlush = l.mu.cfg.Now()
			l.mu.Unlock()
		} else {
			l.fail("flush", err)
		}
		l.syncMu.Lock()
		l.syncing = nil
		close(running)
		l.syncMu.Unlock()
	}
}

// flushIfDue is the periodic flush.ms check (Kafka's flush scheduler).
func (l *Log) flushIfDue() error {
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return nil
	}
	if err := l.failure(); err != nil {
		l.mu.Unlock()
		return err
	}
	due, leo := l.flushDueLocked(), l.leo.Load()
	l.mu.Unlock()
	if !due {
		return nil
	}
	if err := l.SyncTo(leo); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}

// Flush fsyncs everything appended so far.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.failure(); err != nil {
		return err
	}
	if err := l.flushLocked(); err != nil {
		return l.fail("flush", err)
	}
	return nil
}

func (l *Log) flushLocked() error {
	leo := l.leo.Load()
	err := l.injectFault("sync", l.dir)
	changed := false // a file changed: new names may need the directory synced
	for _, s := range l.segments() {
		if s.nextOffset.Load() > l.mu.recoveryPoint || s.size.Load() == 0 {
			changed = changed || s.dirty()
			err = errors.Join(err, l.injectFault("sync", s.path), s.flush())
		}
	}
	if changed {
		err = errors.Join(err, syncDir(l.dir))
	}
	if err != nil {
		return fmt.Errorf("flush %s: %w", l.dir, err)
	}
	l.mu.recoveryPoint = leo
	l.mu.syncedTo = leo
	l.mu.lastFlush = l.mu.cfg.Now()
	return nil
}

// syncDir makes new and removed file names durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Read returns whole batches starting with the one that holds offset, all
// below maxOffset (exclusive; the high watermark for consumers, or the log
// end offset), together at most maxBytes long, except that the first batch
// is returned whole however large it is (Kafka's minOneMessage) so a
// consumer can always make progress. Reads come from one segment; an empty
// result with a nil error means nothing is ready. An offset below the log
// start offset or above the log end offset is ErrOffsetOutOfRange.
//
// Read is safe to call concurrently with appends and other reads.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) ([]byte, error) {
	l.structMu.RLock()
	defer l.structMu.RUnlock()
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if err := l.failure(); err != nil {
		return nil, err
	}
	leo, start := l.leo.Load(), l.logStart.Load()
	if offset < start || offset > leo {
		return nil, fmt.Errorf("%w: offset %d, log %s has %d..%d", ErrOffsetOutOfRange, offset, l.dir, start, leo)
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset {
		return nil, nil
	}
	segs := l.segments()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
	for i = max(i, 0); i < len(segs) && segs[i].baseOffset < maxOffset; i++ {
		b, err := segs[i].read(offset, maxBytes, maxOffset)
		if err != nil || len(b) > 0 {
			return b, err
		}
	}
	return nil, nil
}

// OffsetForTimestamp finds the first batch whose max timestamp is >= ts and
// returns its base offset (or the log start offset, if that is inside the
// batch) and its max timestamp. The caller refines to the record within
// the batch, and handles Kafka's special timestamps (-1 latest, -2
// earliest, -3 max timestamp). found is false when every timestamp is < ts.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool, err error) {
	l.structMu.RLock()
	defer l.structMu.RUnlock()
	if l.closed.Load() {
		return -1, -1, false, ErrClosed
	}
	if err := l.failure(); err != nil {
		return -1, -1, false, err
	}
	start := l.logStart.Load()
	for _, s := range l.segments() {
		if s.maxTimestamp.Load() < ts || s.nextOffset.Load() <= start {
			continue
		}
		h, ok, err := s.findByTimestamp(ts, start)
		if err != nil || ok {
			return max(h.BaseOffset, start), h.MaxTimestamp, ok, err
		}
	}
	return -1, -1, false, nil
}

// IncrementLogStartOffset moves the log start offset forward (DeleteRecords);
// offsets below it can no longer be read. It never moves backwards and
// never past the log end offset.
func (l *Log) IncrementLogStartOffset(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if offset > l.leo.Load() {
		return fmt.Errorf("%w: log start offset %d is past the log end offset %d", ErrOffsetOutOfRange, offset, l.leo.Load())
	}
	if offset > l.logStart.Load() {
		l.logStart.Store(offset)
		return l.epochs.truncateFromStart(offset)
	}
	return nil
}

// TruncateTo removes every batch whose last offset is >= offset, so that the
// log ends at or before offset (a follower discarding what the new leader
// does not have). A batch that straddles offset is removed whole, so the
// new log end offset is that batch's base offset; Kafka would claim offset
// itself, which leaves a hole a follower then cannot fill. Truncating below
// the first segment empties the log and restarts it at offset.
//
// Producer snapshots above the new log end offset describe batches that are
// gone and are deleted; snapshots still being written are dropped.
func (l *Log) TruncateTo(offset int64) (err error) {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.structMu.Lock()
	defer l.structMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if offset >= l.leo.Load() {
		// Nothing to cut, but the epoch cache may end in an epoch this
		// replica assigned as leader and never wrote to, which the new
		// leader does not know (Kafka's UnifiedLog.truncateTo does the
		// same); a follower that kept it would diverge again forever.
		return l.epochs.truncateFromEnd(l.leo.Load())
	}
	l.mu.generation++
	l.snapGen.Add(1)
	segs := l.segments()
	full := offset < segs[0].baseOffset
	defer func() {
		if err == nil {
			// After a full truncation no snapshot matches the log (Kafka's
			// truncateFullyAndStartAt deletes them all).
			leo := l.leo.Load()
			err = l.deleteProducerSnapshotsLocked(func(off int64) bool { return full || off > leo })
		}
	}()
	cfg := l.mu.cfg
	if full {
		return l.truncateFullyLocked(offset)
	}
	keep := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset })
	for _, s := range segs[keep:] {
		if err := s.remove(); err != nil {
			return err
		}
	}
	kept := slices.Clone(segs[:keep])
	l.segs.Store(&kept)
	active := kept[len(kept)-1]
	if _, err := active.truncateTo(offset, cfg.IndexIntervalBytes); err != nil {
		return err
	}
	if err := active.resizeIndexes(cfg.SegmentIndexBytes); err != nil {
		return err
	}
	l.resetOffsetsLocked(active.nextOffset.Load())
	l.logger.Info("truncated log", "to", offset, "log_end_offset", l.leo.Load())
	return l.epochs.truncateFromEnd(l.leo.Load())
}

// TruncateFullyAndStartAt deletes every segment, the producer snapshots
// and the leader epoch cache, and restarts the log empty at offset (a
// follower that fell behind its leader's log start offset).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.structMu.Lock()
	defer l.structMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	l.mu.generation++
	l.snapGen.Add(1)
	if err := l.truncateFullyLocked(offset); err != nil {
		return err
	}
	l.logger.Info("truncated log fully", "start_at", offset)
	return l.deleteProducerSnapshotsLocked(func(int64) bool { return true })
}

// truncateFullyLocked deletes every segment and restarts the log at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	for _, s := range l.segments() {
		if err := s.remove(); err != nil {
			return err
		}
	}
	s, err := createSegment(l.dir, offset, l.mu.cfg)
	if err != nil {
		return err
	}
	segs := []*segment{s}
	l.segs.Store(&segs)
	l.leo.Store(offset)
	l.logStart.Store(offset)
	l.mu.recoveryPoint = offset
	l.mu.syncedTo = offset
	l.mu.mustSync = min(l.mu.mustSync, offset)
	l.dirDirty.Store(true)
	return l.epochs.clear()
}

func (l *Log) resetOffsetsLocked(leo int64) {
	l.leo.Store(leo)
	l.logStart.Store(min(l.logStart.Load(), leo))
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, leo)
	l.mu.syncedTo = min(l.mu.syncedTo, leo)
	l.mu.mustSync = min(l.mu.mustSync, leo)
}

// Close flushes the log and closes its files. The active segment's indexes
// are trimmed, so the directory is what Kafka leaves after a clean
// shutdown. Close is idempotent.
func (l *Log) Close() error {
	return l.shutdown(true)
}

// Delete closes the log without flushing and removes its directory.
func (l *Log) Delete() error {
	if err := l.shutdown(false); err != nil && !errors.Is(err, ErrClosed) {
		l.logger.Warn("closing log before delete", "err", err)
	}
	return os.RemoveAll(l.dir)
}

func (l *Log) shutdown(flush bool) error {
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return nil
	}
	// Set under mu: no roll can start a background flush after this.
	l.closed.Store(true)
	hook := l.mu.closeHook
	l.mu.Unlock()
	l.flushes.Wait()
	if flush && hook != nil && l.failure() == nil {
		// Appends have stopped: the hook sees the final state.
		hook()
	}
	l.snapWrites.Wait()
	close(l.stopDeletes)
	l.deletes.Wait()

	l.mu.Lock()
	defer l.mu.Unlock()
	l.structMu.Lock()
	defer l.structMu.Unlock()
	segs := l.segments()
	err := l.failure() // an offline log is not flushed, and says why
	if flush && err == nil {
		err = segs[len(segs)-1].finishActive()
		if len(segs) == 1 && segs[0].baseOffset == 0 && segs[0].size.Load() == 0 {
			// A log that never held a record: a power loss can take
			// nothing from it that the next start does not make again
			// (a lost segment file is created at offset 0, an empty
			// segment's indexes are reset at open), so a clean stop of
			// many new partitions costs no fsync.
			l.mu.recoveryPoint, l.mu.syncedTo = 0, 0
		} else {
			err = errors.Join(err, l.flushLocked())
		}
	}
	for _, s := range segs {
		err = errors.Join(err, s.close())
	}
	return err
}
