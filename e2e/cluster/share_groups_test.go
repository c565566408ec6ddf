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
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupSurvivesNodeKill: three franz-go share consumers of one
// share group read a replicated topic on three nodes while the leader of
// partition 0 is killed with SIGKILL halfway through producing, once they
// are consuming. Every
// acknowledged record is delivered (at least once: records acquired on the
// killed node may come again) and accepted.
func TestShareGroupSurvivesNodeKill(t *testing.T) {
	const (
		topic   = "queue"
		group   = "queue-workers"
		records = 1200
	)
	c := startCluster(t, 3)
	admCl := client(t, c)
	adm := kadm.NewClient(admCl)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 6, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	// The group reads from the start of each partition, whenever its
	// members first fetch.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	alter.Resources = append(alter.Resources, res)
	if resp, err := alter.RequestWith(ctx, admCl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.auto.offset.reset: %v %+v", err, resp)
	}

	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 3 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.ClientID(fmt.Sprintf("worker-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for cctx.Err() == nil {
				cl.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
			}
		}()
	}

	prod := client(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %d: %v", i, err)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, records/2)
	// The kill comes once the group is consuming: its state lives in
	// __share_group_state (replication factor 3), which cannot be created
	// while one of three brokers is down.
	waitFor(t, 60*time.Second, "first records delivered", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= records/8, fmt.Sprintf("%d of %d", len(seen), records/2)
	})
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics[topic].Partitions[0].Leader
	t.Logf("killing node %d, leader of %s-0", leader, topic)
	c.Node(leader).Kill()
	produce(records/2, records)

	waitFor(t, 90*time.Second, "every record delivered", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == records, fmt.Sprintf("%d of %d", len(seen), records)
	})
	stop()
	wg.Wait()
	if err := c.Node(leader).Start(); err != nil {
		t.Fatal(err)
	}
}
