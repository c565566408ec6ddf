package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/samsa-io/samsa/internal/record"
)

// LeaderEpochCheckpointFile is the leader epoch cache of a partition, in
// its directory (Kafka's LeaderEpochCheckpointFile):
//
//	0              version
//	2              number of entries
//	0 0            <leader epoch> <start offset>, ascending
//	3 1200
//
// Entry (e, s) says that the batches from offset s up to the next entry's
// start offset were written in leader epoch e. Followers compare their
// history with the leader's through it (OffsetForLeaderEpoch, fetch
// divergence).
const LeaderEpochCheckpointFile = "leader-epoch-checkpoint"

// EpochEntry is one entry of the leader epoch cache.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache: entries ascend in both epoch
// and start offset, and every change is written through to the file.
//
// Durability. Every change is written and fsynced at once, except the
// entry a new leader assigns at its log end offset (assign with sync
// false, from AssignLeaderEpoch): that one is kept in memory only, and
// written and fsynced by the log's next append before the append writes
// any byte of a record (Log.syncMetaFilesLocked), or by any other change
// of the cache. Hence the file holds an entry for every epoch of which
// the log holds a record, at the right start offset, at all times, as
// when every change was fsynced at once; what a crash or a clean stop
// can take is an entry of an epoch without a record. Such an entry
// changes no answer of endOffsetFor that matters: the next epoch starts
// at the same offset, and a restarted node's leaderships start new
// epochs at its log end offsets anyway. Kafka writes and fsyncs it at
// once; a single-node restart makes the node leader of every partition
// twice (fenced, then unfenced), and creating a partition makes it
// leader once, so for 100,000 partitions that is 200,000 to 400,000
// file writes, fsyncs and renames (a rename over a file makes ext4 start
// writing the new one back) saved until the partitions' first appends.
type epochCache struct {
	path string
	mu   sync.Mutex
	// entries ascend by epoch and by start offset.
	entries []EpochEntry
	// unwritten: the entries changed since the file was last written
	// (assign without sync).
	unwritten bool
	// fault is the log's LogConfig.Fault (tests): told "sync" when the
	// file was written and is durable.
	fault func(op, path string) error
}

func (c *epochCache) hook(op string) error {
	if c.fault == nil {
		return nil
	}
	return c.fault(op, c.path)
}

// loadEpochCache reads the checkpoint in dir. A missing file is an empty
// cache; a malformed one is an error for the caller to handle.
func loadEpochCache(dir string) (*epochCache, error) {
	c := &epochCache{path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	entries, err := parseEpochCheckpoint(b)
	if err != nil {
		return c, fmt.Errorf("malformed %s: %w", c.path, err)
	}
	c.entries = entries
	return c, nil
}

func parseEpochCheckpoint(b []byte) ([]EpochEntry, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, errors.New("want version 0")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("entry count %q does not match %d entries", lines[1], len(lines)-2)
	}
	out := make([]EpochEntry, 0, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("entry %q: want <epoch> <start offset>", line)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		s, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || s < 0 {
			return nil, fmt.Errorf("entry %q", line)
		}
		if k := len(out); k > 0 && (int32(e) <= out[k-1].Epoch || s < out[k-1].StartOffset) {
			return nil, fmt.Errorf("entry %q does not ascend", line)
		}
		out = append(out, EpochEntry{int32(e), s})
	}
	return out, nil
}

// writeLocked makes the file match the entries.
func (c *epochCache) writeLocked() error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&buf, "%d %d\n", e.Epoch, e.StartOffset)
	}
	c.unwritten = false
	if err := writeFileAtomic(c.path, buf.Bytes()); err != nil {
		return err
	}
	return c.hook("sync")
}

// sync writes the file if assign left it behind the entries; true if it
// did. The file and its directory are fsynced.
func (c *epochCache) sync() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.unwritten {
		return false, nil
	}
	return true, c.writeLocked()
}

// assign records that epoch starts at offset, as Kafka's assign does: no
// change when epoch is the latest and offset not below its start;
// otherwise entries that would break the ascending order (epoch >= epoch or
// start >= offset) are dropped first. Without sync the file is left as
// it is (see the type's comment); true when that happened.
func (c *epochCache) assign(epoch int32, offset int64, sync bool) (unwritten bool, err error) {
	if epoch < 0 || offset < 0 {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if last.Epoch == epoch && offset >= last.StartOffset {
			return false, nil
		}
	}
	keep := len(c.entries)
	for keep > 0 && (c.entries[keep-1].Epoch >= epoch || c.entries[keep-1].StartOffset >= offset) {
		keep--
	}
	c.entries = append(c.entries[:keep], EpochEntry{epoch, offset})
	if sync {
		return false, c.writeLocked()
	}
	c.unwritten = true
	return true, nil
}

// truncateFromEnd drops the entries starting at or after endOffset (the log
// was truncated to end there).
func (c *epochCache) truncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := len(c.entries)
	for keep > 0 && c.entries[keep-1].StartOffset >= endOffset {
		keep--
	}
	if keep == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:keep]
	return c.writeLocked()
}

// truncateFromStart forgets history below startOffset: entries starting at
// or before it are dropped, except that the last of them is kept, moved up
// to startOffset (Kafka's truncateFromStart).
func (c *epochCache) truncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 || i == 1 && c.entries[0].StartOffset == startOffset {
		return nil
	}
	last := c.entries[i-1]
	last.StartOffset = startOffset
	c.entries = append([]EpochEntry{last}, c.entries[i:]...)
	return c.writeLocked()
}

// clear empties the cache (the log was truncated fully). It writes even
// an empty cache: the file may still hold the entries loadEpochs dropped
// in memory only.
func (c *epochCache) clear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
	return c.writeLocked()
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor: for the latest
// epoch, the log end offset; else the largest epoch <= epoch and the start
// of the next entry. Below every entry it is epoch itself and the first
// entry's start (the older history was deleted); above every entry or with
// an empty cache, -1 and -1.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if c.entries[n-1].Epoch == epoch {
		return epoch, leo
	}
	hi := 0 // first entry with an epoch above
	for hi < n && c.entries[hi].Epoch <= epoch {
		hi++
	}
	switch {
	case hi == n:
		return -1, -1
	case hi == 0:
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

func (c *epochCache) snapshot() []EpochEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]EpochEntry(nil), c.entries...)
}

// AssignLeaderEpoch records that leader epoch epoch starts at offset: a
// new leader calls it with its log end offset. Appends record the epochs
// of their batches themselves. The checkpoint is written by the next
// append, before it writes (see epochCache).
func (l *Log) AssignLeaderEpoch(epoch int32, offset int64) error {
	unwritten, err := l.epochs.assign(epoch, offset, false)
	if unwritten {
		l.metaUnsynced.Store(true)
	}
	return err
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from the leader epoch
// cache (see epochCache.endOffsetFor): the largest epoch <= epoch and the
// offset where it ended; -1, -1 when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// LatestEpoch is the epoch of the cache's last entry, -1 when empty.
func (l *Log) LatestEpoch() int32 {
	l.epochs.mu.Lock()
	defer l.epochs.mu.Unlock()
	if n := len(l.epochs.entries); n > 0 {
		return l.epochs.entries[n-1].Epoch
	}
	return -1
}

// LeaderEpochs returns the leader epoch cache's entries, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry { return l.epochs.snapshot() }

// assignBatchEpochsLocked records the leader epochs of appended batches
// (Kafka's UnifiedLog.append does it for every v2 batch), as scanLocked
// read them from the headers.
func (l *Log) assignBatchEpochsLocked(metas []batchMeta) error {
	for _, m := range metas {
		if _, err := l.epochs.assign(m.leaderEpoch, m.baseOffset, true); err != nil {
			return err
		}
	}
	return nil
}

// loadEpochsLocked opens the leader epoch cache at load time and trims it
// to the log. A missing or unreadable file is rebuilt from the batch
// headers, as the cache must describe what the log holds.
func (l *Log) loadEpochs() error {
	c, err := loadEpochCache(l.dir)
	c.fault = l.mu.cfg.Fault
	l.epochs = c
	missing := false
	if err != nil {
		l.logger.Warn("rebuilding leader epoch cache", "err", err)
		missing = true
	} else if _, statErr := os.Stat(c.path); statErr != nil {
		missing = true
	}
	if missing && l.leo.Load() > l.logStart.Load() {
		c.entries = nil
		err := l.ScanBatchHeaders(l.logStart.Load(), func(h record.Header) error {
			if n := len(c.entries); h.PartitionLeaderEpoch >= 0 && (n == 0 || h.PartitionLeaderEpoch > c.entries[n-1].Epoch) {
				c.entries = append(c.entries, EpochEntry{h.PartitionLeaderEpoch, h.BaseOffset})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("rebuild leader epoch cache: %w", err)
		}
		c.mu.Lock()
		err = c.writeLocked()
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if leo := l.leo.Load(); leo == l.logStart.Load() && allStartAtOrAfter(c.entries, leo) {
		// An empty log whose entries all start at its end (a leader
		// epoch began and nothing was written): empty the cache in
		// memory only. With the cache empty the next assign rewrites
		// the file, and a load before that trims it the same way, so
		// the write (two fsyncs per partition at start-up) is saved.
		c.entries = nil
		return nil
	}
	if err := c.truncateFromEnd(l.leo.Load()); err != nil {
		return err
	}
	return c.truncateFromStart(l.logStart.Load())
}

func allStartAtOrAfter(entries []EpochEntry, offset int64) bool {
	for _, e := range entries {
		if e.StartOffset < offset {
			return false
		}
	}
	return true
}
