package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/samsa-io/samsa/internal/record"
)

// Producer state snapshots (Kafka's ProducerStateManager files). The
// partition layer owns the producer state; this file gives it Kafka's file
// format, a place in the partition directory, and the lifecycle that ties
// snapshots to segments: they are named by an offset like segments, deleted
// with the segments below them by retention, and invalidated by
// truncation.
//
// File "<offset, %020d>.snapshot" holds the state of every producer after
// all batches below offset:
//
//	+---------+-------------+---------------+--------------------------+
//	| version | crc         | entries count | entries                  |
//	| int16=1 | uint32      | int32         | 46 bytes each            |
//	+---------+-------------+---------------+--------------------------+
//	  crc: CRC-32C of everything after the crc field
//
//	entry: producerId int64, epoch int16, lastSequence int32,
//	       lastOffset int64, offsetDelta int32 (last - first offset of the
//	       producer's last batch), timestamp int64 (that batch's max
//	       timestamp), coordinatorEpoch int32, currentTxnFirstOffset int64
//	       (-1: no open transaction)
//
// All integers are big-endian, as Kafka's schema writes them.

const (
	producerSnapshotSuffix  = ".snapshot"
	producerSnapshotVersion = 1
	producerSnapshotHeader  = 2 + 4 + 4 // version, crc, entries count
	producerSnapshotEntry   = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	// keptProducerSnapshots bounds the snapshots a partition keeps: the
	// newest is what a restart loads, older ones serve only when it is
	// corrupt or was invalidated by truncation.
	keptProducerSnapshots = 3
)

// ErrCorruptSnapshot is returned for a snapshot file that fails its
// version, length or CRC checks.
var ErrCorruptSnapshot = errors.New("corrupt producer state snapshot")

// ProducerSnapshotEntry is one producer's state in a snapshot file.
type ProducerSnapshotEntry struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32
	LastOffset            int64
	OffsetDelta           int32
	Timestamp             int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// EncodeProducerSnapshot returns the snapshot file bytes for entries.
func EncodeProducerSnapshot(entries []ProducerSnapshotEntry) []byte {
	b := make([]byte, producerSnapshotHeader, producerSnapshotHeader+len(entries)*producerSnapshotEntry)
	binary.BigEndian.PutUint16(b, producerSnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.LastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.OffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32c))
	return b
}

// DecodeProducerSnapshot parses snapshot file bytes.
func DecodeProducerSnapshot(b []byte) ([]ProducerSnapshotEntry, error) {
	if len(b) < producerSnapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptSnapshot, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != producerSnapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorruptSnapshot, v)
	}
	if stored, computed := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], crc32c); stored != computed {
		return nil, fmt.Errorf("%w: stored CRC %#x, computed %#x", ErrCorruptSnapshot, stored, computed)
	}
	n := int32(binary.BigEndian.Uint32(b[6:]))
	if n < 0 || int64(len(b)-producerSnapshotHeader) != int64(n)*producerSnapshotEntry {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorruptSnapshot, n, len(b))
	}
	out := make([]ProducerSnapshotEntry, n)
	p := b[producerSnapshotHeader:]
	for i := range out {
		out[i] = ProducerSnapshotEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(p)),
			Epoch:                 int16(binary.BigEndian.Uint16(p[8:])),
			LastSequence:          int32(binary.BigEndian.Uint32(p[10:])),
			LastOffset:            int64(binary.BigEndian.Uint64(p[14:])),
			OffsetDelta:           int32(binary.BigEndian.Uint32(p[22:])),
			Timestamp:             int64(binary.BigEndian.Uint64(p[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(p[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(p[38:])),
		}
		p = p[producerSnapshotEntry:]
	}
	return out, nil
}

// ProducerSnapshotGeneration changes whenever the log is truncated. A
// snapshot taken before a truncation may describe batches that are gone,
// so WriteProducerSnapshot drops it unless the generation is unchanged.
func (l *Log) ProducerSnapshotGeneration() int64 { return l.snapGen.Load() }

// WriteProducerSnapshot writes the snapshot named offset, holding the
// state after every batch below offset, taken when the log's
// ProducerSnapshotGeneration was gen; a truncation since makes it a no-op.
// The file is written under a temporary name, fsynced and renamed, so a
// crash never leaves a torn snapshot under a live name. Only the newest
// few snapshots are kept.
func (l *Log) WriteProducerSnapshot(offset, gen int64, entries []ProducerSnapshotEntry) error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	if l.snapGen.Load() != gen {
		return nil
	}
	if segs := l.segments(); len(entries) == 0 && offset == l.leo.Load() && offset == segs[0].baseOffset {
		// A log without a batch has no producer state: loading it
		// without a snapshot replays nothing. Skipping the file saves
		// two fsyncs per idle partition at a clean stop.
		return nil
	}
	l.snapListed = nil
	name := segmentFileName(l.dir, offset, producerSnapshotSuffix)
	tmp := name + ".tmp"
	if err := writeFileSync(tmp, EncodeProducerSnapshot(entries)); err != nil {
		return fmt.Errorf("write producer snapshot %s: %w", name, err)
	}
	if err := errors.Join(os.Rename(tmp, name), syncDir(l.dir)); err != nil {
		return fmt.Errorf("write producer snapshot %s: %w", name, err)
	}
	offsets, err := l.producerSnapshotOffsets()
	if err != nil {
		return err
	}
	for len(offsets) > keptProducerSnapshots {
		if err := l.removeProducerSnapshot(offsets[0]); err != nil {
			return err
		}
		offsets = offsets[1:]
	}
	return nil
}

// WriteProducerSnapshotAsync is WriteProducerSnapshot in a goroutine the
// log joins on close, so that a segment roll does not wait for an fsync.
func (l *Log) WriteProducerSnapshotAsync(offset, gen int64, entries []ProducerSnapshotEntry) {
	l.snapWrites.Add(1)
	go func() {
		defer l.snapWrites.Done()
		if err := l.WriteProducerSnapshot(offset, gen, entries); err != nil {
			l.logger.Error("producer state snapshot", "offset", offset, "err", err)
		}
	}()
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	return errors.Join(err, f.Sync(), f.Close())
}

// ProducerSnapshotOffsets lists the offsets of the snapshot files, oldest
// first.
func (l *Log) ProducerSnapshotOffsets() ([]int64, error) {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	return l.producerSnapshotOffsets()
}

// producerSnapshotOffsets lists the snapshots; the caller holds snapMu.
// Until a snapshot is written or removed, the listing the log made when
// it opened (listSegments) answers: the partition's first load of its
// producer state then lists no directory again.
func (l *Log) producerSnapshotOffsets() ([]int64, error) {
	if l.snapListed != nil {
		return slices.Clone(*l.snapListed), nil
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		if off, ok := producerSnapshotOffset(e.Name()); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}

// producerSnapshotOffset is the offset a snapshot file's name holds.
func producerSnapshotOffset(name string) (int64, bool) {
	if !strings.HasSuffix(name, producerSnapshotSuffix) {
		return 0, false
	}
	return parseBaseOffset(name, producerSnapshotSuffix)
}

// ReadProducerSnapshot reads the snapshot named offset.
func (l *Log) ReadProducerSnapshot(offset int64) ([]ProducerSnapshotEntry, error) {
	b, err := os.ReadFile(segmentFileName(l.dir, offset, producerSnapshotSuffix))
	if err != nil {
		return nil, err
	}
	entries, err := DecodeProducerSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(segmentFileName(l.dir, offset, producerSnapshotSuffix)), err)
	}
	return entries, nil
}

// DeleteProducerSnapshot removes the snapshot named offset (a corrupt one,
// or one that no longer matches the log).
func (l *Log) DeleteProducerSnapshot(offset int64) error {
	l.snapMu.Lock()
	defer l.snapMu.Unlock()
	return l.removeProducerSnapshot(offset)
}

func (l *Log) removeProducerSnapshot(offset int64) error {
	l.snapListed = nil
	err := os.Remove(segmentFileName(l.dir, offset, producerSnapshotSuffix))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// deleteProducerSnapshotsLocked removes the snapshots for which drop
// holds; the caller holds snapMu.
func (l *Log) deleteProducerSnapshotsLocked(drop func(offset int64) bool) error {
	offsets, err := l.producerSnapshotOffsets()
	if err != nil {
		return err
	}
	for _, off := range offsets {
		if drop(off) {
			if err := l.removeProducerSnapshot(off); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetCloseHook registers fn, called once when the log is closed cleanly,
// after appends have stopped and before its files are closed: the
// partition layer writes its final producer snapshot there, as Kafka does
// on a clean shutdown. fn must not call back into methods that take the
// log's locks other than the producer snapshot methods.
func (l *Log) SetCloseHook(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.closeHook = fn
}

// ScanBatchHeaders calls fn with the header of every batch whose last
// offset is >= from, in offset order up to the log end, reading headers
// only (Kafka rebuilds producer state the same way). Appends may run
// concurrently; batches appended during the scan may or may not be seen.
func (l *Log) ScanBatchHeaders(from int64, fn func(h record.Header) error) error {
	return l.ScanBatchHeadersAndControl(from, func(h record.Header, _ []byte) error { return fn(h) })
}

// ScanBatchHeadersAndControl is ScanBatchHeaders that also reads control
// batches (transaction markers) whole and passes them as control (nil for
// other batches): replaying transactions needs the marker's type, which
// is in its record. Control batches are tiny, so this costs little more.
func (l *Log) ScanBatchHeadersAndControl(from int64, fn func(h record.Header, control []byte) error) error {
	l.structMu.RLock()
	defer l.structMu.RUnlock()
	if l.closed.Load() {
		return ErrClosed
	}
	segs := l.segments()
	i, _ := slices.BinarySearchFunc(segs, from, func(s *segment, off int64) int {
		switch {
		case s.baseOffset > off:
			return 1
		case s.baseOffset < off:
			return -1
		}
		return 0
	})
	if i == len(segs) || segs[i].baseOffset > from {
		i = max(i-1, 0)
	}
	var buf [record.HeaderSize]byte
	var control []byte
	for _, s := range segs[i:] {
		end := s.size.Load()
		r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, end), 64<<10)
		for pos := int64(0); pos < end; {
			if _, err := io.ReadFull(r, buf[:]); err != nil {
				return fmt.Errorf("scan segment %d at position %d: %w", s.baseOffset, pos, err)
			}
			h, err := record.ParseHeader(buf[:])
			if err != nil {
				return fmt.Errorf("scan segment %d at position %d: %w", s.baseOffset, pos, err)
			}
			var ctl []byte
			if h.Control() && h.Size() <= 1<<20 {
				control = append(control[:0], buf[:]...)
				control = append(control, make([]byte, h.Size()-record.HeaderSize)...)
				if _, err := io.ReadFull(r, control[record.HeaderSize:]); err != nil {
					return fmt.Errorf("scan segment %d at position %d: %w", s.baseOffset, pos, err)
				}
				ctl = control
			} else if _, err := r.Discard(h.Size() - record.HeaderSize); err != nil {
				return fmt.Errorf("scan segment %d at position %d: %w", s.baseOffset, pos, err)
			}
			pos += int64(h.Size())
			if h.LastOffset() < from {
				continue
			}
			if err := fn(h, ctl); err != nil {
				return err
			}
		}
	}
	return nil
}
