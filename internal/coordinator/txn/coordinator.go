package txn

import (
	"context"
	"sync"

	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MarkerWriter writes transaction markers: [MarkerChannel] on a broker,
// a fake in tests.
type MarkerWriter interface {
	// WriteMarkers appends a COMMIT or ABORT control batch for
	// m.ProducerID at m.Epoch, stamped with m.CoordinatorEpoch, to every
	// listed partition (Kafka's WriteTxnMarkers), and returns once all are
	// written. It may skip partitions that no longer exist. An error makes
	// the coordinator retry the whole call after Config.MarkerRetryBackoff,
	// so writing a marker twice must be harmless (it is: a second marker
	// for a producer with no open transaction is a no-op in Kafka's
	// producer state, and at transaction version 2 one refused as stale).
	// ctx ends when the partition of __transaction_state is unloaded.
	WriteMarkers(ctx context.Context, m Marker, partitions []TopicPartition) error
}

// Coordinator is the transaction coordinator of one broker: a shard per
// loaded partition of __transaction_state, run by the coordinator runtime.
type Coordinator struct {
	cfg Config
	rt  *coordinator.Runtime[*shard]
}

// shard is one loaded partition of __transaction_state. Its partition's
// Epoch is the coordinator epoch stamped on markers.
type shard struct {
	c *Coordinator
	p *coordinator.Partition[*shard]

	// mu guards the transactions; p.Write takes it to decide and apply.
	mu struct {
		sync.Mutex
		txns       map[string]*txnMeta
		completing map[string]bool // ids whose markers are being written
	}
}

// New returns a coordinator with no loaded partitions and starts its
// timeout and expiry loops.
func New(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg.withDefaults()}
	c.rt = coordinator.NewRuntime(coordinator.Config{Topic: "__transaction_state", NumPartitions: c.cfg.NumPartitions, Logger: c.cfg.Logger},
		func(p *coordinator.Partition[*shard]) *shard {
			s := &shard{c: c, p: p}
			s.mu.txns = map[string]*txnMeta{}
			s.mu.completing = map[string]bool{}
			return s
		})
	c.rt.Every(c.cfg.AbortTimedOutInterval, func(p *coordinator.Partition[*shard]) { p.Shard.abortTimedOut() })
	c.rt.Every(c.cfg.RemoveExpiredInterval, func(p *coordinator.Partition[*shard]) { p.Shard.removeExpired() })
	return c
}

// PartitionFor returns the __transaction_state partition that owns
// transactionalID.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return c.rt.PartitionFor(transactionalID)
}

// Load makes this coordinator the owner of partition at coordinatorEpoch
// (the partition's leader epoch, stamped on every marker). It replays log
// in the background; requests get COORDINATOR_LOAD_IN_PROGRESS until then.
// Transactions found in PrepareCommit or PrepareAbort have their markers
// written again and are completed. Loading a loaded partition replaces it.
func (c *Coordinator) Load(partition, coordinatorEpoch int32, log coordinator.PartitionLog) {
	c.rt.Load(partition, coordinatorEpoch, log)
}

// Unload drops the partition's state and stops its marker writers.
func (c *Coordinator) Unload(partition int32) { c.rt.Unload(partition) }

// Close unloads every partition and waits for background work to end.
func (c *Coordinator) Close() { c.rt.Close() }

func (s *shard) Lock()   { s.mu.Lock() }
func (s *shard) Unlock() { s.mu.Unlock() }

// ReplayLocked applies one record read on load. Nothing writes markers
// to __transaction_state; any found are skipped.
func (s *shard) ReplayLocked(kv KV) error {
	if kv.Control {
		return nil
	}
	return s.replayLocked(kv)
}

// OnLoadedLocked completes the transactions the previous coordinator left
// prepared: their markers are written again.
func (s *shard) OnLoadedLocked() {
	for _, t := range s.mu.txns {
		if t.state == StatePrepareCommit || t.state == StatePrepareAbort {
			s.startCompletionLocked(t)
		}
	}
}

// OnUnloadedLocked drops the state; the partition's context, which marker
// writers run under, has ended.
func (s *shard) OnUnloadedLocked() { s.mu.txns = nil }

// unloadedLocked reports whether the partition was unloaded.
func (s *shard) unloadedLocked() bool { return s.p.UnloadedLocked() }

// replayLocked applies one record. It is the only way transaction state
// changes, on Load and after a successful live append.
func (s *shard) replayLocked(kv KV) error {
	id, t, err := parseRecord(kv)
	if err != nil {
		return err
	}
	old := s.mu.txns[id]
	if t == nil {
		delete(s.mu.txns, id)
		return nil
	}
	if old != nil && t.prevProducerID < 0 {
		t.prevProducerID = old.prevProducerID
		if old.producerID != t.producerID {
			t.prevProducerID = old.producerID
		}
	}
	s.mu.txns[id] = t
	return nil
}

// shardFor finds the loaded shard owning id, or the code to answer.
func (c *Coordinator) shardFor(id string) (*shard, int16) {
	if id == "" {
		return nil, kerr.InvalidRequest.Code
	}
	return c.rt.Shard(id)
}

// persist is p.Write for the common case of one new transaction state: it
// appends t's record and, once written, replays it and then runs after.
// It returns the code for a failed append, or 0.
func (s *shard) persist(ctx context.Context, decide func() (t *txnMeta, code int16), after func(t *txnMeta)) int16 {
	var code int16
	ok := s.p.Write(ctx, func() ([]KV, func(error)) {
		t, c := decide()
		if t == nil {
			code = c
			return nil, nil
		}
		kv := txnRecord(t, s.c.cfg.TransactionVersion())
		return []KV{kv}, func(err error) {
			if err != nil {
				code = coordinator.AppendErrorCode(err)
				return
			}
			_ = s.replayLocked(kv) // a record we just encoded always parses
			// Fields the record does not carry (v0 carries fewer) stay as
			// decided.
			nt := s.mu.txns[t.id]
			nt.lastEpoch, nt.prevProducerID = t.lastEpoch, t.prevProducerID
			nt.nextProducerID, nt.clientTV = t.nextProducerID, t.clientTV
			if after != nil {
				after(nt)
			}
		}
	})
	if !ok {
		return kerr.NotCoordinator.Code
	}
	return code
}
