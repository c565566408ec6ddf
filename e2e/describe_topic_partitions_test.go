package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// DescribeTopicPartitions (KIP-966) through franz-go: pages of at most
// response_partition_limit partitions in topic-name order, each naming
// where the next starts, and Kafka's answers for unknown topics and bad
// cursors.
func TestDescribeTopicPartitionsPaging(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for name, parts := range map[string]int32{"dtp-a": 3, "dtp-b": 2, "dtp-c": 1} {
		if r, err := adm.CreateTopic(ctx, parts, 1, nil, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	// page describes one request's answer: "topic:partition/leader ..."
	// and the cursor.
	page := func(topics []string, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor) (string, string) {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, n := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				out = append(out, *rt.Topic+":"+kerr.ErrorForCode(rt.ErrorCode).(*kerr.Error).Message)
				continue
			}
			for _, p := range rt.Partitions {
				if p.LeaderID != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 || len(p.OfflineReplicas) != 0 {
					t.Errorf("%s-%d: leader %d replicas %v isr %v offline %v", *rt.Topic, p.Partition, p.LeaderID, p.Replicas, p.ISR, p.OfflineReplicas)
				}
				out = append(out, fmt.Sprintf("%s:%d", *rt.Topic, p.Partition))
			}
		}
		next := ""
		if resp.NextCursor != nil {
			next = fmt.Sprintf("%s:%d", resp.NextCursor.Topic, resp.NextCursor.Partition)
		}
		return strings.Join(out, " "), next
	}
	at := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	for _, tc := range []struct {
		topics           []string
		limit            int32
		cursor           *kmsg.DescribeTopicPartitionsRequestCursor
		wantPage, wantAt string
	}{
		{nil, 2000, nil, "dtp-a:0 dtp-a:1 dtp-a:2 dtp-b:0 dtp-b:1 dtp-c:0", ""},
		{nil, 2, nil, "dtp-a:0 dtp-a:1", "dtp-a:2"},
		{nil, 2, at("dtp-a", 2), "dtp-a:2 dtp-b:0", "dtp-b:1"},
		{nil, 2, at("dtp-b", 1), "dtp-b:1 dtp-c:0", ""},
		// The limit reached at a topic's end: the cursor is the next
		// topic's first partition.
		{nil, 3, nil, "dtp-a:0 dtp-a:1 dtp-a:2", "dtp-b:0"},
		{[]string{"dtp-c", "dtp-a"}, 2000, nil, "dtp-a:0 dtp-a:1 dtp-a:2 dtp-c:0", ""},
		{[]string{"dtp-c", "missing", "dtp-a"}, 3, at("dtp-c", 0), "dtp-c:0 missing:UNKNOWN_TOPIC_OR_PARTITION", ""},
		{[]string{"dtp-a"}, 2000, at("dtp-b", 0), "dtp-a:INVALID_REQUEST", ""},
		{[]string{"dtp-a"}, 2000, at("dtp-a", -1), "dtp-a:INVALID_REQUEST", ""},
	} {
		got, gotAt := page(tc.topics, tc.limit, tc.cursor)
		if got != tc.wantPage || gotAt != tc.wantAt {
			t.Errorf("topics %v limit %d cursor %+v: %q next %q, want %q next %q", tc.topics, tc.limit, tc.cursor, got, gotAt, tc.wantPage, tc.wantAt)
		}
	}
}
