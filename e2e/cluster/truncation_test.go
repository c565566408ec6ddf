package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReturningLeaderTruncatesUncommittedTail makes a leader hold records
// no follower has: both followers are paused (SIGSTOP) while it takes
// acks=1 writes, then it is killed and the followers resume. A follower
// becomes leader and takes new records at the same offsets. When the old
// leader returns it must drop its divergent tail: made leader again, it
// serves the new records, never the uncommitted ones.
func TestReturningLeaderTruncatesUncommittedTail(t *testing.T) {
	const topic = "diverge"
	c := startCluster(t, 3)
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	minISR := "1"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	parts := waitFullISR(t, adm, topic, 30*time.Second)
	old := parts[0].Leader
	if parts[0].Replicas[0] != old {
		t.Fatalf("leader %d is not the preferred replica of %v", old, parts[0].Replicas)
	}
	var followers []int32
	for _, id := range parts[0].Replicas {
		if id != old {
			followers = append(followers, id)
		}
	}

	produce := func(cl *kgo.Client, prefix string, n int) []int64 {
		t.Helper()
		var offsets []int64
		for i := range n {
			r := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
			if err := r.FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", prefix, i, err)
			}
			rec, _ := r.First()
			offsets = append(offsets, rec.Offset)
		}
		return offsets
	}
	all := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(all, "committed", 10)

	// Only the leader gets these: its followers are paused.
	one := client(t, c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	one.ForceMetadataRefresh()
	for _, id := range followers {
		c.Node(id).Pause()
	}
	lost := produce(one, "uncommitted", 5)
	c.Node(old).Kill()
	for _, id := range followers {
		c.Node(id).Resume()
	}
	t.Logf("node %d took offsets %v with acks=1 while followers %v were paused, then was killed", old, lost, followers)

	waitFor(t, 30*time.Second, "a follower takes over", func() (bool, string) {
		p, _, err := describe(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(followers, p[0].Leader), fmt.Sprintf("%+v", p[0])
	})
	replaced := produce(all, "new", 5)
	if !slices.Equal(replaced, lost) {
		t.Fatalf("the new leader wrote at %v, want the offsets the old leader lost, %v", replaced, lost)
	}

	if err := c.Node(old).Start(); err != nil {
		t.Fatal(err)
	}
	waitFullISR(t, adm, topic, 60*time.Second)
	// Make the returning node leader again and read everything from it.
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatalf("elect preferred leader: %v", err)
	}
	for _, r := range res[topic] {
		if r.Err != nil {
			t.Fatalf("elect preferred leader: %v", r.Err)
		}
	}
	waitFor(t, 30*time.Second, "node back as leader", func() (bool, string) {
		p, _, err := describe(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		return p[0].Leader == old, fmt.Sprintf("%+v", p[0])
	})
	reader := client(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 15 {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of 15 records: %v", len(got), got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("%d:committed-%d", i, i))
	}
	for i := range 5 {
		want = append(want, fmt.Sprintf("%d:new-%d", 10+i, i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("node %d as leader serves\n%v\nwant\n%v", old, got, want)
	}
}
