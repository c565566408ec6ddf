package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

const (
	txnIndexSuffix = ".txnindex"
	// txnIndexEntrySize is Kafka's AbortedTxn.TOTAL_SIZE: version int16,
	// producer id, first offset, last offset, last stable offset (int64s).
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

// AbortedTxn is one entry of a segment's transaction index (Kafka's
// AbortedTxn): producer ProducerID aborted a transaction whose first batch
// is at FirstOffset and whose abort marker is at LastOffset. LastStableOffset
// is the partition's last stable offset right after the marker; a search for
// a fetch range can stop at the first entry whose LastStableOffset reaches
// the range's upper bound, because every transaction that could overlap the
// range had finished by then.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// txnIndex is a segment's .txnindex. Like Kafka's TransactionIndex, the
// file exists only once the segment has an aborted transaction. Aborts are
// rare, so the entries are also kept in memory, which lets fetches search
// them without I/O; mu guards them against the writer (who holds Log.mu).
type txnIndex struct {
	mu      sync.Mutex
	cache   *FileCache
	path    string
	f       *cachedFile // nil until the first entry (or when the file is absent)
	entries []AbortedTxn
}

// openTxnIndex loads path if it exists. A torn tail (a size that is not a
// multiple of the entry size) or an entry of an unknown version ends the
// usable part; the file is cut there, and the lost entries come back when
// the partition replays its transaction markers.
func openTxnIndex(c *FileCache, path string) (*txnIndex, error) {
	x := &txnIndex{cache: c, path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, err
	}
	n := 0
	for ; n+txnIndexEntrySize <= len(b); n += txnIndexEntrySize {
		e := b[n : n+txnIndexEntrySize]
		if binary.BigEndian.Uint16(e) != txnIndexVersion {
			break
		}
		x.entries = append(x.entries, AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		})
	}
	if x.f, err = c.openCachedFile(path, os.O_RDWR); err != nil {
		return nil, err
	}
	if n != len(b) {
		if err := x.f.Truncate(int64(n)); err != nil {
			x.f.Close()
			return nil, fmt.Errorf("cut corrupt tail of %s: %w", path, err)
		}
	}
	return x, nil
}

func encodeAbortedTxn(b []byte, e AbortedTxn) {
	binary.BigEndian.PutUint16(b, txnIndexVersion)
	binary.BigEndian.PutUint64(b[2:], uint64(e.ProducerID))
	binary.BigEndian.PutUint64(b[10:], uint64(e.FirstOffset))
	binary.BigEndian.PutUint64(b[18:], uint64(e.LastOffset))
	binary.BigEndian.PutUint64(b[26:], uint64(e.LastStableOffset))
}

func (x *txnIndex) openLocked() error {
	if x.f != nil {
		return nil
	}
	f, err := x.cache.openCachedFile(x.path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return err
	}
	x.f = f
	return nil
}

// add records e unless an entry for the same marker (producer and last
// offset) is already there, which makes replaying markers after a restart
// harmless. Entries stay ordered by last offset, as Kafka's are; an entry
// that belongs before the end (only a replay after a lost file produces
// one) rewrites the file.
func (x *txnIndex) add(e AbortedTxn) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	i, found := slices.BinarySearchFunc(x.entries, e.LastOffset, func(a AbortedTxn, off int64) int {
		switch {
		case a.LastOffset < off:
			return -1
		case a.LastOffset > off:
			return 1
		}
		return 0
	})
	if found && x.entries[i].ProducerID == e.ProducerID {
		return nil
	}
	if err := x.openLocked(); err != nil {
		return err
	}
	if i == len(x.entries) {
		var b [txnIndexEntrySize]byte
		encodeAbortedTxn(b[:], e)
		if _, err := x.f.WriteAt(b[:], int64(i)*txnIndexEntrySize); err != nil {
			return fmt.Errorf("append to %s: %w", x.path, err)
		}
		x.entries = append(x.entries, e)
		return nil
	}
	x.entries = slices.Insert(x.entries, i, e)
	return x.rewriteLocked()
}

func (x *txnIndex) rewriteLocked() error {
	b := make([]byte, len(x.entries)*txnIndexEntrySize)
	for i, e := range x.entries {
		encodeAbortedTxn(b[i*txnIndexEntrySize:], e)
	}
	if _, err := x.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("rewrite %s: %w", x.path, err)
	}
	return x.f.Truncate(int64(len(b)))
}

// truncateTo drops the entries of markers at or after offset (Kafka's
// TransactionIndex.truncateTo).
func (x *txnIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := len(x.entries)
	for n > 0 && x.entries[n-1].LastOffset >= offset {
		n--
	}
	if n == len(x.entries) {
		return nil
	}
	x.entries = x.entries[:n]
	return x.f.Truncate(int64(n) * txnIndexEntrySize)
}

// collect appends to dst the aborted transactions that overlap the fetch
// range [fetchOffset, upperBound), Kafka's collectAbortedTxns. complete
// reports that no later segment can hold more.
func (x *txnIndex) collect(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, e := range x.entries {
		if e.LastOffset >= fetchOffset && e.FirstOffset < upperBound {
			dst = append(dst, e)
		}
		if e.LastStableOffset >= upperBound {
			return dst, true
		}
	}
	return dst, false
}

func (x *txnIndex) all() []AbortedTxn {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.entries)
}

func (x *txnIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

func (x *txnIndex) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	return x.f.Sync()
}

func (x *txnIndex) dirty() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.f != nil && x.f.isDirty()
}

func (x *txnIndex) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// rename moves the file, if there is one, to path; an open file keeps its
// descriptor.
func (x *txnIndex) rename(path string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.path == path {
		return nil
	}
	if x.f != nil {
		if err := x.f.rename(path); err != nil {
			return err
		}
	} else if err := os.Rename(x.path, path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	x.path = path
	return nil
}

// AppendAbortedTxn records an aborted transaction in the .txnindex of the
// segment holding its marker (e.LastOffset), unless the entry is already
// there: the partition layer calls it for every abort marker it appends and
// again for those it replays on start-up.
func (l *Log) AppendAbortedTxn(e AbortedTxn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	segs := l.segments()
	i := max(0, sortSearchSegments(segs, e.LastOffset))
	if e.LastOffset < segs[i].baseOffset || e.LastOffset >= l.leo.Load() {
		// The marker's segment is gone (retention) or it was never
		// written: there is nothing to index.
		return nil
	}
	l.dirDirty.Store(true) // the first entry creates the file
	return segs[i].txnIndex.add(e)
}

// CollectAbortedTxns returns the aborted transactions that overlap the
// fetch range [fetchOffset, upperBound): those whose marker is at or after
// fetchOffset and whose first batch is below upperBound, oldest marker
// first (Kafka's UnifiedLog.collectAbortedTransactions). The search starts
// at the segment holding fetchOffset and walks forward only as far as an
// entry proves that nothing later can overlap.
func (l *Log) CollectAbortedTxns(fetchOffset, upperBound int64) ([]AbortedTxn, error) {
	l.structMu.RLock()
	defer l.structMu.RUnlock()
	if l.closed.Load() {
		return nil, ErrClosed
	}
	segs := l.segments()
	var out []AbortedTxn
	for i := max(0, sortSearchSegments(segs, fetchOffset)); i < len(segs); i++ {
		var complete bool
		if out, complete = segs[i].txnIndex.collect(out, fetchOffset, upperBound); complete {
			break
		}
	}
	return out, nil
}

// AbortedTxns returns every entry of every segment's .txnindex, oldest
// first, for tests and tools.
func (l *Log) AbortedTxns() []AbortedTxn {
	l.structMu.RLock()
	defer l.structMu.RUnlock()
	var out []AbortedTxn
	for _, s := range l.segments() {
		out = append(out, s.txnIndex.all()...)
	}
	return out
}

// sortSearchSegments is the index of the last segment whose base offset is
// <= offset, or -1.
func sortSearchSegments(segs []*segment, offset int64) int {
	i, found := slices.BinarySearchFunc(segs, offset, func(s *segment, off int64) int {
		switch {
		case s.baseOffset < off:
			return -1
		case s.baseOffset > off:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return i - 1
}
