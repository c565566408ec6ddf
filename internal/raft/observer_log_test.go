package raft

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/record"
)

// openQuorum opens a one-voter metadata log whose Loader is the raft
// Applier, snapshotting every `every` entries.
func openQuorum(t *testing.T, every uint64) (*Node, *metadata.Loader) {
	t.Helper()
	loader := metadata.NewLoader("cluster", quietLogger())
	n, err := Open(Config{ID: 1, Dir: filepath.Join(t.TempDir(), "meta"), Applier: loader, Logger: quietLogger(),
		TickInterval: 10 * time.Millisecond, SnapshotEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, loader
}

// proposeFeature commits one metadata entry setting feature name.
func proposeFeature(t *testing.T, n *Node, name string, level int16) uint64 {
	t.Helper()
	data, err := metadata.EncodeBatch([]metadata.Record{&metadata.FeatureLevelRecord{Name: name, FeatureLevel: level}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	idx, err := n.Propose(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func metadataFetch(version int16, from int64, wait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaState.ID, req.ReplicaID = 7, 7
	req.MaxWaitMillis, req.MaxBytes = int32(wait/time.Millisecond), 1<<20
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = MetadataTopic, metadataTopicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.FetchOffset, p.PartitionMaxBytes = from, 1<<20
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func onlyPartition(t *testing.T, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response has %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// entries decodes a fetch answer: index → value.
func entries(t *testing.T, batches []byte) ([]int64, [][]byte) {
	t.Helper()
	var idx []int64
	var vals [][]byte
	for len(batches) > 0 {
		b, rest, err := record.NextBatch(batches)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := record.Validate(b); err != nil {
			t.Fatalf("invalid batch: %v", err)
		}
		recs, err := record.Records(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			idx, vals = append(idx, r.Offset), append(vals, r.Value)
		}
		batches = rest
	}
	return idx, vals
}

func TestMetadataLogFetchRangesAndLongPoll(t *testing.T) {
	n, _ := openQuorum(t, 1000)
	m := NewMetadataLog(n)
	ctx := context.Background()
	first := proposeFeature(t, n, "a", 1)
	last := proposeFeature(t, n, "b", 2)

	for _, v := range []int16{12, 16} { // by topic name, by topic id
		p := onlyPartition(t, m.fetch(ctx, metadataFetch(v, 1, 0)))
		if p.ErrorCode != 0 {
			t.Fatalf("v%d: error %v", v, kerr.ErrorForCode(p.ErrorCode))
		}
		idx, vals := entries(t, p.RecordBatches)
		// Index 1 is the bootstrap checkpoint: the log starts at 2.
		if len(idx) == 0 || idx[0] != 2 || idx[len(idx)-1] != int64(last) || p.HighWatermark != int64(last)+1 {
			t.Fatalf("v%d: indexes %v, high watermark %d; want 2..%d, %d", v, idx, p.HighWatermark, last, last+1)
		}
		for i, at := range idx {
			if i > 0 && at != idx[i-1]+1 {
				t.Fatalf("v%d: gap in indexes %v", v, idx)
			}
			if at == int64(first) {
				recs, err := metadata.DecodeBatch(vals[i])
				if err != nil || len(recs) != 1 || recs[0].(*metadata.FeatureLevelRecord).Name != "a" {
					t.Fatalf("entry %d decodes to %v, %v", at, recs, err)
				}
			}
			if at < int64(first) && vals[i] != nil {
				t.Fatalf("no-op entry %d has value %q", at, vals[i])
			}
		}
	}
	// From the middle.
	if idx, _ := entries(t, onlyPartition(t, m.fetch(ctx, metadataFetch(16, int64(last), 0))).RecordBatches); len(idx) != 1 || idx[0] != int64(last) {
		t.Fatalf("from %d: %v", last, idx)
	}
	// Caught up: the fetch waits MaxWait, then answers nothing.
	start := time.Now()
	p := onlyPartition(t, m.fetch(ctx, metadataFetch(16, int64(last)+1, 300*time.Millisecond)))
	if el := time.Since(start); el < 250*time.Millisecond || len(p.RecordBatches) != 0 || p.ErrorCode != 0 {
		t.Fatalf("caught-up fetch returned after %v with %d bytes, error %d", el, len(p.RecordBatches), p.ErrorCode)
	}
	// A commit during the wait answers it: a wait that runs out answers
	// nothing (as above), so getting the entry shows the commit woke it.
	go func() {
		time.Sleep(100 * time.Millisecond)
		proposeFeature(t, n, "c", 3)
	}()
	start = time.Now()
	p = onlyPartition(t, m.fetch(ctx, metadataFetch(16, int64(last)+1, maxMetadataFetchWait)))
	idx, _ := entries(t, p.RecordBatches)
	if len(idx) != 1 || idx[0] != int64(last)+1 {
		t.Fatalf("long poll returned %v after %v, want the entry committed during the wait", idx, time.Since(start))
	}
	// Another topic or partition is unknown.
	req := metadataFetch(12, 1, 0)
	req.Topics[0].Partitions[0].Partition = 1
	if p := onlyPartition(t, m.fetch(ctx, req)); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 1: error %d", p.ErrorCode)
	}
}

func TestMetadataLogSnapshotPath(t *testing.T) {
	n, loader := openQuorum(t, 5)
	m := NewMetadataLog(n)
	ctx := context.Background()
	for i := range 12 {
		proposeFeature(t, n, fmt.Sprintf("f%d", i%4), int16(i+1))
	}
	// Index 2 is compacted: the answer names the snapshot to load.
	p := onlyPartition(t, m.fetch(ctx, metadataFetch(16, 2, 0)))
	if p.ErrorCode != 0 || p.SnapshotID.EndOffset < 6 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch below log start: error %d, snapshot %+v, %d bytes", p.ErrorCode, p.SnapshotID, len(p.RecordBatches))
	}
	if p.LogStartOffset != p.SnapshotID.EndOffset {
		t.Fatalf("log start %d, snapshot end %d", p.LogStartOffset, p.SnapshotID.EndOffset)
	}
	// Download it in small chunks, as an observer with a small MaxBytes.
	var data []byte
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.MaxBytes = 7
		st := kmsg.NewFetchSnapshotRequestTopic()
		st.Topic = MetadataTopic
		sp := kmsg.NewFetchSnapshotRequestTopicPartition()
		sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch, sp.Position = p.SnapshotID.EndOffset, p.SnapshotID.Epoch, int64(len(data))
		st.Partitions = append(st.Partitions, sp)
		req.Topics = append(req.Topics, st)
		rp := m.fetchSnapshot(ctx, req).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 || rp.Position != int64(len(data)) || len(rp.Bytes) > 7 || len(rp.Bytes) == 0 {
			t.Fatalf("chunk at %d: error %d, position %d, %d bytes", len(data), rp.ErrorCode, rp.Position, len(rp.Bytes))
		}
		data = append(data, rp.Bytes...)
		if int64(len(data)) == rp.Size {
			break
		}
	}
	observer := metadata.NewLoader("cluster", quietLogger())
	if err := observer.Restore(data); err != nil {
		t.Fatal(err)
	}
	// Then the entries after the snapshot.
	p = onlyPartition(t, m.fetch(ctx, metadataFetch(16, p.SnapshotID.EndOffset, 0)))
	idx, vals := entries(t, p.RecordBatches)
	for i, at := range idx {
		if vals[i] != nil {
			if err := observer.Apply(uint64(at), vals[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, got := loader.Image(), observer.Image()
	if fmt.Sprint(got.Features()) != fmt.Sprint(want.Features()) || got.Offset != want.Offset {
		t.Fatalf("observer image at %d %v, voter at %d %v", got.Offset, got.Features(), want.Offset, want.Features())
	}
	// A snapshot that is not the latest is not found.
	req := kmsg.NewPtrFetchSnapshotRequest()
	st := kmsg.NewFetchSnapshotRequestTopic()
	st.Topic = MetadataTopic
	sp := kmsg.NewFetchSnapshotRequestTopicPartition()
	sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch = 3, 1
	st.Partitions = append(st.Partitions, sp)
	req.Topics = append(req.Topics, st)
	if c := m.fetchSnapshot(ctx, req).Topics[0].Partitions[0].ErrorCode; c != kerr.SnapshotNotFound.Code {
		t.Fatalf("old snapshot id: error %d, want SNAPSHOT_NOT_FOUND", c)
	}
}

// dropTransport loses every message: its node never hears a leader.
type dropTransport struct{}

func (dropTransport) Send([]*pb.Message) {}

func TestMetadataLogNonLeaderRefuses(t *testing.T) {
	n, err := Open(Config{ID: 2, Peers: []uint64{1, 2, 3}, Dir: t.TempDir(), Applier: metadata.NewLoader("c", quietLogger()),
		Logger: quietLogger(), Transport: dropTransport{}, TickInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	m := NewMetadataLog(n)
	p := onlyPartition(t, m.fetch(context.Background(), metadataFetch(16, 2, time.Second)))
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != -1 || len(p.RecordBatches) != 0 {
		t.Fatalf("follower answered error %d, leader %d", p.ErrorCode, p.CurrentLeader.LeaderID)
	}
	req := kmsg.NewPtrFetchSnapshotRequest()
	st := kmsg.NewFetchSnapshotRequestTopic()
	st.Topic = MetadataTopic
	st.Partitions = append(st.Partitions, kmsg.NewFetchSnapshotRequestTopicPartition())
	req.Topics = append(req.Topics, st)
	if c := m.fetchSnapshot(context.Background(), req).Topics[0].Partitions[0].ErrorCode; c != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower FetchSnapshot: error %d", c)
	}
}
