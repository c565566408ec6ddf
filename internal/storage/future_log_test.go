package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFutureLogRecovery: after a crash, a future log beside its current
// log is loaded as the future log again; one whose current log was
// already renamed for deletion (the crash fell between the two renames of
// the swap) becomes the current log, with its records and topic id.
func TestFutureLogRecovery(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	id := RandomUUID()
	m := newManager(t, dirs)
	for p := int32(0); p < 2; p++ {
		l, err := m.GetOrCreate("orders", p, id, LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, makeBatch(t, 3, 1000, 10))
	}
	futDir := map[int32]string{}
	for p := int32(0); p < 2; p++ {
		cur, _ := m.DirOf("orders", p)
		to := dirs[0]
		if cur == to {
			to = dirs[1]
		}
		f, created, err := m.CreateFuture("orders", p, to)
		if err != nil || !created {
			t.Fatalf("CreateFuture: %v, %v", created, err)
		}
		mustAppend(t, f, makeBatch(t, 3, 1000, 10))
		futDir[p] = to
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The crash: partition 1's current log was renamed for deletion.
	cur1, _ := filepath.Glob(filepath.Join(dirs[0], "orders-1"))
	cur1b, _ := filepath.Glob(filepath.Join(dirs[1], "orders-1"))
	doomed := append(cur1, cur1b...)
	if len(doomed) != 1 {
		t.Fatalf("orders-1 directories: %v", doomed)
	}
	if err := os.Rename(doomed[0], doomed[0]+".00000000000000000000000000000000-delete"); err != nil {
		t.Fatal(err)
	}

	m = newManager(t, dirs)
	defer m.Close()
	if f, dir, ok := m.Future("orders", 0); !ok || dir != futDir[0] || f.LogEndOffset() != 3 {
		t.Fatalf("future log of orders-0 after restart: %v in %q", ok, dir)
	}
	if _, _, ok := m.Future("orders", 1); ok {
		t.Fatal("orders-1 still has a future log")
	}
	l, ok := m.Get("orders", 1)
	if !ok || filepath.Dir(l.Dir()) != futDir[1] || l.LogEndOffset() != 3 {
		t.Fatalf("orders-1 after restart: %v", ok)
	}
	if got, has := l.TopicID(); !has || got != id {
		t.Fatalf("orders-1 topic id %v, %v", got, has)
	}
	if _, err := os.Stat(doomed[0]); !os.IsNotExist(err) {
		t.Fatalf("old orders-1: %v", err)
	}
}

func TestResolveDir(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := newManager(t, dirs)
	defer m.Close()
	if d, err := m.ResolveDir(dirs[1] + "/"); err != nil || d != dirs[1] {
		t.Fatalf("ResolveDir(%s/): %q, %v", dirs[1], d, err)
	}
	if _, err := m.ResolveDir("/nowhere"); !errors.Is(err, kerr.LogDirNotFound) {
		t.Fatalf("ResolveDir(/nowhere): %v", err)
	}
	m.dirFailed(dirs[0], errors.New("disk gone"))
	if _, err := m.ResolveDir(dirs[0]); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("ResolveDir of an offline directory: %v", err)
	}
	if _, err := m.GetOrCreate("orders", 0, RandomUUID(), LogConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.CreateFuture("orders", 0, dirs[1]); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("CreateFuture while a directory is offline: %v", err)
	}
}
