package coordinator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// ReplicaLog is the PartitionLog of a partition this node leads: appends go
// through the replica layer and count once committed (replicated to the
// ISR), so a coordinator never serves a state a new leader would not have;
// Replay reads the local log to its end.
type ReplicaLog struct {
	P *replica.Partition
	// Now stamps the records.
	Now func() time.Time
	// CommitTimeout bounds how long an append waits to be replicated
	// (offsets.commit.timeout.ms for groups).
	CommitTimeout time.Duration
}

// Append writes kvs as one uncompressed batch and returns once committed.
// Like Kafka's coordinators (acks=-1), it refuses to append while the ISR
// is smaller than min.insync.replicas, so a refused write is not in the log.
func (l *ReplicaLog) Append(ctx context.Context, kvs []KV) error {
	if err := l.P.CheckEnoughReplicas(); err != nil {
		return logError(err)
	}
	res, err := l.P.Append(buildBatch(l.Now(), nil, kvs))
	if err == nil {
		err = l.waitCommitted(ctx, res.BaseOffset+int64(len(kvs))-1)
	}
	return logError(err)
}

// AppendTransactional writes a transactional batch of producerID at epoch
// with no sequence (Kafka writes TxnOffsetCommit batches with NO_SEQUENCE):
// the partition fences stale epochs but checks no sequence.
func (l *ReplicaLog) AppendTransactional(ctx context.Context, producerID int64, epoch int16, kvs []KV) error {
	if err := l.P.CheckEnoughReplicas(); err != nil {
		return logError(err)
	}
	prod := &record.ProducerInfo{ID: producerID, Epoch: epoch, BaseSequence: -1}
	res, err := l.P.AppendAsCoordinator(ctx, buildBatch(l.Now(), prod, kvs))
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
		return fmt.Errorf("%w: %v", ErrProducerFenced, err)
	}
	if err == nil {
		err = l.waitCommitted(ctx, res.BaseOffset+int64(len(kvs))-1)
	}
	return logError(err)
}

func (l *ReplicaLog) waitCommitted(ctx context.Context, lastOffset int64) error {
	ctx, cancel := context.WithTimeout(ctx, l.CommitTimeout)
	defer cancel()
	return l.P.WaitCommitted(ctx, lastOffset)
}

func logError(err error) error {
	switch {
	case errors.Is(err, kerr.MessageTooLarge):
		return fmt.Errorf("%w: %v", ErrRecordTooLarge, err)
	case errors.Is(err, storage.ErrClosed), errors.Is(err, kerr.NotLeaderForPartition):
		// The partition was removed under us or its leadership moved.
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return err
}

// buildBatch builds one uncompressed batch of kvs stamped now; prod, when
// set, makes it a transactional batch of that producer.
func buildBatch(now time.Time, prod *record.ProducerInfo, kvs []KV) []byte {
	ts := now.UnixMilli()
	recs := make([]record.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = record.Record{Timestamp: ts, Key: kv.Key, Value: kv.Value}
	}
	return record.Build(record.BuildOptions{PartitionLeaderEpoch: -1, Producer: prod, Transactional: prod != nil}, recs)
}

// Replay reads the partition from its start to its log end offset and
// hands every record to fn: data records with their batch's transactional
// producer, and each transaction marker as a Control KV. It reads past the
// high watermark, as Kafka's coordinators load: a new leader's high
// watermark trails until its followers fetch again, yet the records above
// it may be writes the previous leader acknowledged (committed on its ISR).
// A leader never truncates its own log, so what it replays stays.
func (l *ReplicaLog) Replay(fn func(KV) error) error {
	snap := l.P.Offsets()
	off, end := snap.LogStartOffset, snap.LogEndOffset
	for off < end {
		data, err := l.P.ReadLog(off, 1<<20, end)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return fmt.Errorf("replay stalled at offset %d below the log end offset %d", off, end)
		}
		for len(data) > 0 {
			batch, rest, err := record.NextBatch(data)
			if err != nil {
				return err
			}
			data = rest
			h, err := record.ParseHeader(batch)
			if err != nil {
				return err
			}
			off = h.NextOffset()
			recs, err := record.Records(batch)
			if err != nil {
				return err
			}
			for _, r := range recs {
				kv := KV{Key: r.Key, Value: r.Value, Transactional: h.Transactional(), ProducerID: h.ProducerID}
				if h.Control() {
					if kv, err = controlKV(h, r); err != nil {
						return err
					}
				}
				if err := fn(kv); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// controlKV decodes a marker: its key is version int16, type int16 (0
// abort, 1 commit).
func controlKV(h record.Header, r record.Record) (KV, error) {
	if len(r.Key) < 4 {
		return KV{}, fmt.Errorf("control record at offset %d has a %d-byte key", r.Offset, len(r.Key))
	}
	return KV{Control: true, Commit: binary.BigEndian.Uint16(r.Key[2:]) == 1, ProducerID: h.ProducerID}, nil
}
