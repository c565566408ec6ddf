package broker

// Fetch, versions 4-18.
//
// Behavior:
//   - Batches are returned as stored: bytes from the log, never decoded.
//   - Limits: partition_max_bytes per partition and max_bytes for the whole
//     response, except that the first partition with data returns at least
//     one whole batch even when it is larger (KIP-74), so a consumer can
//     always make progress.
//   - Long poll: when fewer than min_bytes are ready, the request waits up
//     to max_wait_ms for an append to any of its partitions — unless
//     reading a partition failed (OFFSET_OUT_OF_RANGE, NOT_LEADER, a
//     leader epoch error, ...) or found a diverging epoch, which is
//     answered at once, as Kafka's ReplicaManager.fetchMessages does
//     (errorReadingData). A partition refused before it is read (not
//     authorized, unknown topic, no such partition) does not end the
//     wait, as Kafka filters those out first; a fetch with nothing else
//     is answered at once.
//   - Topics are named up to v12 and given by id from v13
//     (UNKNOWN_TOPIC_ID for an id we do not know).
//   - v18's per-partition HighWatermark (KIP-1166: the high watermark the
//     fetching replica knows, so that a leader can answer at once when
//     its own is newer) is read by Kafka's KRaft quorum only; Kafka 4.4's
//     broker ignores it for partition fetches, and so does Samsa (a move
//     of the high watermark already wakes a parked follower fetch).
//   - Fetch sessions (KIP-227) are not kept: every response carries session
//     id 0, which tells clients to send full requests. A request with
//     session epoch 0 (INITIAL_EPOCH: open a session) or -1 (FINAL_EPOCH:
//     no session; kafka-go sends it with session id -1) is a full fetch
//     whatever its session id, as in Kafka's FetchManager.newContext; any
//     other epoch continues a session, which is not found:
//     FETCH_SESSION_ID_NOT_FOUND, so the client starts over.
//   - current_leader_epoch is checked: older → FENCED_LEADER_EPOCH, newer →
//     UNKNOWN_LEADER_EPOCH.
//   - read_uncommitted consumers read up to the high watermark;
//     read_committed (isolation_level 1) stop at the last stable offset
//     (the first offset of the oldest open transaction) and get the
//     aborted transactions overlapping the returned batches, so the client
//     drops their records. Both are told the last stable offset.
//   - Consumers (replica id -1) are served by the partition leader only:
//     a follower answers NOT_LEADER_OR_FOLLOWER.
//   - A replica id >= 0 (replica_id before v15, replica_state.replica_id
//     from v15) is a follower replicating: the leader records its position
//     (which may advance the high watermark), reads up to the log end
//     offset, and answers diverging_epoch when the follower's log diverged
//     at its last fetched epoch. It long-polls like a consumer; a move of
//     the high watermark also wakes it.
//   - Authorization (KafkaApis): a consumer needs READ on each topic, a
//     follower CLUSTER_ACTION on the cluster; a partition without it
//     answers TOPIC_AUTHORIZATION_FAILED (a consumer's unknown topic id is
//     UNKNOWN_TOPIC_ID first, as its name is not known to authorize).

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleFetch(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	if req.SessionEpoch != 0 && req.SessionEpoch != -1 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.Version = req.Version
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	replicaID := fetchReplicaID(req)
	z := b.authz(c)
	readable := z.topics(kmsg.ACLOperationRead)
	if replicaID >= 0 {
		ok := z.cluster(kmsg.ACLOperationClusterAction)
		readable = func(string) bool { return ok }
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		resp, bytes, waitOn, urgent := b.fetchOnce(req, replicaID, readable)
		if bytes >= int(req.MinBytes) || req.MaxWaitMillis <= 0 || len(waitOn) == 0 || urgent {
			return resp, nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return resp, nil
		}
		back := away(ctx) // waiting for records is not handling (quota.go)
		appended := waitForAppend(ctx, waitOn, remaining)
		back()
		if !appended {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return resp, nil
		}
	}
}

// fetchOnce reads every requested partition once, for a consumer
// (replicaID -1) or a follower, of the topics readable allows. It returns
// the response, how many record bytes it holds, the partitions whose
// appends would change the answer, and whether reading a partition failed
// or found a diverging epoch (then waiting would only delay the news).
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, replicaID int32, readable func(topic string) bool) (resp *kmsg.FetchResponse, total int, waitOn []<-chan struct{}, urgent bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	resp.Version = req.Version
	img := b.cfg.Image()
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = int(^uint32(0) >> 1)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		var t *metadata.TopicImage
		var known bool
		if req.Version >= 13 {
			t, known = img.TopicByID(metadata.Uuid(rt.TopicID))
		} else {
			t, known = img.Topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Records are nullable on the wire, but Kafka always sends a
			// (possibly empty) record set, and librdkafka rejects a null
			// one ("invalid MessageSetSize -1").
			sp.RecordBatches = []byte{}
			name := rt.Topic
			if known {
				name = t.Name
			}
			if (known || req.Version < 13 || replicaID >= 0) && !readable(name) {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if !known {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if req.Version >= 13 {
					sp.ErrorCode = kerr.UnknownTopicID.Code
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, ok := b.cfg.Replicas.Partition(t.Name, rp.Partition)
			if !ok {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions) {
					// In the metadata, so read, and not led here.
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
					urgent = true
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			maxBytes := min(int(rp.PartitionMaxBytes), budget-total)
			var n int
			switch {
			case replicaID >= 0:
				waitOn = append(waitOn, p.Appended())
				n = b.fetchForFollower(p, replicaID, rp, &sp, maxBytes)
			case !p.IsLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				waitOn = append(waitOn, p.Appended())
				n = b.fetchPartition(p, rp, &sp, maxBytes, total == 0, req.IsolationLevel == 1)
			}
			total += n
			urgent = urgent || sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch >= 0
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, waitOn, urgent
}

// fetchPartition fills one partition's answer and returns its byte count.
func (b *Broker) fetchPartition(p *replica.Partition, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, maxBytes int, first, readCommitted bool) int {
	off := p.Offsets()
	sp.HighWatermark = off.HighWatermark
	sp.LastStableOffset = off.LastStableOffset
	sp.LogStartOffset = off.LogStartOffset
	if err := replica.CheckLeaderEpoch(rp.CurrentLeaderEpoch, off.LeaderEpoch); err != nil {
		sp.ErrorCode = b.errCode(err, "fetch")
		return 0
	}
	data, snap, aborted, err := p.ReadIsolated(rp.FetchOffset, maxBytes, first, readCommitted)
	sp.HighWatermark = snap.HighWatermark
	sp.LastStableOffset = snap.LastStableOffset
	sp.LogStartOffset = snap.LogStartOffset
	if err != nil {
		sp.ErrorCode = b.errCode(err, "fetch")
		return 0
	}
	if readCommitted {
		// An empty list rather than null, as Kafka answers read_committed.
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(aborted))
		for _, a := range aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, at)
		}
	}
	if len(data) > 0 {
		sp.RecordBatches = data
	}
	return len(data)
}

// fetchForFollower serves one partition to a follower replica and
// returns the byte count.
func (b *Broker) fetchForFollower(p *replica.Partition, replicaID int32, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, maxBytes int) int {
	res, err := p.FetchForFollower(replica.FollowerFetch{
		ReplicaID:          replicaID,
		FetchOffset:        rp.FetchOffset,
		LastFetchedEpoch:   rp.LastFetchedEpoch,
		CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
		MaxBytes:           max(maxBytes, 0),
	})
	if err != nil {
		sp.ErrorCode = b.errCode(err, "follower fetch")
		return 0
	}
	sp.HighWatermark = res.Offsets.HighWatermark
	sp.LastStableOffset = res.Offsets.LastStableOffset
	sp.LogStartOffset = res.Offsets.LogStartOffset
	if res.Diverging != nil {
		sp.DivergingEpoch.Epoch = res.Diverging.Epoch
		sp.DivergingEpoch.EndOffset = res.Diverging.EndOffset
		return 0
	}
	if len(res.Records) > 0 {
		sp.RecordBatches = res.Records
	}
	return len(res.Records)
}

// waitForAppend waits until one of chans is closed (an append happened),
// the timeout passes or ctx ends. It reports whether an append happened.
func waitForAppend(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 2
}

// fetchReplicaID is the replica a Fetch comes from: a follower's node id,
// or -1 for a consumer (v15+ carry it in ReplicaState).
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}
