package raft

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/powerloss"
)

// TestPowerLossKeepsCommittedEntries cuts the power of a quorum of one
// (every write and fsync after that fails; the files keep only what was
// fsynced, with torn tails) while it takes proposals, and reopens it on what its disk kept. Raft fsyncs entries and
// quorum-state before it acknowledges, whatever the partition logs'
// flush policy, so every committed entry is there after the restart,
// through snapshots and compaction too.
func TestPowerLossKeepsCommittedEntries(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			dir := t.TempDir()
			disk := powerloss.New(true, seed)
			cfg := Config{ID: 1, Dir: dir, Applier: &memApplier{}, Logger: quietLogger(),
				TickInterval: 10 * time.Millisecond, SnapshotEvery: 40, Fault: disk.Fault}
			n, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Propose until the power goes: acked are the entries whose
			// proposals were answered success, in order.
			acked, warm := make(chan []string, 1), make(chan struct{})
			go func() {
				var ok []string
				for i := 0; ; i++ {
					d := fmt.Sprintf("e%d", i)
					if _, err := n.Propose(ctx, []byte(d)); err != nil {
						acked <- ok
						return
					}
					ok = append(ok, d)
					if len(ok) == 60 { // past a snapshot
						close(warm)
					}
				}
			}()
			select {
			case <-warm:
			case ok := <-acked:
				t.Fatalf("a proposal failed after %d were answered", len(ok))
			}
			time.Sleep(time.Duration(seed*23) * time.Millisecond)
			disk.PowerOff()
			image := filepath.Join(t.TempDir(), "after-power-loss")
			losses, err := disk.Image(dir, image)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range losses {
				t.Logf("power loss: %v", l)
			}
			n.Close() // the frozen node; its directory is thrown away
			want := <-acked
			if len(want) < 60 {
				t.Fatalf("only %d proposals answered before the power loss", len(want))
			}

			a := &memApplier{}
			cfg.Dir, cfg.Applier, cfg.Fault = image, a, powerloss.New(false, 0).Fault
			n, err = Open(cfg)
			if err != nil {
				t.Fatalf("reopen after power loss: %v", err)
			}
			defer n.Close()
			if _, err := n.Barrier(ctx); err != nil {
				t.Fatalf("barrier after power loss: %v", err)
			}
			// Entries written and fsynced but not yet answered may be
			// there too: they were the next proposals.
			_, got := a.state()
			if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
				t.Fatalf("after power loss the state machine holds %d entries, want the %d acknowledged first", len(got), len(want))
			}
			for i, d := range got {
				if d != fmt.Sprintf("e%d", i) {
					t.Fatalf("entry %d after power loss is %q", i, d)
				}
			}
			t.Logf("%d proposals acknowledged, %d entries after the restart", len(want), len(got))
			if _, err := n.Propose(ctx, []byte("after")); err != nil {
				t.Fatalf("propose after power loss: %v", err)
			}
		})
	}
}
