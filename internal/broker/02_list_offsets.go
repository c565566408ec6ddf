package broker

// ListOffsets, versions 1-11.
//
// Behavior:
//   - Timestamp -1 (latest) answers the high watermark (the last stable
//     offset for read_committed), -2 (earliest) and -4 (earliest local,
//     v8+) the log start offset, -3 (max timestamp, v7+) the offset of the
//     first record carrying the largest timestamp. Nothing is tiered, so -5
//     (latest tiered, v9+) and -6 (earliest pending upload, v11+, KIP-1023)
//     answer offset -1, timestamp -1, leader epoch -1, as Kafka's
//     UnifiedLog does without remote storage.
//   - Any other negative timestamp, or a special one below the version
//     that brought it, answers UNSUPPORTED_VERSION (before the partition
//     is looked up or its leader epoch checked, as Kafka does).
//   - Any other timestamp finds the first record with a timestamp at or after
//     it, below the high watermark (the last stable offset for
//     read_committed); none gives offset -1 and timestamp -1.
//   - current_leader_epoch is checked as in Fetch.
//   - Only the partition leader answers (NOT_LEADER_OR_FOLLOWER elsewhere).
//     A follower replica (replica_id >= 0) asking for the latest offset
//     gets the leader's log end offset, not the high watermark: it needs
//     it to truncate after OFFSET_OUT_OF_RANGE.
//   - Authorization (KafkaApis): DESCRIBE on each topic, else its
//     partitions answer TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
)

// The special timestamps of ListOffsets.
const (
	latestTimestamp        = -1
	earliestTimestamp      = -2
	maxTimestamp           = -3
	earliestLocalTimestamp = -4
	latestTieredTimestamp  = -5
	earliestPendingUpload  = -6
)

// timestampSince is the version each special timestamp came with; -1 and
// -2 are as old as the API.
var timestampSince = map[int64]int16{
	latestTimestamp:        0,
	earliestTimestamp:      0,
	maxTimestamp:           7,
	earliestLocalTimestamp: 8,
	latestTieredTimestamp:  9,
	earliestPendingUpload:  11,
}

// timestampServed reports whether a request of version v may ask for ts.
func timestampServed(v int16, ts int64) bool {
	if ts >= 0 {
		return true
	}
	since, ok := timestampSince[ts]
	return ok && v >= since
}

func handleListOffsets(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Version = req.Version
	describable := b.authz(c).topics(kmsg.ACLOperationDescribe)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		allowed := describable(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if !timestampServed(req.Version, rp.Timestamp) {
				sp.ErrorCode = kerr.UnsupportedVersion.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := b.leaderPartition(rt.Topic, rp.Partition)
			if err == nil {
				err = listOffset(p, rp, req.ReplicaID >= 0, req.IsolationLevel == 1, &sp)
			}
			sp.ErrorCode = b.errCode(err, "list offsets")
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func listOffset(p *replica.Partition, rp kmsg.ListOffsetsRequestTopicPartition, fromReplica, readCommitted bool, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	off := p.Offsets()
	// The last offset a consumer of this isolation level may read up to;
	// a replica may see the whole log.
	fetchable := off.HighWatermark
	switch {
	case fromReplica:
		fetchable = off.LogEndOffset
	case readCommitted:
		fetchable = off.LastStableOffset
	}
	if err := replica.CheckLeaderEpoch(rp.CurrentLeaderEpoch, off.LeaderEpoch); err != nil {
		return err
	}
	switch rp.Timestamp {
	case latestTimestamp:
		sp.Offset, sp.LeaderEpoch = fetchable, off.LeaderEpoch
	case earliestTimestamp, earliestLocalTimestamp:
		sp.Offset, sp.LeaderEpoch = off.LogStartOffset, off.LeaderEpoch
	case latestTieredTimestamp, earliestPendingUpload:
	case maxTimestamp:
		maxTs := int64(-1)
		for _, seg := range p.Log().Segments() {
			maxTs = max(maxTs, seg.MaxTimestamp)
		}
		if maxTs < 0 {
			break
		}
		offset, ts, ok, err := offsetForTimestamp(p, maxTs, fetchable)
		if err != nil {
			return err
		}
		if ok {
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = ts, offset, off.LeaderEpoch
		}
	default:
		offset, ts, ok, err := offsetForTimestamp(p, rp.Timestamp, fetchable)
		if err != nil {
			return err
		}
		if ok {
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = ts, offset, off.LeaderEpoch
		}
	}
	return nil
}

// OffsetForTimestamp is offsetForTimestamp for other packages: the share
// partitions' share.auto.offset.reset=by_duration.
func OffsetForTimestamp(p *replica.Partition, ts, hw int64) (offset int64, found bool, err error) {
	offset, _, found, err = offsetForTimestamp(p, ts, hw)
	return offset, found, err
}

// offsetForTimestamp finds the first record at or after ts below hw: the
// log's time index names the batch, and the batch's records the offset.
func offsetForTimestamp(p *replica.Partition, ts, hw int64) (int64, int64, bool, error) {
	from, _, found, err := p.OffsetForTimestamp(ts)
	if err != nil {
		return -1, -1, false, err
	}
	for found && from < hw {
		data, _, err := p.Read(from, 1, true)
		if err != nil || len(data) == 0 {
			return -1, -1, false, err
		}
		recs, err := record.Records(data)
		if err != nil {
			return -1, -1, false, err
		}
		for _, r := range recs {
			if r.Offset >= from && r.Offset < hw && r.Timestamp >= ts {
				return r.Offset, r.Timestamp, true, nil
			}
		}
		h, err := record.ParseHeader(data)
		if err != nil {
			return -1, -1, false, err
		}
		from = h.NextOffset()
	}
	return -1, -1, false, nil
}
