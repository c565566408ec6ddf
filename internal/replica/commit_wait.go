package replica

import (
	"container/heap"
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CommitWait is a request parked until the batches it appended commit,
// as Kafka's DelayedProduce parks an acks=all produce in the produce
// purgatory. Each partition the request appended to keeps the wait in a
// queue ordered by offset and answers it from the code that moves its
// high watermark or changes its role (wakeLocked): nil once the high
// watermark passes the batch (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
// ISR is then smaller than min.insync.replicas), NOT_LEADER_OR_FOLLOWER
// when the partition loses leadership or its leader epoch changes first.
// Nothing waits per partition: the request waits once, in Wait, until
// every partition answered or its timeout (REQUEST_TIMED_OUT).
//
// Lock order: a partition's lock, then the wait's.
type CommitWait struct {
	done chan struct{}
	mu   struct {
		sync.Mutex
		// pending counts the partitions still to answer, plus one held
		// by the request until Wait, so that done cannot close while
		// partitions are still being added.
		pending  int
		errs     []error
		answered []bool
		parts    []*Partition // by index, once added
		finished bool         // Wait returned: late answers are dropped
	}
}

// NewCommitWait returns a wait for partitions indexed 0..n-1, none added
// yet (Partition.AppendProduce with AppendOptions.Commit adds one).
func NewCommitWait(n int) *CommitWait {
	w := &CommitWait{done: make(chan struct{})}
	w.mu.pending = 1
	w.mu.errs = make([]error, n)
	w.mu.answered = make([]bool, n)
	w.mu.parts = make([]*Partition, n)
	return w
}

// Wait waits until every added partition answered, or ctx ends: the
// partitions that have not answered then answer REQUEST_TIMED_OUT and
// forget the wait. It returns each index's answer (nil for committed, and
// for indexes never added).
func (w *CommitWait) Wait(ctx context.Context) []error {
	w.answer(-1, nil)
	select {
	case <-w.done:
	case <-ctx.Done():
	}
	w.mu.Lock()
	w.mu.finished = true
	var late []*Partition
	for i, p := range w.mu.parts {
		if p != nil && !w.mu.answered[i] {
			w.mu.errs[i] = kerr.RequestTimedOut
			late = append(late, p)
		}
	}
	errs := w.mu.errs
	w.mu.Unlock()
	for _, p := range late {
		p.mu.Lock()
		p.forgetCommitWaitLocked(w)
		p.mu.Unlock()
	}
	return errs
}

// answer records index i's answer (i < 0: the request's own hold) and
// closes done with the last one.
func (w *CommitWait) answer(i int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.finished {
		return
	}
	if i >= 0 {
		if w.mu.answered[i] {
			return
		}
		w.mu.answered[i], w.mu.errs[i] = true, err
	}
	if w.mu.pending--; w.mu.pending == 0 {
		close(w.done)
	}
}

// commitWaiter is one partition's entry for a CommitWait: index i of w
// waits for the high watermark to pass offset.
type commitWaiter struct {
	w      *CommitWait
	i      int
	offset int64
}

// commitQueue is a partition's waiters, a min-heap by offset.
type commitQueue []commitWaiter

func (q commitQueue) Len() int           { return len(q) }
func (q commitQueue) Less(i, j int) bool { return q[i].offset < q[j].offset }
func (q commitQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)        { *q = append(*q, x.(commitWaiter)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = commitWaiter{}
	*q = old[:len(old)-1]
	return x
}

// addCommitWaitLocked makes index i of w wait for lastOffset to commit
// in the current leader epoch, answering at once when it has or when this
// replica does not lead.
func (p *Partition) addCommitWaitLocked(w *CommitWait, i int, lastOffset int64) {
	w.mu.Lock()
	w.mu.parts[i] = p
	w.mu.pending++
	w.mu.Unlock()
	if !p.leadingLocked() {
		w.answer(i, kerr.NotLeaderForPartition)
		return
	}
	if p.mu.highWatermark > lastOffset {
		w.answer(i, p.committedErrLocked())
		return
	}
	if len(p.mu.commits) == 0 {
		p.mu.commitsEpoch = p.mu.leaderEpoch
	}
	heap.Push(&p.mu.commits, commitWaiter{w: w, i: i, offset: lastOffset})
}

// answerCommitWaitsLocked answers the waiters the high watermark passed,
// and every waiter once this replica stops leading in the epoch they
// appended in. wakeLocked runs it on every move of the high watermark and
// every role change.
func (p *Partition) answerCommitWaitsLocked() {
	if len(p.mu.commits) == 0 {
		return
	}
	if !p.leadingLocked() || p.mu.leaderEpoch != p.mu.commitsEpoch {
		for _, c := range p.mu.commits {
			c.w.answer(c.i, kerr.NotLeaderForPartition)
		}
		clear(p.mu.commits)
		p.mu.commits = p.mu.commits[:0]
		return
	}
	if p.mu.commits[0].offset >= p.mu.highWatermark {
		return
	}
	err := p.committedErrLocked()
	for len(p.mu.commits) > 0 && p.mu.commits[0].offset < p.mu.highWatermark {
		c := heap.Pop(&p.mu.commits).(commitWaiter)
		c.w.answer(c.i, err)
	}
}

// committedErrLocked is the answer for a batch the high watermark passed:
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR has shrunk below
// min.insync.replicas, as Kafka's DelayedProduce answers.
func (p *Partition) committedErrLocked() error {
	if n, want := len(p.mu.state.ISR), p.minISRLocked(); n < want {
		return fmt.Errorf("%w: ISR of %s-%d has %d replicas, min.insync.replicas is %d", kerr.NotEnoughReplicasAfterAppend, p.Topic, p.Index, n, want)
	}
	return nil
}

// forgetCommitWaitLocked drops w's waiters (w timed out).
func (p *Partition) forgetCommitWaitLocked(w *CommitWait) {
	q := p.mu.commits[:0]
	for _, c := range p.mu.commits {
		if c.w != w {
			q = append(q, c)
		}
	}
	clear(p.mu.commits[len(q):])
	p.mu.commits = q
	heap.Init(&p.mu.commits)
}
