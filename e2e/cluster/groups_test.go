package cluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupSurvivesCoordinatorKill runs a consumer group through a SIGKILL
// of its coordinator. Every record must be processed, and every offset
// commit the coordinator acknowledged must survive the failover: the
// committed offsets never go back.
func TestGroupSurvivesCoordinatorKill(t *testing.T) {
	const (
		topic   = "work"
		group   = "workers"
		records = 3000
	)
	c := startCluster(t, 3)
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 6, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	prod := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var (
		mu        sync.Mutex
		processed = map[string]int{}
	)
	consume := func(ctx context.Context, name string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ClientID(name), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			var batch []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { batch = append(batch, r) })
			if len(batch) == 0 {
				continue
			}
			mu.Lock()
			for _, r := range batch {
				processed[string(r.Value)]++
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // work
			// A failed commit (coordinator gone) is retried by the
			// next one; the records may then be redelivered.
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			cl.CommitRecords(cctx, batch...)
			ccancel()
		}
	}
	cctx, stopConsumers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); consume(cctx, fmt.Sprintf("worker-%d", i)) }()
	}

	// committed asks the coordinator for the group's offsets, retrying
	// while it moves or loads. Each call uses a new client: kadm keeps the
	// coordinator it found until it answers with a coordinator error, so a
	// dead coordinator would be dialled forever.
	committed := func() map[int32]int64 {
		var lastErr error
		defer func() {
			if lastErr != nil {
				t.Logf("fetch committed offsets failed before succeeding: %v", lastErr)
			}
		}()
		for {
			out := map[int32]int64{}
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
			if err != nil {
				t.Fatal(err)
			}
			fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
			offs, err := kadm.NewClient(cl).FetchOffsets(fctx, group)
			fcancel()
			cl.Close()
			if err == nil {
				err = offs.Error()
			}
			if err == nil {
				offs.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
				return out
			}
			lastErr = err
			if ctx.Err() != nil {
				t.Fatalf("fetch committed offsets: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Let the group work a while, then remember what was committed and kill
	// the coordinator.
	waitFor(t, 60*time.Second, "some commits", func() (bool, string) {
		sum := int64(0)
		for _, o := range committed() {
			sum += o
		}
		return sum > records/4, fmt.Sprint(sum)
	})
	before := committed()
	coords := adm.FindGroupCoordinators(ctx, group)
	var coordinator int32 = -1
	coords.Each(func(d kadm.FindCoordinatorResponse) { coordinator = d.NodeID })
	if coordinator < 0 {
		t.Fatal("no group coordinator")
	}
	t.Logf("killing group coordinator node %d; committed before: %v", coordinator, before)
	c.Node(coordinator).Kill()

	waitFor(t, 90*time.Second, "every record processed", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(processed) == records, fmt.Sprintf("%d of %d", len(processed), records)
	})
	// Commits acknowledged before the kill survived the failover.
	after := committed()
	for p, off := range before {
		if after[p] < off {
			t.Errorf("partition %d: committed offset went back from %d to %d after the coordinator failover", p, off, after[p])
		}
	}
	if err := c.Node(coordinator).Start(); err != nil {
		t.Fatal(err)
	}
	// The group finishes: all committed, lag 0.
	waitFor(t, 60*time.Second, "lag 0", func() (bool, string) {
		lag, err := adm.Lag(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		total := int64(0)
		lag.Each(func(l kadm.DescribedGroupLag) { total += l.Lag.Total() })
		return total == 0, fmt.Sprint(total)
	})
	stopConsumers()
	wg.Wait()
	dups := 0
	for _, n := range processed {
		dups += n - 1
	}
	t.Logf("%d records processed by the group through the coordinator kill (%d redelivered)", len(processed), dups)
}
