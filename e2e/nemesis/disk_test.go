//go:build linux

package nemesis

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-io/samsa/e2e/nemesis/slowfs"
)

// ballastName is the file that fills a node's disk; the log manager
// ignores plain files in a log directory.
const ballastName = "nemesis.ballast"

// A node's disk is two mounts: a tmpfs (disk-<id>), small enough to fill
// in a moment, and a slow file system (package slowfs) served by the test
// over it at node-<id>, the node's log.dirs. The node reads and writes
// through the slow file system, whose delay is off except during a
// slow-disk fault; the disk-full ballast goes straight into the tmpfs.
// Both mounts are named nsPrefix<pid>-…, so that a later run can remove
// the ones a killed run left (sweepStaleMounts).

// mountTmpfs mounts a tmpfs of size (e.g. "512m") named source on dir and
// unmounts it when the test ends (register it after t.TempDir and before
// the cluster, so the nodes stop first and the directory is removed last).
func mountTmpfs(t *testing.T, dir, size, source string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(source, dir, "tmpfs", 0, "size="+size); err != nil {
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

// mountSlowDisk serves backing at dir through a slow file system named
// name, with its delay off, and unmounts it when the test ends (register
// it after the tmpfs under it and before the cluster).
func mountSlowDisk(t *testing.T, backing, dir, name string) *slowfs.FS {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := slowfs.Mount(backing, dir, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fsys.Unmount(); err != nil {
			t.Log(err)
		}
	})
	return fsys
}

// sweepStaleMounts unmounts the disks (tmpfs and slow file systems) of
// suite runs whose process is gone. A slow file system whose server died
// fails every access with ENOTCONN; the directories under the killed
// run's temporary directory are left to it.
func sweepStaleMounts(t *testing.T) {
	ms, err := slowfs.Mounts()
	if err != nil {
		t.Logf("listing mounts: %v", err)
		return
	}
	slices.Reverse(ms) // innermost first
	for _, m := range ms {
		rest, ok := strings.CutPrefix(m.Source, nsPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		t.Logf("removing stale mount %s (%s) on %s", m.Source, m.FSType, m.Dir)
		if err := syscall.Unmount(m.Dir, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m.Dir, err)
		}
	}
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
