package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// offsetsTopic is the internal topic holding consumer groups and offsets.
const offsetsTopic = "__consumer_offsets"

// GroupCoordinator serves consumer groups; the broker routes group APIs to
// it and tells it which partitions of __consumer_offsets this node leads.
type GroupCoordinator interface {
	PartitionFor(groupID string) int32
	Load(partition int32, log group.PartitionLog)
	Unload(partition int32)

	JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse
	SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse
	Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse
	LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse
	OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse
	OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse
	DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse
	ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse
	DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse
	OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse
	ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse
	ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse
	TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse
	// CompleteTransaction applies a marker the broker wrote to a partition
	// of __consumer_offsets: the producer's pending offsets commit or drop.
	CompleteTransaction(partition int32, producerID int64, commit bool)
}

// ensureOffsetsTopic creates __consumer_offsets on first use, as Kafka does
// when the first FindCoordinator for a group arrives.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) (*metadata.TopicImage, error) {
	st := b.cfg.Static
	return b.ensureInternalTopic(ctx, offsetsTopic, st.OffsetsTopicNumPartitions, st.OffsetsTopicReplicationFactor, st.OffsetsTopicSegmentBytes)
}

// ensureInternalTopic creates a compacted internal topic (the state of a
// coordinator) unless it exists, and returns it.
func (b *Broker) ensureInternalTopic(ctx context.Context, name string, partitions int32, rf int16, segmentBytes int32) (*metadata.TopicImage, error) {
	if t, ok := b.cfg.Image().Topic(name); ok {
		return t, nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 30000
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = name
	ct.NumPartitions = partitions
	ct.ReplicationFactor = rf
	for k, v := range map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.Itoa(int(segmentBytes)),
	} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		ct.Configs = append(ct.Configs, c)
	}
	req.Topics = append(req.Topics, ct)
	resp := b.cfg.Controller.CreateTopics(ctx, req)
	if len(resp.Topics) == 1 {
		if code := resp.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
			msg := ""
			if resp.Topics[0].ErrorMessage != nil {
				msg = *resp.Topics[0].ErrorMessage
			}
			b.cfg.Logger.Error("cannot create "+name, "err", kerr.ErrorForCode(code), "message", msg)
			return nil, kerr.ErrorForCode(code)
		}
	}
	t, ok := b.cfg.Image().Topic(name)
	if !ok {
		return nil, errors.New(name + " missing after creation")
	}
	return t, nil
}

// publishOffsetsTopic loads partitions of __consumer_offsets this node
// leads into the group coordinator and unloads the rest.
func (b *Broker) publishOffsetsTopic(img *metadata.Image) {
	if b.cfg.Groups == nil {
		return
	}
	b.offsetsLoaded.reconcile(img, offsetsTopic, b.cfg.NodeID, b.cfg.Replicas,
		func(partition, _ int32, p *replica.Partition) {
			b.cfg.Groups.Load(partition, &partitionLog{p: p, now: b.cfg.Now, commitTimeout: b.offsetsCommitTimeout()})
		}, b.cfg.Groups.Unload)
}

// offsetsCommitTimeout is offsets.commit.timeout.ms: how long a write to
// __consumer_offsets waits to be replicated.
func (b *Broker) offsetsCommitTimeout() time.Duration {
	if b.cfg.Static == nil {
		return 5 * time.Second
	}
	return time.Duration(b.cfg.Static.MustInt32("offsets.commit.timeout.ms")) * time.Millisecond
}

// partitionLog lets the group coordinator write to and replay one
// partition of __consumer_offsets.
type partitionLog struct {
	p             *replica.Partition
	now           func() time.Time
	commitTimeout time.Duration
}

// Append writes kvs as one uncompressed batch and returns once it is
// committed (replicated to the ISR), so the coordinator never serves a
// state a new leader would not have.
func (l *partitionLog) Append(ctx context.Context, kvs []group.KV) error {
	res, err := l.p.Append(buildKVBatch(l.now(), nil, len(kvs), func(i int) ([]byte, []byte) { return kvs[i].Key, kvs[i].Value }))
	if err == nil {
		err = waitCommitted(ctx, l.p, res.BaseOffset+int64(len(kvs))-1, l.commitTimeout)
	}
	return groupLogError(err)
}

// AppendTransactional writes a TxnOffsetCommit batch: transactional, of
// producerID at epoch, with no sequence (Kafka writes these batches with
// NO_SEQUENCE). The partition fences stale epochs but checks no sequence.
func (l *partitionLog) AppendTransactional(ctx context.Context, producerID int64, epoch int16, kvs []group.KV) error {
	prod := &record.ProducerInfo{ID: producerID, Epoch: epoch, BaseSequence: -1}
	res, err := l.p.AppendAsCoordinator(buildKVBatch(l.now(), prod, len(kvs), func(i int) ([]byte, []byte) { return kvs[i].Key, kvs[i].Value }))
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
		return fmt.Errorf("%w: %v", group.ErrProducerFenced, err)
	}
	if err == nil {
		err = waitCommitted(ctx, l.p, res.BaseOffset+int64(len(kvs))-1, l.commitTimeout)
	}
	return groupLogError(err)
}

// waitCommitted waits at most timeout for p's high watermark to pass
// lastOffset. A coordinator treats a write as durable only then.
func waitCommitted(ctx context.Context, p *replica.Partition, lastOffset int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.WaitCommitted(ctx, lastOffset)
}

func groupLogError(err error) error {
	switch {
	case errors.Is(err, kerr.MessageTooLarge):
		return fmt.Errorf("%w: %v", group.ErrRecordTooLarge, err)
	case errors.Is(err, storage.ErrClosed), errors.Is(err, kerr.NotLeaderForPartition):
		// The partition was removed under us or its leadership moved.
		return fmt.Errorf("%w: %v", group.ErrNotLeader, err)
	}
	return err
}

// buildKVBatch builds one uncompressed batch of n records stamped now;
// prod, when set, makes it a transactional batch of that producer.
func buildKVBatch(now time.Time, prod *record.ProducerInfo, n int, kv func(i int) (key, value []byte)) []byte {
	ts := now.UnixMilli()
	recs := make([]record.Record, n)
	for i := range recs {
		k, v := kv(i)
		recs[i] = record.Record{Timestamp: ts, Key: k, Value: v}
	}
	return record.Build(record.BuildOptions{PartitionLeaderEpoch: -1, Producer: prod, Transactional: prod != nil}, recs)
}

// Replay reads the partition from its start to its current end and hands
// every record to fn: data records with their batch's transactional
// producer, and each transaction marker as a Control KV.
func (l *partitionLog) Replay(fn func(group.KV) error) error {
	return replayPartition(l.p, func(h record.Header, r record.Record) error {
		kv := group.KV{Key: r.Key, Value: r.Value, Transactional: h.Transactional(), ProducerID: h.ProducerID}
		if h.Control() {
			commit, err := controlCommit(r)
			if err != nil {
				return err
			}
			kv = group.KV{Control: true, Commit: commit, ProducerID: h.ProducerID}
		}
		return fn(kv)
	})
}

// controlCommit decodes a control record's key (version int16, type
// int16: 0 abort, 1 commit).
func controlCommit(r record.Record) (bool, error) {
	if len(r.Key) < 4 {
		return false, fmt.Errorf("control record at offset %d has a %d-byte key", r.Offset, len(r.Key))
	}
	return binary.BigEndian.Uint16(r.Key[2:]) == 1, nil
}

// replayPartition reads p from its start to its log end offset and calls
// fn for every record with its batch header. It reads past the high
// watermark, as Kafka's coordinators load: a new leader's high watermark
// trails until its followers fetch again, yet the records above it may be
// writes the previous leader acknowledged (committed on its ISR). A leader
// never truncates its own log, so what it replays stays.
func replayPartition(p *replica.Partition, fn func(record.Header, record.Record) error) error {
	snap := p.Offsets()
	off, end := snap.LogStartOffset, snap.LogEndOffset
	for off < end {
		data, err := p.Log().Read(off, 1<<20, end)
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
				if err := fn(h, r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
