package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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
