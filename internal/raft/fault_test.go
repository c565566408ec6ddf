package raft

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// diskFault fails the metadata log's writes and fsyncs whose file name
// matches, while on.
type diskFault struct {
	on    atomic.Bool
	match func(path string) bool
}

func (f *diskFault) hook(op, path string) error {
	if f.on.Load() && f.match(path) {
		return &os.PathError{Op: op, Path: path, Err: syscall.ENOSPC}
	}
	return nil
}

// A full disk must not stop the metadata node for good, and a proposal
// made during the fault is either applied and answered success, or not
// applied and answered an error: never answered an error and applied
// later (here or after a restart). Once space returns, proposals work
// again without a restart.
func TestDiskFullMetadataLogRecovers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(string) bool
	}{
		{"every write", func(string) bool { return true }},
		// The entry reaches the log but quorum-state cannot be saved: the
		// issue's "save quorum-state: no space left on device".
		{"quorum-state only", func(p string) bool {
			return filepath.Base(p) == hardStateFile || filepath.Base(p) == hardStateFile+".tmp"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fault := &diskFault{match: tc.match}
			a := &memApplier{}
			n, err := Open(Config{ID: 1, Dir: dir, Applier: a, Logger: quietLogger(), TickInterval: 10 * time.Millisecond, Fault: fault.hook})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { n.Close() }()
			proposeAll(t, n, "before")

			fault.on.Store(true)
			answers := map[string]error{}
			for _, d := range []string{"during-1", "during-2"} {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := n.Propose(ctx, []byte(d))
				cancel()
				answers[d] = err
				if err == nil {
					continue
				}
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("propose %s during the fault timed out; want a prompt answer", d)
				}
			}
			// The node keeps retrying while the fault lasts.
			time.Sleep(100 * time.Millisecond)

			fault.on.Store(false)
			deadline := time.Now().Add(10 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := n.Propose(ctx, []byte("after"))
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("metadata writes did not recover after the fault cleared: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			check := func(when string, data []string) {
				t.Helper()
				for d, err := range answers {
					applied := slices.Contains(data, d)
					if err != nil && applied {
						t.Errorf("%s: %s was answered %v and applied anyway", when, d, err)
					}
					if err == nil && !applied {
						t.Errorf("%s: %s was answered success and not applied", when, d)
					}
				}
				if !slices.Contains(data, "before") || !slices.Contains(data, "after") {
					t.Errorf("%s: applied %q, want before and after", when, data)
				}
			}
			_, data := a.state()
			check("live", data)

			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			a = &memApplier{}
			n, err = Open(Config{ID: 1, Dir: dir, Applier: a, Logger: quietLogger(), TickInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := n.Barrier(ctx); err != nil {
				t.Fatal(err)
			}
			_, data = a.state()
			check("after restart", data)
		})
	}
}
