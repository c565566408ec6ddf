package streams

// exactly_once_v2: Kafka's EOS v2 (KIP-447). The instance has one
// transactional producer; everything one poll's records cause (sink records,
// repartition records, changelog records) and the input offsets they
// advance (TxnOffsetCommit with the group's generation and member id) are
// committed in one transaction, or none of it is.
//
// The loop, once per poll, with rebalances blocked from the poll until the
// transaction has ended:
//
//	poll ─► tasks for new partitions (restored, no transaction open)
//	     ─► begin ─► process ─► flush ─► end: commit, or abort on any error
//
// A transaction never stays open across a rebalance, so revoked tasks are
// clean when they are closed. An aborted transaction leaves the in-memory
// stores ahead of their changelogs: every task is then closed and made
// again from its changelog, and the consumer goes back to the committed
// offsets (the session does that). Restores read the changelog
// read_committed, once no transaction is open on it, so they see exactly
// the committed state that the committed offsets belong to.

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// eosTransactionTimeout is the producer's transaction.timeout.ms; Kafka
// Streams sets 10 s under exactly_once_v2 so that a crashed instance's open
// transaction blocks its partitions no longer than that.
const eosTransactionTimeout = 10 * time.Second

func (a *App) eos() bool { return a.cfg.ProcessingGuarantee == ExactlyOnceV2 }

// eosOpts are the client options of exactly_once_v2. The transactional id
// is Kafka Streams' <application.id>-<process id>-<thread>, with a new
// random process id per App; ClientOptions may override any of them.
func eosOpts(appID string) []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(fmt.Sprintf("%s-%s-1", appID, processID())),
		kgo.TransactionTimeout(eosTransactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
	}
}

// processID is a random UUID (version 4), like Kafka Streams' process id.
func processID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (a *App) loopEOS(ctx context.Context) error {
	for {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := a.cl.PollRecords(pctx, 1000)
		pcancel()
		if fetches.IsClientClosed() || ctx.Err() != nil {
			// What was polled is not processed: nothing commits its
			// offsets, so the next owner reads it again.
			a.cl.AllowRebalance()
			return nil
		}
		a.logFetchErrors(fetches)
		a.mu.Lock()
		err := a.transactLocked(ctx, fetches)
		a.mu.Unlock()
		a.cl.AllowRebalance()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// transactLocked processes one poll's records in one transaction.
func (a *App) transactLocked(ctx context.Context, fetches kgo.Fetches) error {
	if a.mu.revoked {
		// A rebalance took partitions since the last transaction ended:
		// the session would abort the next one. End it now, before any
		// work; that also rewinds the consumer to the committed offsets,
		// so this poll's records come again.
		a.mu.revoked = false
		if _, err := a.sess.End(ctx, kgo.TryAbort); err != nil {
			return fmt.Errorf("streams: end transaction after a rebalance: %w", err)
		}
		return nil
	}
	if err := a.ensureTasksLocked(ctx); err != nil {
		return err
	}
	if err := a.sess.Begin(); err != nil {
		return fmt.Errorf("streams: begin transaction: %w", err)
	}
	err := a.processLocked(ctx, fetches)
	if err == nil {
		if ferr := a.cl.Flush(ctx); ferr != nil {
			err = fmt.Errorf("streams: flush: %w", ferr)
		}
	}
	if err == nil {
		err = a.failure()
	}
	if err != nil {
		if _, aerr := a.sess.End(ctx, kgo.TryAbort); aerr != nil {
			a.log.Warn("aborting transaction", "err", aerr)
		}
		a.dropAllTasksLocked()
		return err
	}
	committed, err := a.sess.End(ctx, kgo.TryCommit)
	if err != nil {
		a.dropAllTasksLocked()
		return fmt.Errorf("streams: commit transaction: %w", err)
	}
	if !committed {
		// A rebalance or a fenced generation: the work is undone, and the
		// stores must be too.
		a.log.Info("transaction aborted; tasks will restore from their changelogs")
		a.dropAllTasksLocked()
	}
	return nil
}

// dropAllTasksLocked closes every task without committing anything: their
// stores may hold aborted writes.
func (a *App) dropAllTasksLocked() {
	for id, tk := range a.mu.tasks {
		if err := tk.close(); err != nil {
			a.log.Warn("closing task", "task", id.String(), "err", err)
		}
		delete(a.mu.tasks, id)
	}
}

// waitNoOpenTransaction waits until partition p of topic has no open
// transaction (last stable offset = high watermark) and returns that end
// offset. An open transaction there belongs to an instance that owned the
// task before: it ends soon (the owner aborts or commits as it gives the
// task up) or at its transaction timeout (the owner crashed).
func waitNoOpenTransaction(ctx context.Context, adm *kadm.Client, topic string, p int32) (int64, error) {
	for {
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		h, ok1 := hw.Lookup(topic, p)
		l, ok2 := lso.Lookup(topic, p)
		if !ok1 || !ok2 || h.Err != nil || l.Err != nil {
			return 0, fmt.Errorf("end offsets of %s-%d: %v %v", topic, p, h.Err, l.Err)
		}
		if l.Offset >= h.Offset {
			return h.Offset, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
