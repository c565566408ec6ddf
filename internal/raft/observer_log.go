package raft

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
)

// MetadataLog serves the metadata log to observers (broker-only
// nodes) the way a Kafka quorum leader does (KIP-595): Fetch and
// FetchSnapshot on partition 0 of __cluster_metadata.
//
// Offsets are raft indexes. Each committed entry is one v2 record batch
// whose base offset is its index, whose partition leader epoch is its
// term and whose single record's value is the entry's payload, exactly
// what the voters' Applier applies; entries the Applier never sees (leader
// no-ops, barriers, membership changes) carry a null value. The high
// watermark is commit+1, Kafka's "next offset". Only the raft leader
// answers: another voter says NOT_LEADER_OR_FOLLOWER with the leader it
// knows in CurrentLeader. A fetch below the log start answers no error and
// the latest snapshot's SnapshotID (end offset = snapshot index + 1), which
// the observer downloads with FetchSnapshot: its bytes are the Applier's
// Snapshot() output.

// MetadataTopic is the name Kafka gives the metadata log.
const MetadataTopic = "__cluster_metadata"

// metadataTopicID is Kafka's fixed topic id of __cluster_metadata
// (Uuid.METADATA_TOPIC_ID), used by Fetch v13+.
var metadataTopicID = [16]byte{15: 1}

// ObserverAPI is a request a MetadataLog serves, with its versions.
type ObserverAPI struct {
	Key      kmsg.Key
	Min, Max int16
}

// ObserverAPIs are the requests a MetadataLog serves.
func ObserverAPIs() []ObserverAPI {
	return []ObserverAPI{{kmsg.Fetch, 12, 16}, {kmsg.FetchSnapshot, 0, 1}}
}

// maxMetadataFetchWait caps MaxWaitMillis, so a shutdown is never held up.
const maxMetadataFetchWait = 5 * time.Second

// MetadataLog answers observer fetches from a voter's Node; only the
// leader's answers carry entries.
type MetadataLog struct {
	raft *Node
}

// NewMetadataLog serves n's log.
func NewMetadataLog(n *Node) *MetadataLog { return &MetadataLog{raft: n} }

// Handle answers one of ObserverAPIs; the caller sets the response
// version.
func (m *MetadataLog) Handle(ctx context.Context, req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.FetchRequest:
		return m.fetch(ctx, req)
	case *kmsg.FetchSnapshotRequest:
		return m.fetchSnapshot(ctx, req)
	}
	panic("raft: MetadataLog does not serve " + kmsg.NameForKey(req.Key()))
}

func (m *MetadataLog) notLeader() kmsg.FetchResponseTopicPartitionCurrentLeader {
	cl := kmsg.NewFetchResponseTopicPartitionCurrentLeader()
	cl.LeaderID, cl.LeaderEpoch = -1, int32(m.raft.Term())
	if id := m.raft.Leader(); id != 0 {
		cl.LeaderID = int32(id)
	}
	return cl
}

// fetch answers a Fetch request; only partition 0 of the metadata topic
// exists.
func (m *MetadataLog) fetch(ctx context.Context, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.GetVersion())
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, maxMetadataFetchWait)
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		isMeta := (req.Version <= 12 && t.Topic == MetadataTopic) || (req.Version >= 13 && t.TopicID == metadataTopicID)
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			if !isMeta || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				replica := req.ReplicaID
				if req.Version >= 15 {
					replica = req.ReplicaState.ID
				}
				if m.raft.IsLeader() {
					m.raft.noteObserver(replica, p.FetchOffset)
				}
				m.fetchPartition(ctx, p, wait, req.MaxBytes, &rp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	m.addLeaderEndpoint(ctx, resp)
	return resp
}

// addLeaderEndpoint names, in a Fetch answer that points to another
// leader (v16+), that leader's controller endpoint (Kafka's
// NodeEndpoints), so an observer can reach a leader it did not know.
func (m *MetadataLog) addLeaderEndpoint(ctx context.Context, resp *kmsg.FetchResponse) {
	if resp.Version < 16 {
		return
	}
	leader := int32(-1)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == kerr.NotLeaderForPartition.Code && p.CurrentLeader.LeaderID > 0 {
				leader = p.CurrentLeader.LeaderID
			}
		}
	}
	if leader < 0 {
		return
	}
	voters, _, err := m.raft.Voters(ctx)
	if err != nil {
		return
	}
	for _, v := range voters {
		if v.ID == uint64(leader) && len(v.Endpoints) > 0 {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Host, b.Port = leader, v.Endpoints[0].Host, int32(v.Endpoints[0].Port)
			resp.Brokers = append(resp.Brokers, b)
		}
	}
}

// fetchPartition fills rp with the committed entries from p.FetchOffset,
// waiting up to wait for some to commit.
func (m *MetadataLog) fetchPartition(ctx context.Context, p kmsg.FetchRequestTopicPartition, wait time.Duration, maxBytes int32, rp *kmsg.FetchResponseTopicPartition) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	from := uint64(max(p.FetchOffset, 0))
	if p.PartitionMaxBytes > 0 {
		maxBytes = min(maxBytes, p.PartitionMaxBytes)
	}
	for {
		if !m.raft.IsLeader() {
			rp.ErrorCode, rp.CurrentLeader = kerr.NotLeaderForPartition.Code, m.notLeader()
			return
		}
		commit, changed := m.raft.Commit()
		rp.HighWatermark, rp.LastStableOffset = int64(commit)+1, int64(commit)+1
		ents, err := m.raft.CommittedEntries(ctx, from, int(maxBytes))
		if errors.Is(err, ErrCompacted) {
			snap, serr := m.raft.LatestSnapshot(ctx)
			if serr != nil {
				rp.ErrorCode = kafkaCode(serr)
				return
			}
			rp.LogStartOffset = int64(snap.Index) + 1
			if len(snap.Data) == 0 {
				// The bootstrap checkpoint holds nothing to load:
				// start after it.
				from = snap.Index + 1
				continue
			}
			rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = int64(snap.Index)+1, int32(snap.Term)
			return
		}
		if err != nil {
			rp.ErrorCode = kafkaCode(err)
			return
		}
		if len(ents) > 0 {
			for _, e := range ents {
				opts := record.BuildOptions{BaseOffset: int64(e.Index), PartitionLeaderEpoch: int32(e.Term)}
				rec := record.Record{Value: e.Data}
				if e.Voters != nil {
					opts.Control = true
					rec = record.Record{Key: votersControlKey(), Value: appendVotersRecord(nil, e.Voters)}
				}
				b, err := record.AppendBuild(rp.RecordBatches, opts, []record.Record{rec})
				if err != nil {
					rp.ErrorCode = kafkaCode(err)
					return
				}
				rp.RecordBatches = b
			}
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// fetchSnapshot answers FetchSnapshot with a chunk of the latest snapshot.
func (m *MetadataLog) fetchSnapshot(ctx context.Context, req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
	resp.SetVersion(req.GetVersion())
	for _, t := range req.Topics {
		rt := kmsg.NewFetchSnapshotResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchSnapshotResponseTopicPartition()
			rp.Partition = p.Partition
			if t.Topic != MetadataTopic || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				m.snapshotChunk(ctx, p, req.MaxBytes, &rp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (m *MetadataLog) snapshotChunk(ctx context.Context, p kmsg.FetchSnapshotRequestTopicPartition, maxBytes int32, rp *kmsg.FetchSnapshotResponseTopicPartition) {
	if !m.raft.IsLeader() {
		cl := m.notLeader()
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = cl.LeaderID, cl.LeaderEpoch
		return
	}
	snap, err := m.raft.LatestSnapshot(ctx)
	if err != nil {
		rp.ErrorCode = kafkaCode(err)
		return
	}
	if len(snap.Data) == 0 || p.SnapshotID.EndOffset != int64(snap.Index)+1 || p.SnapshotID.Epoch != int32(snap.Term) {
		rp.ErrorCode = kerr.SnapshotNotFound.Code
		return
	}
	// The voters at the snapshot travel with it, as in the raft log.
	data := wrapSnapshot(snap.Voters, snap.Data)
	if p.Position < 0 || p.Position > int64(len(data)) {
		rp.ErrorCode = kerr.PositionOutOfRange.Code
		return
	}
	rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = p.SnapshotID.EndOffset, p.SnapshotID.Epoch
	end := int64(len(data))
	if maxBytes > 0 {
		end = min(end, p.Position+int64(maxBytes))
	}
	rp.Size, rp.Position, rp.Bytes = int64(len(data)), p.Position, data[p.Position:end]
}

// kafkaCode is err's Kafka code (UNKNOWN_SERVER_ERROR for others).
func kafkaCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
