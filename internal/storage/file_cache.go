package storage

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// FileCache bounds how many segment and index files the logs of a process
// hold open, like pebble's table cache: a node with 100,000 partitions has
// at least 300,000 such files, far more than RLIMIT_NOFILE allows. Each
// file is a cachedFile that keeps its path; the cache closes the least
// recently used idle ones when more than Capacity are open, and a later
// use reopens the file. A file someone is using (an append, a read, a
// recovery scan) is never closed under them: each use holds a reference,
// and only files without references are idle.
//
// A partition under steady appends or reads stays in the cache, so its hot
// path is a reference count (an atomic add while someone else also holds
// the file, a short critical section on the cache's mutex otherwise) and
// never a reopen.
//
// Capacity is a soft bound: when every open file is in use the cache opens
// one more rather than fail, and shrinks back as they go idle.
type FileCache struct {
	capacity int
	mu       struct {
		sync.Mutex
		open int        // files with an open descriptor, in use or idle
		lru  cachedFile // sentinel of the idle list; lru.next is the most recent
	}
	// held counts references taken by FileSlices, which last until the
	// network has sent them; holdForSlice bounds them to half the
	// capacity, so that files in use never crowd out the rest.
	held      atomic.Int64
	opens     atomic.Int64 // descriptors opened, for tests and the scale benchmark
	evictions atomic.Int64
	syncs     atomic.Int64 // fsyncs done (Sync of a clean file does none)
}

// DefaultMaxOpenFiles is the capacity NewFileCache(0) picks: half of the
// process's RLIMIT_NOFILE (Go raises the soft limit to the hard one at
// start), leaving the other half to sockets, the metadata log, snapshots
// and checkpoints; at least 16 and at most 1,000,000.
func DefaultMaxOpenFiles() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return int(min(max(lim.Cur/2, 16), 1_000_000))
}

// NewFileCache returns a cache holding at most capacity open files (the
// broker's samsa.log.max.open.files); 0 means DefaultMaxOpenFiles.
func NewFileCache(capacity int) *FileCache {
	if capacity <= 0 {
		capacity = DefaultMaxOpenFiles()
	}
	c := &FileCache{capacity: capacity}
	c.mu.lru.next, c.mu.lru.prev = &c.mu.lru, &c.mu.lru
	return c
}

var (
	defaultFileCacheOnce sync.Once
	defaultFileCache     *FileCache
)

// sharedFileCache is the cache of logs whose LogConfig names none (tests,
// tools): one per process, because the descriptor limit is per process.
func sharedFileCache() *FileCache {
	defaultFileCacheOnce.Do(func() { defaultFileCache = NewFileCache(0) })
	return defaultFileCache
}

// holdForSlice reserves a reference for a FileSlice, unless slices hold
// half of the capacity already; unholdForSlice gives it back.
func (c *FileCache) holdForSlice() bool {
	if c.held.Add(1) > int64(max(c.capacity/2, 1)) {
		c.held.Add(-1)
		return false
	}
	return true
}

func (c *FileCache) unholdForSlice() { c.held.Add(-1) }

// Capacity is the bound on open files.
func (c *FileCache) Capacity() int { return c.capacity }

// FileCacheStats are counters of a FileCache.
type FileCacheStats struct {
	Open      int   // descriptors open now
	Opens     int64 // descriptors opened since the cache was made
	Evictions int64 // idle descriptors closed to make room
	Syncs     int64 // fsyncs of files
}

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return FileCacheStats{Open: c.mu.open, Opens: c.opens.Load(), Evictions: c.evictions.Load(), Syncs: c.syncs.Load()}
}

// cachedFile is a file the FileCache may close while idle and reopen on
// demand (with O_RDWR: it must still exist under its path).
//
// refs counts users. It moves between 0 and 1 only with the cache's mutex
// held, and above 1 with atomics alone, so a file with references can be
// used without the mutex while nothing can close it. The fields below refs
// are guarded by the cache's mutex; f is atomic so that a user holding a
// reference can read it without the mutex.
type cachedFile struct {
	cache *FileCache
	refs  atomic.Int32
	f     atomic.Pointer[os.File]

	path       string
	closed     bool
	prev, next *cachedFile // in the idle list when f != nil, refs == 0 and !closed

	// dirty is set after every write, truncation, creation or rename and
	// cleared by Sync, which skips the fsync of a clean file: a clean stop
	// of a node whose partitions are idle then costs no fsync per file.
	dirty atomic.Bool
}

// openCachedFile opens path with flag (os.O_CREATE, os.O_EXCL and the like
// apply to this first open only) and hands the descriptor to c.
func (c *FileCache) openCachedFile(path string, flag int) (*cachedFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.openFileLocked(path, flag)
	if err != nil {
		return nil, err
	}
	x := &cachedFile{cache: c, path: path}
	x.f.Store(f)
	x.dirty.Store(flag&os.O_CREATE != 0)
	c.mu.open++
	c.pushIdleLocked(x)
	c.evictLocked()
	return x, nil
}

// unopenedCachedFile hands an existing file to c without opening it: the
// first use opens it (with O_RDWR), like a file the cache closed.
func (c *FileCache) unopenedCachedFile(path string) *cachedFile {
	return &cachedFile{cache: c, path: path}
}

// openFileLocked opens a file; when the process is out of descriptors it
// closes half of the idle files and tries once more.
func (c *FileCache) openFileLocked(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag, 0o644)
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		c.shrinkLocked(c.mu.open / 2)
		f, err = os.OpenFile(path, flag, 0o644)
	}
	if err == nil {
		c.opens.Add(1)
	}
	return f, err
}

func (c *FileCache) pushIdleLocked(x *cachedFile) {
	x.prev, x.next = &c.mu.lru, c.mu.lru.next
	x.prev.next, x.next.prev = x, x
}

func (c *FileCache) removeIdleLocked(x *cachedFile) {
	if x.next == nil {
		return
	}
	x.prev.next, x.next.prev = x.next, x.prev
	x.prev, x.next = nil, nil
}

// evictLocked closes the least recently used idle files until at most
// capacity are open.
func (c *FileCache) evictLocked() { c.shrinkLocked(c.capacity) }

func (c *FileCache) shrinkLocked(target int) {
	for c.mu.open > target {
		x := c.mu.lru.prev
		if x == &c.mu.lru {
			return // every open file is in use
		}
		c.removeIdleLocked(x)
		x.f.Swap(nil).Close()
		c.mu.open--
		c.evictions.Add(1)
	}
}

// acquire returns the open descriptor, reopening it if the cache closed
// it, and takes a reference that release gives back.
func (x *cachedFile) acquire() (*os.File, error) {
	for r := x.refs.Load(); r > 0; r = x.refs.Load() {
		if x.refs.CompareAndSwap(r, r+1) {
			return x.f.Load(), nil
		}
	}
	c := x.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	// With the mutex held refs cannot drop to 0, nor leave 0 but here.
	if x.refs.Load() > 0 {
		x.refs.Add(1)
		return x.f.Load(), nil
	}
	if x.closed {
		return nil, fmt.Errorf("%s: %w", x.path, os.ErrClosed)
	}
	f := x.f.Load()
	if f != nil {
		c.removeIdleLocked(x)
	} else {
		// Reopening under the mutex keeps the path stable against rename.
		var err error
		if f, err = c.openFileLocked(x.path, os.O_RDWR); err != nil {
			return nil, err
		}
		x.f.Store(f)
		c.mu.open++
		c.evictLocked()
	}
	// Published only now: a lock-free acquire must find f set.
	x.refs.Store(1)
	return f, nil
}

// release gives back a reference taken by acquire. The last one makes the
// file idle (or closes it, if close was called meanwhile).
func (x *cachedFile) release() {
	for r := x.refs.Load(); r > 1; r = x.refs.Load() {
		if x.refs.CompareAndSwap(r, r-1) {
			return
		}
	}
	c := x.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if x.refs.Add(-1) > 0 {
		return
	}
	if x.closed {
		if f := x.f.Swap(nil); f != nil {
			f.Close()
			c.mu.open--
		}
		return
	}
	c.pushIdleLocked(x)
	c.evictLocked()
}

// ReadAt is os.File.ReadAt; cachedFile is an io.ReaderAt.
func (x *cachedFile) ReadAt(b []byte, off int64) (int, error) {
	f, err := x.acquire()
	if err != nil {
		return 0, err
	}
	defer x.release()
	return f.ReadAt(b, off)
}

func (x *cachedFile) WriteAt(b []byte, off int64) (int, error) {
	f, err := x.acquire()
	if err != nil {
		return 0, err
	}
	defer x.release()
	defer x.dirty.Store(true) // after the write: a Sync that sees it covers it
	return f.WriteAt(b, off)
}

func (x *cachedFile) Truncate(size int64) error {
	f, err := x.acquire()
	if err != nil {
		return err
	}
	defer x.release()
	defer x.dirty.Store(true)
	return f.Truncate(size)
}

// Sync fsyncs the file if it changed since the last Sync: writes that
// returned before Sync was called are durable when it returns. A file that
// the cache closed is reopened for it: on Linux fsync writes back every
// dirty page of the file, whichever descriptor wrote it, and a write-back
// error nobody has seen yet is reported to a descriptor opened after it.
func (x *cachedFile) Sync() error {
	if !x.dirty.Swap(false) {
		return nil
	}
	f, err := x.acquire()
	if err == nil {
		err = f.Sync()
		x.release()
		x.cache.syncs.Add(1)
	}
	if err != nil {
		x.dirty.Store(true)
	}
	return err
}

// isDirty reports changes that Sync has not made durable yet.
func (x *cachedFile) isDirty() bool { return x.dirty.Load() }

func (x *cachedFile) Stat() (os.FileInfo, error) {
	f, err := x.acquire()
	if err != nil {
		return nil, err
	}
	defer x.release()
	return f.Stat()
}

// Name is the file's current path.
func (x *cachedFile) Name() string {
	x.cache.mu.Lock()
	defer x.cache.mu.Unlock()
	return x.path
}

// rename moves the file to path; open descriptors stay valid.
func (x *cachedFile) rename(path string) error {
	x.cache.mu.Lock()
	defer x.cache.mu.Unlock()
	if x.path == path {
		return nil
	}
	if err := os.Rename(x.path, path); err != nil {
		return err
	}
	x.path = path
	x.dirty.Store(true) // the next flush syncs it and its directory
	return nil
}

// Close closes the file for good: now if nobody uses it, else when the
// last user releases it. Later uses fail with os.ErrClosed.
func (x *cachedFile) Close() error {
	c := x.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	if x.refs.Load() > 0 {
		return nil
	}
	c.removeIdleLocked(x)
	if f := x.f.Swap(nil); f != nil {
		c.mu.open--
		return f.Close()
	}
	return nil
}
