package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/record"
)

// The newest versions of Kafka 4.4's APIs, each sent at exactly that
// version with kmsg over a real socket, and what the version adds checked
// the way a client reads it. The expectations are Kafka 4.4's answers to
// the same requests.

// pinnedKgo is a client that sends key at version v at most (the broker
// must serve v: the answers are checked to be at v).
func pinnedKgo(t *testing.T, addr string, key kmsg.Key, v int16) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(key), v)
	return newKgo(t, addr, kgo.MaxVersions(vs))
}

// wantVersion fails unless resp was answered at version v.
func wantVersion(t *testing.T, resp kmsg.Response, v int16) {
	t.Helper()
	if got := resp.GetVersion(); got != v {
		t.Fatalf("%s answered at v%d, want v%d", kmsg.NameForKey(resp.Key()), got, v)
	}
}

// codeOf is err's code, 0 for nil.
func codeOf(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// clusterAndNode is the cluster id and the node id Metadata reports.
func clusterAndNode(t *testing.T, ctx context.Context, cl *kgo.Client) (string, int32) {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if resp.ClusterID == nil || len(resp.Brokers) != 1 {
		t.Fatalf("Metadata: cluster %v, %d brokers", resp.ClusterID, len(resp.Brokers))
	}
	return *resp.ClusterID, resp.Brokers[0].NodeID
}

// TestKafka44ApiVersionsV5: a client names the cluster and node it means
// to reach (KIP-1242); a mismatch answers REBOOTSTRAP_REQUIRED with no API
// table, one of the two without the other INVALID_REQUEST.
func TestKafka44ApiVersionsV5(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	cluster, node := clusterAndNode(t, ctx, newKgo(t, addr))
	other := "not-" + cluster
	for _, tc := range []struct {
		name    string
		cluster *string
		node    int32
		want    *kerr.Error // nil: the table
	}{
		{"bootstrapping (neither)", nil, -1, nil},
		{"this cluster and node", &cluster, node, nil},
		{"another node", &cluster, node + 1, kerr.RebootstrapRequired},
		{"another cluster", &other, node, kerr.RebootstrapRequired},
		{"an empty cluster id", new(string), node, kerr.RebootstrapRequired},
		{"a cluster without a node", &cluster, -1, kerr.InvalidRequest},
		{"a node without a cluster", nil, node, kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawDial(t, addr)
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 5
			req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-e2e", "1.0"
			req.ClusterID, req.NodeID = tc.cluster, tc.node
			rawWrite(t, c, rawFrame(req, 9))
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 5
			if cid := rawDecode(t, c, resp); cid != 9 {
				t.Fatalf("correlation id %d, want 9", cid)
			}
			if tc.want == nil {
				if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 || resp.FinalizedFeaturesEpoch < 0 {
					t.Fatalf("error %v, %d keys, finalized features epoch %d; want the table", kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys), resp.FinalizedFeaturesEpoch)
				}
				for _, k := range resp.ApiKeys {
					if k.ApiKey == int16(kmsg.ApiVersions) && k.MaxVersion < 5 {
						t.Errorf("ApiVersions advertised up to v%d, want v5", k.MaxVersion)
					}
				}
				return
			}
			wantCode(t, "ApiVersions v5", resp.ErrorCode, tc.want)
			if len(resp.ApiKeys) != 0 || len(resp.SupportedFeatures) != 0 {
				t.Errorf("%d keys and %d features with the error, want none", len(resp.ApiKeys), len(resp.SupportedFeatures))
			}
		})
	}
	// franz-go sends v5 with the ids it learned from Metadata on every
	// connection to a known broker: it keeps working.
	cl := newKgo(t, addr)
	clusterAndNode(t, ctx, cl)
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(int(node))); err != nil {
		t.Fatalf("Metadata from broker %d: %v", node, err)
	}
}

// commitStandalone commits offset 1 of partition 0 of topic for group
// outside any generation, which leaves an Empty classic group.
func commitStandalone(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetCommit: %+v, want partition 0 committed", resp.Topics)
	}
}

// TestKafka44DescribeGroupsV6: from v6 a group that does not exist
// answers GROUP_ID_NOT_FOUND with Kafka's message instead of an error-free
// Dead group (KIP-1043); a described group carries no message.
func TestKafka44DescribeGroupsV6(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("franz", "describe-groups-v6")
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)
	v9 := kversion.Stable()
	v9.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	commitStandalone(t, ctx, newKgo(t, addr, kgo.MaxVersions(v9)), "empty-group", topic)

	describe := func(v int16) map[string]kmsg.DescribeGroupsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"no-such-group", "empty-group"}
		resp, err := req.RequestWith(ctx, pinnedKgo(t, addr, kmsg.DescribeGroups, v))
		if err != nil {
			t.Fatalf("DescribeGroups v%d: %v", v, err)
		}
		wantVersion(t, resp, v)
		out := map[string]kmsg.DescribeGroupsResponseGroup{}
		for _, g := range resp.Groups {
			out[g.Group] = g
		}
		if len(out) != 2 {
			t.Fatalf("DescribeGroups v%d: %+v, want both groups", v, resp.Groups)
		}
		return out
	}
	v6 := describe(6)
	missing := v6["no-such-group"]
	wantCode(t, "DescribeGroups v6 of a missing group", missing.ErrorCode, kerr.GroupIDNotFound)
	if missing.ErrorMessage == nil || *missing.ErrorMessage != "Group no-such-group not found." || missing.State != "Dead" {
		t.Errorf("missing group at v6: message %v, state %q; want Kafka's \"Group no-such-group not found.\", Dead", missing.ErrorMessage, missing.State)
	}
	if g := v6["empty-group"]; g.ErrorCode != 0 || g.ErrorMessage != nil || g.State != "Empty" {
		t.Errorf("committed group at v6: error %d, message %v, state %q; want Empty, no error", g.ErrorCode, g.ErrorMessage, g.State)
	}
	v5 := describe(5)
	if g := v5["no-such-group"]; g.ErrorCode != 0 || g.State != "Dead" {
		t.Errorf("missing group at v5: error %d, state %q; want Dead, no error", g.ErrorCode, g.State)
	}
}

// TestKafka44ListTransactionsV2: v2 filters by a regular expression the
// whole transactional id must match (KIP-1152), as Kafka 4.4's re2j
// Matcher.matches; a pattern that does not compile answers
// INVALID_REGULAR_EXPRESSION alone.
func TestKafka44ListTransactionsV2(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("franz", "list-transactions-v2")
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)
	for _, id := range []string{"tx-a", "tx-b", "other.tx"} {
		cl := newKgo(t, addr, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction %s: %v", id, err)
		}
		if err := cl.ProduceSync(ctx, kgo.StringRecord(id)).FirstErr(); err != nil {
			t.Fatalf("produce in %s: %v", id, err)
		}
		if id != "tx-b" { // tx-b stays open
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("EndTransaction %s: %v", id, err)
			}
		}
	}
	cl := pinnedKgo(t, addr, kmsg.ListTransactions, 2)
	list := func(pattern *string, states ...string) *kmsg.ListTransactionsResponse {
		t.Helper()
		req := kmsg.NewPtrListTransactionsRequest()
		req.TransactionalIDPattern, req.StateFilters = pattern, states
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListTransactions: %v", err)
		}
		wantVersion(t, resp, 2)
		return resp
	}
	ids := func(resp *kmsg.ListTransactionsResponse) string {
		var out []string
		for _, s := range resp.TransactionStates {
			out = append(out, s.TransactionalID+":"+s.TransactionState)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	all := "other.tx:CompleteCommit tx-a:CompleteCommit tx-b:Ongoing"
	// A committed transaction is PrepareCommit until its markers are
	// written: wait for the last one to complete.
	for deadline := time.Now().Add(10 * time.Second); ids(list(nil)) != all; {
		if time.Now().After(deadline) {
			t.Fatalf("transactions %q, never %q", ids(list(nil)), all)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		pattern *string
		want    string
	}{
		{nil, all},
		{kmsg.StringPtr(""), all},
		{kmsg.StringPtr("tx-.*"), "tx-a:CompleteCommit tx-b:Ongoing"},
		{kmsg.StringPtr("tx"), ""}, // the whole id must match
		{kmsg.StringPtr(`tx-a|other\.tx`), "other.tx:CompleteCommit tx-a:CompleteCommit"},
		{kmsg.StringPtr("(?i)TX-A"), "tx-a:CompleteCommit"},
		{kmsg.StringPtr(`\Qtx-a\E`), "tx-a:CompleteCommit"},
		{kmsg.StringPtr(`(?P<p>tx)-[[:alpha:]]`), "tx-a:CompleteCommit tx-b:Ongoing"},
	} {
		resp := list(tc.pattern)
		if resp.ErrorCode != 0 || ids(resp) != tc.want {
			t.Errorf("pattern %v: error %d, ids %q; want %q", tc.pattern, resp.ErrorCode, ids(resp), tc.want)
		}
	}
	if resp := list(kmsg.StringPtr("tx-.*"), "Ongoing", "Bogus"); ids(resp) != "tx-b:Ongoing" || !slices.Equal(resp.UnknownStateFilters, []string{"Bogus"}) {
		t.Errorf("pattern with states: ids %q, unknown states %v; want tx-b, [Bogus]", ids(resp), resp.UnknownStateFilters)
	}
	// RE2 has no backreferences or possessive quantifiers (Java does).
	for _, bad := range []string{"(", "a)(b", `(a)\1`, "x*+"} {
		resp := list(kmsg.StringPtr(bad), "Bogus")
		wantCode(t, "ListTransactions pattern "+bad, resp.ErrorCode, kerr.InvalidRegularExpression)
		if len(resp.TransactionStates) != 0 || len(resp.UnknownStateFilters) != 0 {
			t.Errorf("pattern %q: %d ids and unknown states %v with the error, want neither", bad, len(resp.TransactionStates), resp.UnknownStateFilters)
		}
	}
}

// TestKafka44DescribeLogDirsV5: v5 adds IsCordoned per directory (KIP-1066);
// Samsa cordons none.
func TestKafka44DescribeLogDirsV5(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("franz", "describe-log-dirs-v5")
	franzCreate(t, ctx, newKadm(t, addr), topic, 2, nil)
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	// Straight to the broker: franz-go's merge of every broker's answer
	// keeps only the partitions of each directory.
	cl := pinnedKgo(t, addr, kmsg.DescribeLogDirs, 5)
	_, node := clusterAndNode(t, ctx, cl)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	wantVersion(t, resp, 5)
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("DescribeLogDirs v5: error %d, %d dirs; want the one log dir", resp.ErrorCode, len(resp.Dirs))
	}
	d := resp.Dirs[0]
	if d.ErrorCode != 0 || d.IsCordoned || d.TotalBytes <= 0 || len(d.Topics) != 1 || d.Topics[0].Topic != topic || len(d.Topics[0].Partitions) != 2 {
		t.Errorf("dir %s: error %d, cordoned %v, total bytes %d, topics %+v; want %s's 2 partitions in an uncordoned dir", d.Dir, d.ErrorCode, d.IsCordoned, d.TotalBytes, d.Topics, topic)
	}
}

// TestKafka44DeleteGroupsV3: v3 adds a per-group error message, which
// Kafka 4.4 leaves null for every error a classic or consumer group can
// get.
func TestKafka44DeleteGroupsV3(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("franz", "delete-groups-v3")
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)
	v9 := kversion.Stable()
	v9.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	commitStandalone(t, ctx, newKgo(t, addr, kgo.MaxVersions(v9)), "empty-group", topic)
	// A KIP-848 member keeps its group non-empty.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "busy-group", "member-0123456789abcdef", 30000
	hb.SubscribedTopicNames, hb.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hbCl := newKgo(t, addr)
	for {
		// The group's partition of __consumer_offsets may still be
		// loading (COORDINATOR_LOAD_IN_PROGRESS): a client retries that.
		r, err := hb.RequestWith(ctx, hbCl)
		if err == nil && r.ErrorCode != 0 && kerr.IsRetriable(kerr.ErrorForCode(r.ErrorCode)) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil || r.ErrorCode != 0 {
			t.Fatalf("ConsumerGroupHeartbeat: %v %+v", err, r)
		}
		break
	}

	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{"no-such-group", "empty-group", "busy-group"}
	resp, err := req.RequestWith(ctx, pinnedKgo(t, addr, kmsg.DeleteGroups, 3))
	if err != nil {
		t.Fatalf("DeleteGroups: %v", err)
	}
	wantVersion(t, resp, 3)
	want := map[string]*kerr.Error{"no-such-group": kerr.GroupIDNotFound, "empty-group": nil, "busy-group": kerr.NonEmptyGroup}
	if len(resp.Groups) != len(want) {
		t.Fatalf("DeleteGroups v3: %+v, want %d groups", resp.Groups, len(want))
	}
	for _, g := range resp.Groups {
		w, ok := want[g.Group]
		if !ok || g.ErrorCode != codeOf(w) || g.ErrorMessage != nil {
			t.Errorf("group %s: error %v, message %v; want %v and no message", g.Group, kerr.ErrorForCode(g.ErrorCode), g.ErrorMessage, w)
		}
	}
}

// TestKafka44ListOffsetsV11: v11 asks for timestamp -6, the earliest
// offset still to be uploaded to tiered storage (KIP-1023). Without
// tiered storage Kafka answers offset -1, timestamp -1, leader epoch -1.
// A special timestamp below the version that brought it, or an unknown
// negative one, is UNSUPPORTED_VERSION, before the partition is looked up.
func TestKafka44ListOffsetsV11(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("franz", "list-offsets-v11")
	franzCreate(t, ctx, newKadm(t, addr), topic, 1, nil)
	franzProduce(t, ctx, newKgo(t, addr), topic, genRecords(11, 3), true)
	list := func(v int16, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		cl := pinnedKgo(t, addr, kmsg.ListOffsets, v)
		_, node := clusterAndNode(t, ctx, cl)
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(node))) // unsharded: the unknown topic reaches the broker
		if err != nil {
			t.Fatalf("ListOffsets v%d %d: %v", v, ts, err)
		}
		wantVersion(t, resp, v)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ListOffsets v%d %d: %+v", v, ts, resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	p := list(11, topic, -6)
	if p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
		t.Errorf("ListOffsets v11 -6: error %d, offset %d, timestamp %d, epoch %d; want -1, -1, -1", p.ErrorCode, p.Offset, p.Timestamp, p.LeaderEpoch)
	}
	if p := list(11, topic, -1); p.ErrorCode != 0 || p.Offset != 3 {
		t.Errorf("ListOffsets v11 latest: error %d, offset %d; want 3", p.ErrorCode, p.Offset)
	}
	for _, tc := range []struct {
		v     int16
		topic string
		ts    int64
	}{{10, topic, -6}, {6, topic, -3}, {7, topic, -4}, {8, topic, -5}, {11, topic, -7}, {11, "no-such-topic", -7}} {
		p := list(tc.v, tc.topic, tc.ts)
		wantCode(t, fmt.Sprintf("ListOffsets v%d %s %d", tc.v, tc.topic, tc.ts), p.ErrorCode, kerr.UnsupportedVersion)
	}
	if p := list(9, topic, -5); p.ErrorCode != 0 || p.Offset != -1 {
		t.Errorf("ListOffsets v9 -5: error %d, offset %d; want -1", p.ErrorCode, p.Offset)
	}
}

// TestKafka44FetchV18: v18 adds the high watermark a fetching replica
// knows (KIP-1166), which only Kafka's KRaft quorum reads: a consumer's
// fetch at v18 reads records as before, whatever the field holds.
func TestKafka44FetchV18(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	topic := topicName("franz", "fetch-v18")
	adm := newKadm(t, addr)
	franzCreate(t, ctx, adm, topic, 1, nil)
	franzProduce(t, ctx, newKgo(t, addr), topic, genRecords(18, 5), true)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, details[topic].Err)
	}
	cl := pinnedKgo(t, addr, kmsg.Fetch, 18)
	for _, known := range []int64{-1, 0, 1 << 62} {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 100, 1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = details[topic].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.HighWatermark = 0, 1<<20, known
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		wantVersion(t, resp, 18)
		if len(resp.Topics) != 1 || resp.Topics[0].TopicID != details[topic].ID || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v18: %+v, want the topic by id", resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 5 || len(p.RecordBatches) == 0 {
			t.Errorf("Fetch v18 (replica's high watermark %d): error %d, high watermark %d, %d record bytes; want records up to 5", known, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
	}
}

// topicIDs are the ids of topics, from Metadata.
func topicIDs(t *testing.T, ctx context.Context, adm *kadm.Client, topics ...string) map[string][16]byte {
	t.Helper()
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	out := map[string][16]byte{}
	for _, name := range topics {
		d, ok := details[name]
		if !ok || d.Err != nil || d.ID == ([16]byte{}) {
			t.Fatalf("ListTopics %s: %+v", name, d)
		}
		out[name] = d.ID
	}
	return out
}

// TestKafka44OffsetCommitFetchV10: v10 of OffsetCommit and OffsetFetch
// name topics by id (KIP-848) and answer with ids. An unknown id answers
// UNKNOWN_TOPIC_ID, a partition the topic does not have
// UNKNOWN_TOPIC_OR_PARTITION on commit (offset -1 and no error on fetch),
// and fetching every committed partition leaves out a deleted topic.
func TestKafka44OffsetCommitFetchV10(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic, gone := topicName("franz", "offsets-v10"), topicName("franz", "offsets-v10-gone")
	franzCreate(t, ctx, adm, topic, 2, nil)
	franzCreate(t, ctx, adm, gone, 1, nil)
	ids := topicIDs(t, ctx, adm, topic, gone)
	unknown := [16]byte{1, 2, 3}
	const group = "offsets-v10"

	committer := pinnedKgo(t, addr, kmsg.OffsetCommit, 10)
	commit := func(id [16]byte, partitions ...int32) kmsg.OffsetCommitResponseTopic {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		for _, p := range partitions {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, int64(10+p), -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, committer)
		if err != nil {
			t.Fatalf("OffsetCommit: %v", err)
		}
		wantVersion(t, resp, 10)
		if len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != len(partitions) {
			t.Fatalf("OffsetCommit v10: %+v, want topic %x with %d partitions", resp.Topics, id, len(partitions))
		}
		return resp.Topics[0]
	}
	codes := func(rt kmsg.OffsetCommitResponseTopic) map[int32]int16 {
		out := map[int32]int16{}
		for _, p := range rt.Partitions {
			out[p.Partition] = p.ErrorCode
		}
		return out
	}
	if got, want := codes(commit(ids[topic], 0, 1, 9)), map[int32]int16{0: 0, 1: 0, 9: kerr.UnknownTopicOrPartition.Code}; !maps.Equal(got, want) {
		t.Errorf("commit by id: codes %v, want %v", got, want)
	}
	if got, want := codes(commit(unknown, 0, 1)), map[int32]int16{0: kerr.UnknownTopicID.Code, 1: kerr.UnknownTopicID.Code}; !maps.Equal(got, want) {
		t.Errorf("commit to an unknown id: codes %v, want %v", got, want)
	}
	commit(ids[gone], 0)

	fetcher := pinnedKgo(t, addr, kmsg.OffsetFetch, 10)
	fetch := func(topics []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.Topics = group, topics
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, fetcher)
		if err != nil {
			t.Fatalf("OffsetFetch: %v", err)
		}
		wantVersion(t, resp, 10)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("OffsetFetch v10: %+v", resp.Groups)
		}
		return resp.Groups[0].Topics
	}
	// id → partition → offset/error code.
	type answer struct {
		offset int64
		code   int16
	}
	answers := func(topics []kmsg.OffsetFetchResponseGroupTopic) map[[16]byte]map[int32]answer {
		out := map[[16]byte]map[int32]answer{}
		for _, rt := range topics {
			out[rt.TopicID] = map[int32]answer{}
			for _, p := range rt.Partitions {
				out[rt.TopicID][p.Partition] = answer{p.Offset, p.ErrorCode}
			}
		}
		return out
	}
	named := answers(fetch([]kmsg.OffsetFetchRequestGroupTopic{
		{TopicID: ids[topic], Partitions: []int32{0, 1, 9}},
		{TopicID: unknown, Partitions: []int32{0}},
	}))
	wantNamed := map[[16]byte]map[int32]answer{
		ids[topic]: {0: {10, 0}, 1: {11, 0}, 9: {-1, 0}},
		unknown:    {0: {-1, kerr.UnknownTopicID.Code}},
	}
	if !maps.EqualFunc(named, wantNamed, maps.Equal) {
		t.Errorf("fetch by id: %v, want %v", named, wantNamed)
	}
	if all, want := answers(fetch(nil)), map[[16]byte]map[int32]answer{ids[topic]: {0: {10, 0}, 1: {11, 0}}, ids[gone]: {0: {10, 0}}}; !maps.EqualFunc(all, want, maps.Equal) {
		t.Errorf("fetch all: %v, want %v", all, want)
	}
	if _, err := adm.DeleteTopics(ctx, gone); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	want := map[[16]byte]map[int32]answer{ids[topic]: {0: {10, 0}, 1: {11, 0}}}
	deadline := time.Now().Add(10 * time.Second)
	for all := answers(fetch(nil)); !maps.EqualFunc(all, want, maps.Equal); all = answers(fetch(nil)) {
		if time.Now().After(deadline) {
			t.Fatalf("fetch all after deleting %s: %v, want %v", gone, all, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKafka44ProduceV13: v13 names topics by id (KIP-516) and answers
// with ids. An id the cluster does not know, the zero id included, is
// UNKNOWN_TOPIC_ID; a partition the topic does not have
// UNKNOWN_TOPIC_OR_PARTITION. What was produced by id is consumed by name.
func TestKafka44ProduceV13(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	topic := topicName("franz", "produce-v13")
	franzCreate(t, ctx, adm, topic, 2, nil)
	id := topicIDs(t, ctx, adm, topic)[topic]
	cl := pinnedKgo(t, addr, kmsg.Produce, 13)
	_, node := clusterAndNode(t, ctx, cl)
	produced := genRecords(13, 2)
	produce := func(id [16]byte, partition int32, r rec) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = partition
		rp.Records = record.Build(record.BuildOptions{PartitionLeaderEpoch: -1},
			[]record.Record{{Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		if err != nil {
			t.Fatalf("Produce: %v", err)
		}
		wantVersion(t, resp, 13)
		if len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Produce v13: %+v, want topic %x", resp.Topics, id)
		}
		return resp.Topics[0].Partitions[0]
	}
	for i, r := range produced {
		if p := produce(id, 1, r); p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("produce %d by id: error %v, base offset %d; want %d", i, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, i)
		}
	}
	for _, tc := range []struct {
		what      string
		id        [16]byte
		partition int32
		want      *kerr.Error
	}{
		{"a partition the topic does not have", id, 7, kerr.UnknownTopicOrPartition},
		{"an unknown id", [16]byte{1, 2, 3}, 0, kerr.UnknownTopicID},
		{"the zero id", [16]byte{}, 0, kerr.UnknownTopicID},
	} {
		p := produce(tc.id, tc.partition, produced[0])
		wantCode(t, "produce to "+tc.what, p.ErrorCode, tc.want)
		if p.BaseOffset != -1 {
			t.Errorf("produce to %s: base offset %d, want -1", tc.what, p.BaseOffset)
		}
	}
	consumer := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {1: kgo.NewOffset().AtStart()}}))
	var consumed []rec
	for len(consumed) < len(produced) {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(consumed), len(produced), fs.Errors())
		}
		fs.EachRecord(func(kr *kgo.Record) { consumed = append(consumed, fromKgo(kr)) })
	}
	if len(consumed) != len(produced) {
		t.Fatalf("consumed %d records from partition 1, want %d", len(consumed), len(produced))
	}
	for i, c := range consumed {
		p := produced[i]
		if c.Partition != 1 || c.Offset != int64(i) || !bytes.Equal(c.Key, p.Key) || !bytes.Equal(c.Value, p.Value) || !c.Timestamp.Equal(p.Timestamp.Truncate(time.Millisecond)) {
			t.Errorf("consumed %v, want %v at p1@%d", c, p, i)
		}
	}
}
