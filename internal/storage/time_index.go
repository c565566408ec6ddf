package storage

import (
	"encoding/binary"
	"fmt"
)

const timeIndexEntrySize = 12 // int64 timestamp, int32 relative offset

// noTimestamp is Kafka's RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

// timeIndex maps timestamps to offsets in one segment (Kafka's TimeIndex).
// An entry (t, o) says: the largest timestamp in the segment up to and
// including the batch ending at offset o is t, and no earlier batch reaches
// t. Timestamps increase strictly from entry to entry.
type timeIndex struct {
	*indexFile
	baseOffset int64
	last       timeEntry // writer only; (noTimestamp, baseOffset) when empty
}

type timeEntry struct {
	timestamp int64
	offset    int64
}

func openTimeIndex(c *FileCache, path string, baseOffset int64) (*timeIndex, error) {
	f, err := openIndexFile(c, path, timeIndexEntrySize)
	if f == nil {
		return nil, err
	}
	x := &timeIndex{indexFile: f, baseOffset: baseOffset}
	if err != nil {
		x.last = timeEntry{noTimestamp, baseOffset}
		return x, err
	}
	return x, x.sanityCheck()
}

func (x *timeIndex) decode(b []byte) timeEntry {
	return timeEntry{
		timestamp: int64(binary.BigEndian.Uint64(b)),
		offset:    x.baseOffset + int64(int32(binary.BigEndian.Uint32(b[8:]))),
	}
}

// sanityCheck loads the last entry and applies Kafka's TimeIndex checks.
func (x *timeIndex) sanityCheck() error {
	x.last = timeEntry{noTimestamp, x.baseOffset}
	n := x.entries()
	if n == 0 {
		return nil
	}
	buf := make([]byte, timeIndexEntrySize)
	if err := x.read(0, buf); err != nil {
		return err
	}
	first := x.decode(buf)
	if err := x.read(n-1, buf); err != nil {
		return err
	}
	last := x.decode(buf)
	if last.offset < x.baseOffset || last.timestamp < first.timestamp {
		return fmt.Errorf("%w: %s: last entry (%d, %d) is before first (%d, %d) or base offset %d",
			errCorruptIndex, x.path, last.timestamp, last.offset, first.timestamp, first.offset, x.baseOffset)
	}
	x.last = last
	return nil
}

// full keeps one slot free for the entry written when the segment rolls,
// as Kafka's TimeIndex.isFull does.
func (x *timeIndex) full() bool { return x.entries() >= x.maxEntries-1 }

// lookup returns the last entry with timestamp <= target, or
// (noTimestamp, baseOffset).
func (x *timeIndex) lookup(target int64) (timeEntry, error) {
	i, buf, err := x.search(target, func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) })
	if err != nil || i < 0 {
		return timeEntry{noTimestamp, x.baseOffset}, err
	}
	return x.decode(buf), nil
}

// maybeAppend adds (ts, offset) if ts is larger than the last entry's.
// force skips the full check, for the final entry on roll.
func (x *timeIndex) maybeAppend(ts, offset int64, force bool) error {
	if ts <= x.last.timestamp {
		return nil
	}
	if x.entries() > 0 && offset < x.last.offset {
		return fmt.Errorf("time index %s: offset %d is before last entry offset %d", x.path, offset, x.last.offset)
	}
	if !force && x.full() {
		return fmt.Errorf("time index %s is full", x.path)
	}
	var b [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(b[:], uint64(ts))
	binary.BigEndian.PutUint32(b[8:], uint32(offset-x.baseOffset))
	if err := x.appendEntry(b[:]); err != nil {
		return err
	}
	x.last = timeEntry{ts, offset}
	return nil
}

// truncateTo removes every entry whose offset is >= offset. Entry offsets
// are non-decreasing, so a linear scan back from the end stops early.
func (x *timeIndex) truncateTo(offset int64) error {
	buf := make([]byte, timeIndexEntrySize)
	n := x.entries()
	for n > 0 {
		if err := x.read(n-1, buf); err != nil {
			return err
		}
		if x.decode(buf).offset < offset {
			break
		}
		n--
	}
	x.truncateEntries(n)
	return x.sanityCheck()
}

func (x *timeIndex) reset() {
	x.truncateEntries(0)
	x.last = timeEntry{noTimestamp, x.baseOffset}
}
