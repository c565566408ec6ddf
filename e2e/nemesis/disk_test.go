//go:build linux

package nemesis

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// ballastName is the file that fills a node's disk; the log manager
// ignores plain files in a log directory.
const ballastName = "nemesis.ballast"

// mountTmpfs mounts a tmpfs of size (e.g. "512m") on dir and unmounts it
// when the test ends (register it after t.TempDir and before the cluster,
// so the nodes stop first and the directory is removed last).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		for range 20 {
			if err := syscall.Unmount(dir, 0); err == nil || errors.Is(err, syscall.EINVAL) {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		syscall.Unmount(dir, syscall.MNT_DETACH)
	})
}

// fillDisk writes a ballast file into dir until the file system is full
// and returns how many bytes it took.
func fillDisk(dir string) (int64, error) {
	f, err := os.OpenFile(filepath.Join(dir, ballastName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for len(buf) > 0 {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			// Take the last pages with smaller writes.
			buf = buf[:len(buf)/2]
			continue
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// freeDisk removes the ballast.
func freeDisk(dir string) error {
	err := os.Remove(filepath.Join(dir, ballastName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
