package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// TestReturningLeaderTruncatesUncommittedTail makes a leader hold records
// no follower has: both followers are paused (SIGSTOP) while it takes
// acks=1 writes, then it is killed and the followers resume. A follower
// becomes leader and takes new records at the same offsets. When the old
// leader returns it must drop its divergent tail: made leader again, it
// serves the new records, never the uncommitted ones.
func TestReturningLeaderTruncatesUncommittedTail(t *testing.T) {
	const topic = "diverge"
	// Pausing both followers must not get them fenced or dropped from the
	// ISR before the leader is killed: longer session and lag limits. A
	// follower fetch brings one batch at most (replica.fetch.max.bytes=1:
	// only the first batch, which is always returned), so the fetch a
	// follower had parked on the leader when it was paused carries at most
	// the first acks=1 record, however late the leader answers it.
	c := startCluster(t, 3, "broker.session.timeout.ms=8000", "replica.lag.time.max.ms=15000", "replica.fetch.max.bytes=1")
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

	// Only the leader gets these: its followers are paused. The acks=1
	// client first writes one record while all is well, so it knows the
	// leader and has its connection: a paused broker accepts connections
	// but never answers, and the client must not wait on one.
	one := client(t, c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(time.Minute), kgo.MetadataMaxAge(time.Minute))
	produce(one, "warm-up", 1)
	for _, id := range followers {
		c.Node(id).Pause()
	}
	paused := time.Now()
	lost := produce(one, "uncommitted", 5)
	c.Node(old).Kill()
	t.Logf("acks=1 writes took %v", time.Since(paused).Round(time.Millisecond))
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
	produce(all, "new", 5)
	// The log as the new leader has it. A fetch the paused followers had
	// parked on the old leader may have brought them the first acks=1
	// record before they stopped; none can have more.
	reference := readAll(t, ctx, c, topic)
	diverged := 0
	for i, off := range lost {
		if off >= int64(len(reference)) || reference[off] != fmt.Sprintf("%d:uncommitted-%d", off, i) {
			diverged++
		}
	}
	if diverged == 0 {
		t.Fatalf("the new leader has every acks=1 record %v: nothing diverged, %v", lost, reference)
	}
	t.Logf("new leader's log: %v (%d of the old leader's acks=1 records are not in it)", reference, diverged)

	restart := time.Now()
	if err := c.Node(old).Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d restarted in %v", old, time.Since(restart).Round(time.Millisecond))
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
	if got := readAll(t, ctx, c, topic); !slices.Equal(got, reference) {
		t.Fatalf("node %d as leader serves\n%v\nwant the log it truncated to and caught up with\n%v", old, got, reference)
	}
}

// readAll reads partition 0 of topic from its leader up to the high
// watermark, as "offset:value" strings.
func readAll(t *testing.T, ctx context.Context, c *devcluster.Cluster, topic string) []string {
	t.Helper()
	adm := kadm.NewClient(client(t, c))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	reader := client(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for int64(len(got)) < end.Offset {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d records: %v", len(got), end.Offset, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	return got
}
