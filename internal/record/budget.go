package record

import (
	"context"
	"slices"
	"sync"
)

// Budget bounds the memory that decompression holds at once across every
// batch validated against it. Validation streams a compressed batch
// through a small fixed window, so most codecs need memory that does not
// grow with the decompressed size; the exceptions draw on the budget:
//
//   - zstd keeps a history window that the frame header declares (for a
//     single-segment frame, its whole content size);
//   - snappy decodes a whole block at once, and a bare snappy block (as
//     librdkafka writes it) is the whole records section.
//
// A decompression that does not fit waits, first come first served, until
// earlier ones finish. One that wants more than the whole budget is
// charged the whole budget, so it runs alone instead of never. A nil
// *Budget is unbounded.
//
// A decompression holds at most one charge at a time and takes it only
// while it runs, never while waiting on anything else, so waiting cannot
// deadlock. The budget must not be shared with anything that holds its
// charge while validating (a budget for request bytes, say), or the two
// could wait on each other.
//
// The network layer uses a Budget of its own for request bytes
// (queued.max.request.bytes) through Acquire and Release.
type Budget struct {
	size int64

	mu struct {
		sync.Mutex
		used    int64
		waiters []*budgetWaiter // FIFO
	}
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// NewBudget returns a budget of size bytes. size <= 0 means unbounded,
// which is a nil *Budget.
func NewBudget(size int64) *Budget {
	if size <= 0 {
		return nil
	}
	return &Budget{size: size}
}

// Size is the budget's capacity in bytes; 0 for an unbounded budget.
func (b *Budget) Size() int64 {
	if b == nil {
		return 0
	}
	return b.size
}

// InUse is how many bytes are charged now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}

// Waiting is how many decompressions wait for the budget now.
func (b *Budget) Waiting() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.waiters)
}

// acquire charges n bytes, waiting until they fit, and returns the charge
// to pass to release (n, or the whole budget when n exceeds it).
func (b *Budget) acquire(n int64) int64 {
	charge, _ := b.Acquire(context.Background(), n)
	return charge
}

// Acquire is acquire that gives up when ctx ends: it then returns 0 and
// ctx's error, having charged nothing.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	if b == nil || n <= 0 {
		return 0, nil
	}
	n = min(n, b.size)
	b.mu.Lock()
	if len(b.mu.waiters) == 0 && b.mu.used+n <= b.size {
		b.mu.used += n
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.mu.waiters = append(b.mu.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready: // release charged us before closing ready
		return n, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.mu.waiters, w); i >= 0 {
		b.mu.waiters = slices.Delete(b.mu.waiters, i, i+1)
		// Those behind it may fit now.
		b.grantLocked()
		return 0, ctx.Err()
	}
	// Granted meanwhile: hand the charge back.
	b.mu.used -= n
	b.grantLocked()
	return 0, ctx.Err()
}

// Release returns a charge that Acquire returned.
func (b *Budget) Release(n int64) { b.release(n) }

// release returns a charge that acquire returned.
func (b *Budget) release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.used -= n
	b.grantLocked()
}

// grantLocked admits waiters in order while the first one fits.
func (b *Budget) grantLocked() {
	for len(b.mu.waiters) > 0 {
		w := b.mu.waiters[0]
		if b.mu.used+w.n > b.size {
			return
		}
		b.mu.used += w.n
		b.mu.waiters[0] = nil
		b.mu.waiters = b.mu.waiters[1:]
		close(w.ready)
	}
}
