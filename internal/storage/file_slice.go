package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"sync/atomic"

	"github.com/samsa-io/samsa/internal/record"
)

// FileSlice is what ReadSlice returns: the bytes Read would return, left
// where they are in a segment file (Kafka's FileRecords.slice), so that
// the network can send them with sendfile(2) without copying them into
// memory. The slice holds a reference on the file: the FileCache does not
// close it, and removing the segment (retention, compaction, a move or
// deletion of the log) closes it only after Release, so its bytes stay
// readable until then. A truncation of the segment (a follower truncating
// its log) can still shorten the file under a slice; a reader then gets
// fewer bytes than Len and must treat the slice as failed.
//
// Slices hold at most half of the FileCache's capacity of files at a
// time (a fetch of many partitions would otherwise keep a descriptor per
// partition and crowd the cache past the process's file limit). Beyond
// that ReadSlice reads the bytes into memory, as Read does: Bytes returns
// them and File returns no file.
type FileSlice struct {
	file *cachedFile
	f    *os.File
	data []byte // the bytes, when read into memory
	pos  int64
	n    int
	// upper is an offset past the slice's last batch and at most the
	// read's bound (Kafka's fetchUpperBoundOffset, which is also loose).
	upper    int64
	released atomic.Bool
}

// Len is the slice's byte count.
func (s *FileSlice) Len() int { return s.n }

// File returns the open file and the position of the slice's first byte;
// no file when the bytes were read into memory (Bytes). The file is
// shared: read it with pread (ReadAt) or sendfile with an explicit
// offset, never through its file offset.
func (s *FileSlice) File() (*os.File, int64) { return s.f, s.pos }

// Bytes returns the slice's bytes when ReadSlice read them into memory,
// else nil.
func (s *FileSlice) Bytes() []byte { return s.data }

// UpperOffset is an offset above the slice's last record and at most the
// bound it was read up to: the end of the range whose aborted
// transactions a read_committed fetch returns with it.
func (s *FileSlice) UpperOffset() int64 { return s.upper }

// Release gives back the slice's reference on its file. Later calls do
// nothing.
func (s *FileSlice) Release() {
	if s.released.CompareAndSwap(false, true) && s.f != nil {
		s.file.release()
		s.file.cache.unholdForSlice()
	}
}

// ReadTo reads the slice's bytes into b, which must be Len bytes long.
// A file shortened under the slice is an error.
func (s *FileSlice) ReadTo(b []byte) error {
	if s.f == nil {
		copy(b, s.data)
		return nil
	}
	n, err := s.f.ReadAt(b[:s.n], s.pos)
	if n == s.n {
		return nil
	}
	return fmt.Errorf("segment file %s: read %d of %d bytes at %d: %v", s.f.Name(), n, s.n, s.pos, err)
}

// ReadSlice is Read without reading: it returns the same batches as a
// slice of their segment file, or nil when Read would return nothing. The
// caller must Release a non-nil slice.
func (l *Log) ReadSlice(offset int64, maxBytes int, maxOffset int64) (*FileSlice, error) {
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
		s, err := segs[i].slice(offset, maxBytes, maxOffset)
		if err != nil || s != nil {
			return s, err
		}
	}
	return nil, nil
}

// slice is read as a FileSlice: the same bytes, found by reading batch
// headers only. The offset index bounds each scan of headers to about
// index.interval.bytes: one scan finds the first batch, one the batch
// that reaches maxOffset, and one the last whole batch within maxBytes.
func (s *segment) slice(offset int64, maxBytes int, maxOffset int64) (*FileSlice, error) {
	end := s.size.Load()
	// Loaded after end: every batch below end ends before next.
	next := s.nextOffset.Load()
	e, err := s.index.lookup(offset)
	if err != nil {
		return nil, err
	}
	pos, h, found, err := s.findBatch(offset, e.position, end)
	if err != nil || !found || h.LastOffset() >= maxOffset {
		return nil, err
	}
	limit := min(pos+max(int64(maxBytes), int64(h.Size())), end)
	upper := min(next, maxOffset)
	aligned := limit == end // a batch boundary
	if next > maxOffset {
		// The first batch reaching maxOffset ends the slice.
		ie, err := s.index.lookup(maxOffset)
		if err != nil {
			return nil, err
		}
		if from := max(pos, ie.position); from < limit {
			bpos, bh, found, err := s.findBatch(maxOffset, from, end)
			if err != nil {
				return nil, err
			}
			if found && bpos <= limit {
				limit, upper, aligned = bpos, bh.BaseOffset, true
			}
		}
	}
	if !aligned {
		// limit may fall inside a batch: end at the last whole one.
		if limit, upper, err = s.lastBoundary(pos, limit, end, upper); err != nil {
			return nil, err
		}
	}
	if !s.log.cache.holdForSlice() {
		buf := make([]byte, limit-pos)
		if _, err := s.log.ReadAt(buf, pos); err != nil {
			return nil, err
		}
		return &FileSlice{data: buf, n: len(buf), upper: upper}, nil
	}
	f, err := s.log.acquire()
	if err != nil {
		s.log.cache.unholdForSlice()
		return nil, err
	}
	return &FileSlice{file: s.log, f: f, pos: pos, n: int(limit - pos), upper: upper}, nil
}

// lastBoundary returns the largest batch boundary at or below limit, at
// least one batch after pos (a batch starts at pos), and the base offset
// of the batch starting there (upper when that is not read).
func (s *segment) lastBoundary(pos, limit, end, upper int64) (int64, int64, error) {
	from := pos
	if e, err := s.lookupPosition(limit); err != nil {
		return 0, 0, err
	} else if e.position > pos {
		from = e.position
	}
	var buf [record.HeaderSize]byte
	for first := from == pos; ; first = false {
		h, err := s.readHeader(from, end, buf[:])
		if err != nil {
			return 0, 0, err
		}
		if !first && from+int64(h.Size()) > limit {
			return from, h.BaseOffset, nil
		}
		from += int64(h.Size())
		if from >= limit {
			return from, upper, nil
		}
	}
}

// lookupPosition returns the last offset index entry whose batch starts
// at or below position, or (baseOffset, 0).
func (s *segment) lookupPosition(position int64) (indexEntry, error) {
	i, buf, err := s.index.search(position, func(b []byte) int64 { return int64(int32(binary.BigEndian.Uint32(b[4:]))) })
	if err != nil || i < 0 {
		return indexEntry{offset: s.baseOffset}, err
	}
	return s.index.decode(buf), nil
}
