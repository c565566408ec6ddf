package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// txnStateTopic is the internal topic holding transaction state.
const txnStateTopic = "__transaction_state"

// TxnCoordinator serves transactions; the broker routes transaction APIs to
// it and tells it which partitions of __transaction_state this node leads.
type TxnCoordinator interface {
	PartitionFor(transactionalID string) int32
	Load(partition, coordinatorEpoch int32, log txn.PartitionLog)
	Unload(partition int32)

	InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse
	AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse
	AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse
	EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse
	DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse
	ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse
}

// ensureTxnTopic creates __transaction_state on first use, as Kafka does
// when the first FindCoordinator for a transactional id arrives.
func (b *Broker) ensureTxnTopic(ctx context.Context) (*metadata.TopicImage, error) {
	st := b.cfg.Static
	return b.ensureInternalTopic(ctx, txnStateTopic, st.TransactionStateLogNumPartitions,
		st.TransactionStateLogReplicationFactor, st.MustInt32("transaction.state.log.segment.bytes"))
}

// publishTxnTopic loads the partitions of __transaction_state this node
// leads into the transaction coordinator, at their leader epoch (markers
// carry it), and unloads the rest.
func (b *Broker) publishTxnTopic(img *metadata.Image) {
	if b.cfg.Txns == nil {
		return
	}
	b.txnLoaded.reconcile(img, txnStateTopic, b.cfg.NodeID, b.cfg.Replicas,
		func(partition, epoch int32, p *replica.Partition) {
			b.cfg.Txns.Load(partition, epoch, &txnLog{p: p, now: b.cfg.Now})
		}, b.cfg.Txns.Unload)
}

// txnLog lets the transaction coordinator write to and replay one
// partition of __transaction_state.
type txnLog struct {
	p   *replica.Partition
	now func() time.Time
}

// txnWriteTimeout bounds how long a write of the transaction coordinator
// (a __transaction_state record, or a marker) waits to be replicated:
// Kafka's request.timeout.ms default.
const txnWriteTimeout = 30 * time.Second

// Append writes kvs as one uncompressed batch and returns once it is
// committed (replicated to the ISR).
func (l *txnLog) Append(ctx context.Context, kvs []txn.KV) error {
	res, err := l.p.Append(buildKVBatch(l.now(), nil, len(kvs), func(i int) ([]byte, []byte) { return kvs[i].Key, kvs[i].Value }))
	if err == nil {
		err = waitCommitted(ctx, l.p, res.BaseOffset+int64(len(kvs))-1, txnWriteTimeout)
	}
	switch {
	case errors.Is(err, kerr.MessageTooLarge):
		return fmt.Errorf("%w: %v", txn.ErrRecordTooLarge, err)
	case errors.Is(err, storage.ErrClosed), errors.Is(err, kerr.NotLeaderForPartition):
		return fmt.Errorf("%w: %v", txn.ErrNotLeader, err)
	}
	return err
}

// Replay hands every record of the partition to fn, in log order. Nothing
// writes control batches to __transaction_state; any found are skipped.
func (l *txnLog) Replay(fn func(txn.KV) error) error {
	return replayPartition(l.p, func(h record.Header, r record.Record) error {
		if h.Control() {
			return nil
		}
		return fn(txn.KV{Key: r.Key, Value: r.Value})
	})
}

// MarkerWriter writes transaction markers on this node, standing in for
// Kafka's WriteTxnMarkers requests: markers are appended directly to the
// partitions this node leads. Partitions led by other brokers fail (and
// are retried) until WriteTxnMarkers is sent between brokers.
type MarkerWriter struct {
	replicas *replica.Manager
	image    func() *metadata.Image
	groups   GroupCoordinator
	logger   *slog.Logger
}

// NewMarkerWriter returns the marker writer for the transaction
// coordinator. groups, when not nil, learns of every marker written to
// __consumer_offsets, so pending transactional offsets commit or drop.
func NewMarkerWriter(replicas *replica.Manager, image func() *metadata.Image, groups GroupCoordinator, logger *slog.Logger) *MarkerWriter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &MarkerWriter{replicas: replicas, image: image, groups: groups, logger: logger}
}

// WriteMarkers implements txn.MarkerWriter. Partitions of deleted topics
// are skipped: nobody can read their transaction any more. A partition
// that exists but is not led here, or whose marker is not committed
// (replicated to its ISR) in time, fails the call, so the coordinator
// retries.
func (w *MarkerWriter) WriteMarkers(ctx context.Context, producerID int64, epoch int16, coordinatorEpoch int32, commit bool, partitions []txn.TopicPartition) error {
	img := w.image()
	var errs []error
	type written struct {
		tp     txn.TopicPartition
		p      *replica.Partition
		offset int64
	}
	var toCommit []written
	for _, tp := range partitions {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t, ok := img.Topic(tp.Topic)
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		p, ok := w.replicas.Partition(tp.Topic, tp.Partition)
		if !ok || !p.IsLeader() {
			errs = append(errs, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, kerr.NotLeaderForPartition))
			continue
		}
		offset, err := p.WriteTxnMarker(producerID, epoch, coordinatorEpoch, commit)
		switch {
		case errors.Is(err, storage.ErrClosed):
			continue // deleted while we wrote
		case errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.ProducerFenced),
			errors.Is(err, kerr.TransactionCoordinatorFenced):
			// Kafka's coordinator stops sending a marker the partition
			// refuses as stale: the producer or coordinator moved on, and
			// retrying would never succeed.
			w.logger.Warn("transaction marker refused as stale", "topic", tp.Topic, "partition", tp.Partition,
				"producer_id", producerID, "epoch", epoch, "coordinator_epoch", coordinatorEpoch, "err", err)
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, err))
			continue
		}
		toCommit = append(toCommit, written{tp, p, offset})
	}
	// Wait for all markers against one deadline: a marker counts once
	// committed, and only then may the group coordinator apply it.
	wctx, cancel := context.WithTimeout(ctx, txnWriteTimeout)
	defer cancel()
	for _, m := range toCommit {
		if err := m.p.WaitCommitted(wctx, m.offset); err != nil {
			if errors.Is(err, storage.ErrClosed) {
				continue
			}
			errs = append(errs, fmt.Errorf("%s-%d: marker not committed: %w", m.tp.Topic, m.tp.Partition, err))
			continue
		}
		if m.tp.Topic == offsetsTopic && w.groups != nil {
			w.groups.CompleteTransaction(m.tp.Partition, producerID, commit)
		}
	}
	return errors.Join(errs...)
}
