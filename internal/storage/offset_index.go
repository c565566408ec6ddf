package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

const offsetIndexEntrySize = 8 // int32 relative offset, int32 position

// offsetIndex maps offsets to file positions in one segment (Kafka's
// OffsetIndex). Each entry is (last offset of a batch - base offset, position
// where that batch starts); lookup gives a position at or before the batch
// holding an offset, from which a short scan of batch headers finds it.
type offsetIndex struct {
	*indexFile
	baseOffset int64
	lastOffset int64 // offset of the last entry; baseOffset when empty (writer only)
}

// indexEntry is a decoded offset index entry.
type indexEntry struct {
	offset   int64
	position int64
}

func openOffsetIndex(c *FileCache, path string, baseOffset int64) (*offsetIndex, error) {
	f, err := openIndexFile(c, path, offsetIndexEntrySize)
	if f == nil {
		return nil, err
	}
	x := &offsetIndex{indexFile: f, baseOffset: baseOffset, lastOffset: baseOffset}
	if err != nil {
		return x, err
	}
	return x, x.sanityCheck()
}

func (x *offsetIndex) decode(b []byte) indexEntry {
	return indexEntry{
		offset:   x.baseOffset + int64(int32(binary.BigEndian.Uint32(b))),
		position: int64(int32(binary.BigEndian.Uint32(b[4:]))),
	}
}

// sanityCheck loads the last entry and rejects an index that cannot belong
// to its segment, as Kafka's OffsetIndex.sanityCheck does.
func (x *offsetIndex) sanityCheck() error {
	n := x.entries()
	if n == 0 {
		x.lastOffset = x.baseOffset
		return nil
	}
	buf := make([]byte, offsetIndexEntrySize)
	if err := x.read(n-1, buf); err != nil {
		return err
	}
	e := x.decode(buf)
	// Kafka's rule: the last offset may equal the base offset (a first
	// batch larger than index.interval.bytes is indexed at position 0).
	if e.offset < x.baseOffset || e.position < 0 {
		return fmt.Errorf("%w: %s: last entry (offset %d, position %d) is below base offset %d",
			errCorruptIndex, x.path, e.offset, e.position, x.baseOffset)
	}
	x.lastOffset = e.offset
	return nil
}

// lastEntry returns the last entry, or (baseOffset, 0) when there is none.
func (x *offsetIndex) lastEntry() (indexEntry, error) {
	n := x.entries()
	if n == 0 {
		return indexEntry{offset: x.baseOffset}, nil
	}
	buf := make([]byte, offsetIndexEntrySize)
	if err := x.read(n-1, buf); err != nil {
		return indexEntry{}, err
	}
	return x.decode(buf), nil
}

// lookup returns the last entry with offset <= target, or (baseOffset, 0).
func (x *offsetIndex) lookup(target int64) (indexEntry, error) {
	rel := target - x.baseOffset
	if rel > math.MaxInt32 {
		rel = math.MaxInt32
	}
	i, buf, err := x.search(rel, func(b []byte) int64 { return int64(int32(binary.BigEndian.Uint32(b))) })
	if err != nil || i < 0 {
		return indexEntry{offset: x.baseOffset}, err
	}
	return x.decode(buf), nil
}

// append adds an entry; offsets must increase strictly.
func (x *offsetIndex) append(offset, position int64) error {
	if x.entries() > 0 && offset <= x.lastOffset {
		return fmt.Errorf("offset index %s: entry offset %d is not after last entry %d", x.path, offset, x.lastOffset)
	}
	var b [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(b[:], uint32(offset-x.baseOffset))
	binary.BigEndian.PutUint32(b[4:], uint32(position))
	if err := x.appendEntry(b[:]); err != nil {
		return err
	}
	x.lastOffset = offset
	return nil
}

// truncateTo removes every entry whose offset is >= offset.
func (x *offsetIndex) truncateTo(offset int64) error {
	i, _, err := x.search(offset-1-x.baseOffset, func(b []byte) int64 { return int64(int32(binary.BigEndian.Uint32(b))) })
	if err != nil {
		return err
	}
	x.truncateEntries(i + 1)
	return x.sanityCheck()
}

// reset drops every entry, before a rebuild.
func (x *offsetIndex) reset() {
	x.truncateEntries(0)
	x.lastOffset = x.baseOffset
}
