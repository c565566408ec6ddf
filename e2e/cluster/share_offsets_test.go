package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// TestShareGroupOffsetsAcrossNodes: a share group of a topic whose three
// partitions are led by the three nodes (wherever its group coordinator
// is) is described, altered and deleted through the group coordinator,
// and every partition leader serves the new start offsets to the next
// member, not the state it had cached: exact start offsets and lags, and
// exactly the records past the new start offsets are delivered.
func TestShareGroupOffsetsAcrossNodes(t *testing.T) {
	const (
		topic = "jobs"
		group = "jobs-workers"
	)
	c := startCluster(t, 3)
	admCl := client(t, c)
	adm := kadm.NewClient(admCl)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	setGroupConfig(ctx, t, admCl, group, "share.auto.offset.reset", "earliest")

	prod := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(n int) {
		for p := range int32(3) {
			for i := range n {
				prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}, nil)
			}
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// want is a start offset per partition; every offset from it to end
	// is to be delivered, none below.
	consume := func(want [3]int64, end int64) {
		consumeShare(ctx, t, c, group, topic, want, end)
		waitEmptyShareGroup(ctx, t, adm, group)
	}

	produce(10)
	consume([3]int64{0, 0, 0}, 10)
	waitShareOffsets(ctx, t, admCl, group, topic, [3]int64{10, 10, 10}, [3]int64{0, 0, 0})

	produce(5) // offsets 10-14
	waitShareOffsets(ctx, t, admCl, group, topic, [3]int64{10, 10, 10}, [3]int64{5, 5, 5})

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	for p, off := range map[int32]int64{0: 2, 1: 12} {
		ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		ap.Partition, ap.StartOffset = p, off
		at.Partitions = append(at.Partitions, ap)
	}
	alter.Topics = append(alter.Topics, at)
	aresp, err := alter.RequestWith(ctx, admCl)
	if err != nil || aresp.ErrorCode != 0 {
		t.Fatalf("alter share group offsets: %v %+v", err, aresp)
	}
	for _, rt := range aresp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("alter %s-%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	waitShareOffsets(ctx, t, admCl, group, topic, [3]int64{2, 12, 10}, [3]int64{13, 3, 5})
	consume([3]int64{2, 12, 10}, 15)
	waitShareOffsets(ctx, t, admCl, group, topic, [3]int64{15, 15, 15}, [3]int64{0, 0, 0})

	// A group with a member: NON_EMPTY_GROUP for alter and delete.
	member, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	go member.PollFetches(ctx)
	waitFor(t, 30*time.Second, "a member in the group", func() (bool, string) {
		gs, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		return len(gs[group].Members) == 1, fmt.Sprintf("%d members", len(gs[group].Members))
	})
	if resp, err := alter.RequestWith(ctx, admCl); err != nil || resp.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v %+v, want NON_EMPTY_GROUP", err, resp)
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = topic
	del.Topics = append(del.Topics, dt)
	if dresp, err := del.RequestWith(ctx, admCl); err != nil || dresp.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v %+v, want NON_EMPTY_GROUP", err, dresp)
	}
	member.Close()
	waitEmptyShareGroup(ctx, t, adm, group)

	// Deleted offsets start over at share.auto.offset.reset (earliest).
	dresp, err := del.RequestWith(ctx, admCl)
	if err != nil || dresp.ErrorCode != 0 || len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete share group offsets: %v %+v", err, dresp)
	}
	consume([3]int64{0, 0, 0}, 15)
	waitShareOffsets(ctx, t, admCl, group, topic, [3]int64{15, 15, 15}, [3]int64{0, 0, 0})
}

// setGroupConfig sets a group config with IncrementalAlterConfigs.
func setGroupConfig(ctx context.Context, t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set %s: %v %+v", name, err, resp)
	}
}

// consumeShare joins the share group with one franz-go share consumer,
// accepts records until every offset from want[p] to end of each
// partition p was delivered, and leaves. An offset below want[p] fails
// the test.
func consumeShare(ctx context.Context, t *testing.T, c *devcluster.Cluster, group, topic string, want [3]int64, end int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[[2]int64]bool{}
	missing := func() int { return 3*int(end) - int(want[0]+want[1]+want[2]) - len(seen) }
	deadline := time.Now().Add(60 * time.Second)
	for missing() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d records of %v..%d not delivered; delivered %v", missing(), want, end, seen)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		recs := fs.Records()
		for _, r := range recs {
			if r.Offset < want[r.Partition] || r.Offset >= end {
				t.Fatalf("delivered %s-%d offset %d, want only %d..%d", r.Topic, r.Partition, r.Offset, want[r.Partition], end-1)
			}
			seen[[2]int64{int64(r.Partition), r.Offset}] = true
		}
		cl.MarkAcks(kgo.AckAccept, recs...)
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("acknowledging: %v", err)
		}
	}
}

// waitEmptyShareGroup waits until the group has no members.
func waitEmptyShareGroup(ctx context.Context, t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	waitFor(t, 30*time.Second, "share group empty", func() (bool, string) {
		gs, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		g := gs[group]
		return g.Err == nil && len(g.Members) == 0, fmt.Sprintf("%d members, %v", len(g.Members), g.Err)
	})
}

// waitShareOffsets waits until DescribeShareGroupOffsets v1 reports the
// start offsets and lags of the topic's three partitions.
func waitShareOffsets(ctx context.Context, t *testing.T, cl *kgo.Client, group, topic string, start, lag [3]int64) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("start offsets %v, lags %v", start, lag), func() (bool, string) {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{0, 1, 2}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		var gotStart, gotLag [3]int64
		for _, g := range resp.Groups {
			if g.ErrorCode != 0 {
				return false, kerr.ErrorForCode(g.ErrorCode).Error()
			}
			for _, dt := range g.Topics {
				for _, dp := range dt.Partitions {
					if dp.ErrorCode != 0 || dp.Partition < 0 || dp.Partition > 2 {
						return false, fmt.Sprintf("partition %d: %v", dp.Partition, kerr.ErrorForCode(dp.ErrorCode))
					}
					gotStart[dp.Partition], gotLag[dp.Partition] = dp.StartOffset, dp.Lag
				}
			}
		}
		return gotStart == start && gotLag == lag, fmt.Sprintf("start offsets %v, lags %v", gotStart, gotLag)
	})
}
