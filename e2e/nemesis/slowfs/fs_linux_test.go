package slowfs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/samsa-io/samsa/internal/tmpfstest"
)

// mount serves backing (a new directory when empty) through a slow file
// system for the test, and unmounts it when the test ends.
func mount(t testing.TB, backing string, d *Delay) *FS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a FUSE file system needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	if backing == "" {
		backing = filepath.Join(t.TempDir(), "backing")
		if err := os.Mkdir(backing, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Mount(backing, dir, "slowfs-test", d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// writeSync writes data to a new file and fsyncs it.
func writeSync(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPassthrough: with the delay off the mount behaves as the directory
// underneath, for what the storage engine does: append, pread, fsync a
// file and a directory, rename, truncate, unlink, list, and a shared
// writable mmap.
func TestPassthrough(t *testing.T) {
	fsys := mount(t, "", nil)
	dir, under := fsys.Dir, fsys.Backing
	if err := os.MkdirAll(filepath.Join(dir, "topic-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "topic-0", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("batch-"), 50_000) // 300 kB: several requests
	for range 3 {
		if _, err := f.Write(want); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, int64(len(want))); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("pread through the mount: %v, equal %v", err, bytes.Equal(got, want))
	}
	if err := f.Truncate(int64(2 * len(want))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, err := os.Stat(filepath.Join(under, "topic-0", "00000000000000000000.log")); err != nil || st.Size() != int64(2*len(want)) {
		t.Fatalf("underneath: %v, %v; want %d bytes", st, err, 2*len(want))
	}
	d, err := os.Open(filepath.Join(dir, "topic-0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("fsync of a directory: %v", err)
	}
	d.Close()
	if err := os.Rename(seg, seg+".deleted"); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "topic-0", "*"))
	if err != nil || len(names) != 1 || filepath.Base(names[0]) != "00000000000000000000.log.deleted" {
		t.Fatalf("after the rename: %v %v", names, err)
	}
	if err := os.Remove(seg + ".deleted"); err != nil {
		t.Fatal(err)
	}

	// A shared writable mapping: the pages reach the file underneath.
	idx := filepath.Join(dir, "topic-0", "00000000000000000000.index")
	g, err := os.OpenFile(idx, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Truncate(1 << 16); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(g.Fd()), 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap through FUSE: %v", err)
	}
	copy(m[4096:], "entry")
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatalf("msync: %v", err)
	}
	if err := unix.Munmap(m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(under, "topic-0", "00000000000000000000.index"))
	if err != nil || len(b) != 1<<16 || string(b[4096:4101]) != "entry" {
		t.Fatalf("the mapped write underneath: %v, %d bytes, %q", err, len(b), b[4096:4101])
	}
}

// TestDelayedOps: while the delay is on, each write, fsync and directory
// change waits it (counted by a recording clock, not measured); once it
// is off, nothing does.
func TestDelayedOps(t *testing.T) {
	rec := &recorder{}
	fsys := mount(t, "", &Delay{Sleep: rec.sleep})
	const D = 123 * time.Millisecond
	data := []byte("one record batch")
	path := func(name string) string { return filepath.Join(fsys.Dir, name) }

	writeSync(t, path("before"), data)
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("delay off: %d waits", len(w))
	}

	fsys.Delay.Set(D, All)
	before := fsys.Delay.Counts()
	writeSync(t, path("during"), data) // create, write, fsync
	if err := os.Rename(path("during"), path("renamed")); err != nil {
		t.Fatal(err)
	}
	c := fsys.Delay.Counts().Sub(before)
	if c.Write != 1 || c.Sync != 1 || c.Meta != 2 {
		t.Errorf("all on: delayed %v, want write 1, fsync 1, meta 2 (create, rename)", c)
	}
	for _, w := range rec.take() {
		if w != D {
			t.Errorf("waited %v, want %v", w, D)
		}
	}

	fsys.Delay.Set(D, Sync)
	before = fsys.Delay.Counts()
	writeSync(t, path("sync-only"), data)
	if c := fsys.Delay.Counts().Sub(before); c != (Counts{Sync: 1}) {
		t.Errorf("fsync on: delayed %v, want the fsync only", c)
	}
	rec.take()

	fsys.Delay.Off()
	writeSync(t, path("after"), data)
	if err := os.Remove(path("after")); err != nil {
		t.Fatal(err)
	}
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("delay off again: %d waits", len(w))
	}
	if b, err := os.ReadFile(filepath.Join(fsys.Backing, "renamed")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("what was written while slow: %q %v", b, err)
	}
}

// TestSlowWrite: on the real clock, a write while the delay is on takes
// at least the delay (a lower bound only: the machine may be slower).
func TestSlowWrite(t *testing.T) {
	fsys := mount(t, "", nil)
	f, err := os.Create(filepath.Join(fsys.Dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const D = 150 * time.Millisecond
	fsys.Delay.Set(D, Write)
	start := time.Now()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < D {
		t.Fatalf("a write with a delay of %v took %v", D, took)
	}
	fsys.Delay.Off()
	if c := fsys.Delay.Counts(); c != (Counts{Write: 1}) {
		t.Fatalf("delayed %v, want one write", c)
	}
	if _, err := f.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if c := fsys.Delay.Counts(); c != (Counts{Write: 1}) {
		t.Fatalf("after off: delayed %v, want still one write", c)
	}
}

// TestKilledWhileSlow: a process killed while its write waits dies at
// once (the kernel interrupts the request), not after the delay.
func TestKilledWhileSlow(t *testing.T) {
	fsys := mount(t, "", nil)
	fsys.Delay.Set(10*time.Minute, All)
	cmd := exec.Command("sh", "-c", "echo x > "+filepath.Join(fsys.Dir, "f"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for fsys.Delay.Counts() == (Counts{}) {
		time.Sleep(10 * time.Millisecond) // until it waits in create
	}
	cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a process killed in a delayed create still runs after a minute")
	}
}

// TestFullDisk: a ballast written underneath fills the disk, and writes
// through the mount then fail with ENOSPC, as they would on the disk
// itself; with the ballast gone they succeed again.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	under := tmpfstest.Mount(t, 4<<20)
	fsys := mount(t, under, nil)
	f, err := os.Create(filepath.Join(fsys.Dir, "segment"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ballast := bytes.Repeat([]byte{1}, 8<<20)
	if err := os.WriteFile(filepath.Join(under, "ballast"), ballast, 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
	}
	if _, err := f.Write(make([]byte, 64<<10)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write through the mount on a full disk: %v, want ENOSPC", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(fsys.Dir, &st); err != nil || st.Bavail != 0 {
		t.Fatalf("statfs through the mount: %v, %d blocks free, want 0", err, st.Bavail)
	}
	if err := os.Remove(filepath.Join(under, "ballast")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 64<<10)); err != nil {
		t.Fatalf("a write once the ballast is gone: %v", err)
	}
}

// TestMountsListsIt: the mount shows in mountinfo under its name, and not
// after Unmount.
func TestMountsListsIt(t *testing.T) {
	fsys := mount(t, "", nil)
	has := func() bool {
		ms, err := Mounts()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ms, MountInfo{Dir: fsys.Dir, FSType: "fuse.slowfs", Source: "slowfs-test"})
	}
	if !has() {
		t.Fatal("the mount is not in /proc/self/mountinfo")
	}
	if err := fsys.Unmount(); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Fatal("still mounted after Unmount")
	}
}

func TestParseMountInfo(t *testing.T) {
	in := "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n" +
		"700 30 0:99 / /tmp/a\\040b rw,nosuid,nodev shared:400 - fuse.slowfs samsanem-12-n1 rw,user_id=0\n" +
		"701 30 0:98 / /tmp/x rw - tmpfs samsanem-12-disk1 rw,size=786432k\n"
	got, err := parseMountInfo([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []MountInfo{
		{Dir: "/mnt2", FSType: "ext3", Source: "/dev/root"},
		{Dir: "/tmp/a b", FSType: "fuse.slowfs", Source: "samsanem-12-n1"},
		{Dir: "/tmp/x", FSType: "tmpfs", Source: "samsanem-12-disk1"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
