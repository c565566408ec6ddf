package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// errCorruptIndex marks an index file that must be rebuilt from its segment.
var errCorruptIndex = errors.New("corrupt index")

// indexFile is what the offset and time indexes share: a file of fixed-size
// entries, preallocated while its segment is active and trimmed to the
// entries actually written when it becomes inactive.
//
// Lookups binary-search the file with pread instead of keeping entries in
// memory or mapping the file: the pages they touch stay in the page cache,
// and an idle partition with many segments costs no heap. Entries below n
// never change while readers may look at them; the writer (holding Log.mu)
// writes entry n and only then publishes n+1.
type indexFile struct {
	path       string
	f          *cachedFile
	entrySize  int
	maxEntries int          // capacity of the file as sized now
	length     int64        // of the file; resize to the same length is a no-op
	n          atomic.Int64 // valid entries
}

// openIndexFile opens or creates path. An existing file's entries are
// trusted up to its length rounded down to whole entries; callers sanity
// check them. A file whose length is not a multiple of the entry size is
// reported as corrupt (Kafka's sanityCheck does the same).
func openIndexFile(c *FileCache, path string, entrySize int) (*indexFile, error) {
	// An existing index is opened without O_CREATE, so that the cache
	// takes it for clean (nothing to fsync at the next flush): a clean
	// stop of idle partitions then fsyncs none of their indexes.
	f, err := c.openCachedFile(path, os.O_RDWR)
	if errors.Is(err, os.ErrNotExist) {
		f, err = c.openCachedFile(path, os.O_RDWR|os.O_CREATE)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	x := &indexFile{path: path, f: f, entrySize: entrySize, length: st.Size()}
	x.maxEntries = int(st.Size()) / entrySize
	x.n.Store(int64(x.maxEntries))
	if st.Size()%int64(entrySize) != 0 {
		return x, fmt.Errorf("%w: %s: size %d is not a multiple of %d", errCorruptIndex, path, st.Size(), entrySize)
	}
	return x, nil
}

// unopenedIndexFile is an index of an empty segment whose file, of
// length bytes, the cache opens on first use; it has no entries.
func unopenedIndexFile(c *FileCache, path string, entrySize int, length int64) *indexFile {
	return &indexFile{path: path, f: c.unopenedCachedFile(path), entrySize: entrySize,
		maxEntries: int(length) / entrySize, length: length}
}

func (x *indexFile) entries() int { return int(x.n.Load()) }

func (x *indexFile) full() bool { return x.entries() >= x.maxEntries }

// read fills buf (one entry) with entry i.
func (x *indexFile) read(i int, buf []byte) error {
	_, err := x.f.ReadAt(buf[:x.entrySize], int64(i)*int64(x.entrySize))
	if err == io.EOF {
		err = fmt.Errorf("%w: %s: entry %d is past the end of the file", errCorruptIndex, x.path, i)
	}
	return err
}

// appendEntry writes entry b after the last one. The caller checks order.
func (x *indexFile) appendEntry(b []byte) error {
	n := x.entries()
	if n >= x.maxEntries {
		return fmt.Errorf("index %s is full (%d entries)", x.path, n)
	}
	if _, err := x.f.WriteAt(b, int64(n)*int64(x.entrySize)); err != nil {
		return err
	}
	x.n.Store(int64(n + 1))
	return nil
}

// truncateEntries keeps the first n entries. The bytes after them are left
// in the (preallocated) file; they are overwritten by later appends and cut
// by trim.
func (x *indexFile) truncateEntries(n int) {
	if n < x.entries() {
		x.n.Store(int64(n))
	}
}

// resize sets the file length to hold maxBytes worth of entries, rounded
// down to whole entries but never below the entries in use.
func (x *indexFile) resize(maxBytes int) error {
	max := maxBytes / x.entrySize
	if n := x.entries(); max < n {
		max = n
	}
	if n := int64(max) * int64(x.entrySize); n != x.length {
		if err := x.f.Truncate(n); err != nil {
			return err
		}
		x.length = n
	}
	x.maxEntries = max
	return nil
}

// trim cuts the preallocated tail so the file holds exactly its entries,
// which is what Kafka's tools expect of an inactive segment's index.
func (x *indexFile) trim() error { return x.resize(x.entries() * x.entrySize) }

// search returns the index of the last entry whose key is <= target, or -1.
// Keys are increasing, so this is a binary search over preads.
func (x *indexFile) search(target int64, key func(buf []byte) int64) (int, []byte, error) {
	buf := make([]byte, x.entrySize)
	lo, hi := 0, x.entries()-1
	if hi < 0 {
		return -1, nil, nil
	}
	// One reference for the whole search, not one per pread.
	if _, err := x.f.acquire(); err != nil {
		return -1, nil, err
	}
	defer x.f.release()
	found := -1
	for lo <= hi {
		mid := int(uint(lo+hi) >> 1)
		if err := x.read(mid, buf); err != nil {
			return -1, nil, err
		}
		if key(buf) <= target {
			found = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if found < 0 {
		return -1, nil, nil
	}
	if err := x.read(found, buf); err != nil {
		return -1, nil, err
	}
	return found, buf, nil
}

func (x *indexFile) sync() error  { return x.f.Sync() }
func (x *indexFile) close() error { return x.f.Close() }
