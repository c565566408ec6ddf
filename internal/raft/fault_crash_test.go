package raft

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The only voter writes an entry, then fails to save quorum-state, and
// the process dies before its storage retry. The entry is in the log
// file, so the restarted node commits it: its proposal must not have been
// answered ErrStorage (it used to be, at once). It is answered only once
// recovery has cut the entry from the disk. Found by the simulation
// (seed 107). Driven step by step (open, onProposal, settle), as the
// simulation does, to crash at exactly that point.
func TestStorageErrorAnsweredOnlyOnceTheEntryIsCut(t *testing.T) {
	for _, crash := range []bool{true, false} {
		dir := t.TempDir()
		fault := &diskFault{match: func(p string) bool { return filepath.Base(p) == hardStateFile+".tmp" }}
		clock := time.Unix(1_700_000_000, 0)
		cfg := Config{ID: 1, Dir: dir, Applier: &memApplier{}, Logger: quietLogger(), Fault: fault.hook,
			now: func() time.Time { return clock }}
		n, err := open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fault.on.Store(true)
		p := &proposal{data: []byte("x"), done: make(chan result, 1)}
		n.onProposal(p)
		if !n.settle() || n.broken == nil {
			t.Fatalf("want the node in storage recovery; fatal %v", n.fatal)
		}
		select {
		case r := <-p.done:
			t.Fatalf("answered %v before the entry was cut from disk", r.err)
		default:
		}
		if crash {
			n.log.close()
			a := &memApplier{}
			cfg.Applier, cfg.Fault = a, nil
			n2, err := open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			n2.log.close()
			if _, data := a.state(); !slices.Equal(data, []string{"x"}) {
				t.Fatalf("after the restart applied %q; want the entry that was in the log", data)
			}
			continue
		}
		// No crash: the retry cuts the entry, and only then answers.
		clock = clock.Add(time.Minute)
		n.onTick()
		if !n.settle() {
			t.Fatal(n.fatal)
		}
		select {
		case r := <-p.done:
			if r.err == nil {
				t.Fatal("answered success for an entry that was cut")
			}
		default:
			t.Fatal("not answered after the retry")
		}
		n.log.close()
	}
}
