package slowfs

import (
	"context"
	"sync"
	"testing"
	"time"
)

// recorder is a Delay's Sleep that sleeps not at all and remembers what
// it was asked to wait.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
}

// take returns the waits so far and forgets them.
func (r *recorder) take() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.waits
	r.waits = nil
	return w
}

func TestOpsString(t *testing.T) {
	for _, c := range []struct {
		ops  Ops
		want string
	}{{0, "none"}, {Sync, "fsync"}, {Write | Sync, "write+fsync"}, {Read | Meta, "read+meta"}, {All, "all"}} {
		if got := c.ops.String(); got != c.want {
			t.Errorf("%#x: %q, want %q", uint8(c.ops), got, c.want)
		}
	}
}

// TestDelaySwitch: only the kinds switched on wait, and they wait the
// delay set; nothing waits once it is off.
func TestDelaySwitch(t *testing.T) {
	rec := &recorder{}
	d := &Delay{Sleep: rec.sleep}
	ctx := context.Background()
	all := func() {
		for _, op := range []Ops{Write, Sync, Read, Meta} {
			d.wait(ctx, op)
		}
	}
	all()
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("off: waited %v", w)
	}
	d.Set(70*time.Millisecond, Write|Sync)
	if got, ops := d.Current(); got != 70*time.Millisecond || ops != Write|Sync {
		t.Fatalf("Current = %v %v", got, ops)
	}
	all()
	if w := rec.take(); len(w) != 2 || w[0] != 70*time.Millisecond || w[1] != 70*time.Millisecond {
		t.Fatalf("write+fsync on: waited %v, want two waits of 70ms", w)
	}
	if c := d.Counts(); c != (Counts{Write: 1, Sync: 1}) {
		t.Fatalf("counts %v", c)
	}
	before := d.Counts()
	d.Set(300*time.Millisecond, All)
	all()
	all()
	if w := rec.take(); len(w) != 8 {
		t.Fatalf("all on: %d waits, want 8", len(w))
	}
	if c := d.Counts().Sub(before); c != (Counts{2, 2, 2, 2}) {
		t.Fatalf("counts since: %v", c)
	}
	d.Off()
	all()
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("off again: waited %v", w)
	}
	d.Set(0, All)
	d.Set(time.Second, 0)
	all()
	if w := rec.take(); len(w) != 0 {
		t.Fatalf("a zero delay or no kinds: waited %v", w)
	}
}

// TestDelayInterrupted: the real sleep ends when the request's context
// is done (the kernel's interrupt).
func TestDelayInterrupted(t *testing.T) {
	d := &Delay{}
	d.Set(time.Hour, Write)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.wait(ctx, Write); close(done) }()
	cancel()
	<-done // an hour otherwise: the test's timeout says so
}
