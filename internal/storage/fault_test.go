package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// A failed write or fsync takes the log offline, as Kafka takes a log
// directory offline on its first IOException: the error is ErrStorage
// (KAFKA_STORAGE_ERROR at the API boundary) and stays so after the fault
// clears, because what the files hold after a failed write or fsync is no
// longer known. Reopening the log (a restart) recovers what was written
// before the fault and serves appends again.
func TestStorageFaultTakesLogOffline(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   string // the operation that fails
		cfg  LogConfig
	}{
		{"write ENOSPC", "write", LogConfig{}},
		{"fsync EIO", "sync", LogConfig{FlushMessages: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "orders-0")
			var faulty atomic.Bool
			errno := syscall.ENOSPC
			if tc.op == "sync" {
				errno = syscall.EIO
			}
			cfg := tc.cfg
			cfg.Fault = func(op, path string) error {
				if faulty.Load() && op == tc.op {
					return &os.PathError{Op: op, Path: path, Err: errno}
				}
				return nil
			}
			l := openLog(t, dir, cfg)
			var want []byte
			for range 3 {
				b := makeBatch(t, 2, 1000, 10)
				mustAppend(t, l, b)
				want = append(want, b...)
			}

			faulty.Store(true)
			_, err := l.Append(makeBatch(t, 1, 1000, 10))
			if !errors.Is(err, ErrStorage) || !errors.Is(err, errno) {
				t.Fatalf("append during the fault = %v, want ErrStorage wrapping %v", err, errno)
			}
			faulty.Store(false)
			if _, err := l.Append(makeBatch(t, 1, 1000, 10)); !errors.Is(err, ErrStorage) {
				t.Fatalf("append after the fault cleared = %v, want ErrStorage: the log stays offline", err)
			}
			if _, err := l.Read(0, 1<<20, 100); !errors.Is(err, ErrStorage) {
				t.Fatalf("read of the offline log = %v, want ErrStorage", err)
			}
			if err := l.Flush(); !errors.Is(err, ErrStorage) {
				t.Fatalf("flush of the offline log = %v, want ErrStorage", err)
			}
			if err := l.Close(); !errors.Is(err, ErrStorage) {
				t.Fatalf("close of the offline log = %v, want ErrStorage (no clean shutdown)", err)
			}

			l = openLog(t, dir, cfg)
			got, err := l.Read(0, 1<<20, l.LogEndOffset())
			if tc.op == "write" {
				// The failed append left nothing behind.
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("after reopening: %d bytes, %v; want the %d bytes appended before the fault", len(got), err, len(want))
				}
			} else if err != nil || !bytes.HasPrefix(got, want) {
				// An fsync failure may or may not have lost the last
				// append; everything before it is there.
				t.Fatalf("after reopening: %d bytes, %v; want the %d bytes appended before the fault first", len(got), err, len(want))
			}
			leo := l.LogEndOffset()
			if off := mustAppend(t, l, makeBatch(t, 1, 1000, 10)); off != leo {
				t.Fatalf("append after reopening at %d, want %d", off, leo)
			}
		})
	}
}

// The first failure of any log takes its whole log directory offline, as
// Kafka does: the other logs there answer ErrStorage without failing
// themselves, new logs go to the directories still online, and the owner
// is told how many remain.
func TestStorageFaultTakesDirectoryOffline(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	var faultPath atomic.Value // string: the log dir whose writes fail
	faultPath.Store("")
	type failure struct {
		dir    string
		online int
	}
	failures := make(chan failure, 2)
	m, err := NewLogManager(ManagerConfig{Dirs: dirs, CheckpointInterval: -1, RetentionCheckInterval: -1, CleanerThreads: -1,
		DefaultLogConfig: LogConfig{Fault: func(op, path string) error {
			if p := faultPath.Load().(string); p != "" && strings.HasPrefix(path, p) {
				return &os.PathError{Op: op, Path: path, Err: syscall.ENOSPC}
			}
			return nil
		}},
		OnDirFailure: func(dir string, _ error, online int) { failures <- failure{dir, online} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	logs := map[string]*Log{}
	dirOf := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		l, err := m.GetOrCreate(name, 0, [16]byte{}, LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		logs[name], dirOf[name] = l, filepath.Dir(l.Dir())
		mustAppend(t, l, makeBatch(t, 1, 1000, 10))
	}
	// a and c share a directory (placement alternates), b has the other.
	if dirOf["a"] != dirOf["c"] || dirOf["a"] == dirOf["b"] {
		t.Fatalf("placement %v", dirOf)
	}

	faultPath.Store(logs["a"].Dir())
	if _, err := logs["a"].Append(makeBatch(t, 1, 1000, 10)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append to a during the fault = %v, want ErrStorage", err)
	}
	faultPath.Store("")
	if f := <-failures; f.dir != dirOf["a"] || f.online != 1 {
		t.Fatalf("OnDirFailure(%s, online %d), want (%s, 1)", f.dir, f.online, dirOf["a"])
	}
	if _, err := logs["c"].Append(makeBatch(t, 1, 1000, 10)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append to c, in the offline directory = %v, want ErrStorage", err)
	}
	if _, err := logs["b"].Append(makeBatch(t, 1, 1000, 10)); err != nil {
		t.Fatalf("append to b, in the online directory: %v", err)
	}
	if got := m.OfflineDirs(); !slices.Equal(got, []string{dirOf["a"]}) {
		t.Fatalf("OfflineDirs = %v", got)
	}
	d, err := m.GetOrCreate("d", 0, [16]byte{}, LogConfig{})
	if err != nil || filepath.Dir(d.Dir()) != dirOf["b"] {
		t.Fatalf("new log placed in %v (err %v), want the online directory %s", d, err, dirOf["b"])
	}

	faultPath.Store(logs["b"].Dir())
	if _, err := logs["b"].Append(makeBatch(t, 1, 1000, 10)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append to b during the fault = %v", err)
	}
	if f := <-failures; f.dir != dirOf["b"] || f.online != 0 {
		t.Fatalf("OnDirFailure(%s, online %d), want (%s, 0)", f.dir, f.online, dirOf["b"])
	}
	if _, err := m.GetOrCreate("e", 0, [16]byte{}, LogConfig{}); !errors.Is(err, ErrStorage) {
		t.Fatalf("GetOrCreate with every directory offline = %v, want ErrStorage", err)
	}
}
