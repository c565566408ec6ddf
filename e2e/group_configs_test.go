package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// alterGroupConfigs sets (value non-empty) or deletes (value "~") a
// group's configs with IncrementalAlterConfigs and returns the resource's
// error code and message.
func alterGroupConfigs(ctx context.Context, t *testing.T, cl *kgo.Client, validateOnly bool, group string, kv ...string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = kv[i]
		if kv[i+1] == "~" {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		} else {
			c.Value = kmsg.StringPtr(kv[i+1])
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// describeGroupConfigs returns a group's configs by name, with synonyms.
func describeGroupConfigs(ctx context.Context, t *testing.T, cl *kgo.Client, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs of group %s: %v %+v", group, err, resp)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

// describedConfig renders value/source and the synonyms of one config.
func describedConfig(c kmsg.DescribeConfigsResponseResourceConfig) string {
	s := fmt.Sprintf("%s/%s", *c.Value, c.Source)
	for _, sy := range c.ConfigSynonyms {
		s += fmt.Sprintf(" [%s=%s %s]", sy.Name, *sy.Value, sy.Source)
	}
	return s
}

// TestGroupConfigsAsKafka: a GROUP config resource takes Kafka 4.4's keys,
// refuses bad values with Kafka's INVALID_CONFIG messages (checked against
// a Kafka 4.4 broker; docs/compatibility.md) and describes every
// non-internal key with its source and broker synonym.
func TestGroupConfigsAsKafka(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	d := describeGroupConfigs(ctx, t, cl, "g-fresh")
	if len(d) != 21 {
		t.Errorf("a group describes %d configs, want Kafka's 21", len(d))
	}
	for name, want := range map[string]string{
		"consumer.session.timeout.ms":        "45000/DEFAULT_CONFIG [group.consumer.session.timeout.ms=45000 DEFAULT_CONFIG]",
		"streams.assignor.name":              "sticky/DEFAULT_CONFIG [group.streams.assignors=sticky DEFAULT_CONFIG]",
		"share.auto.offset.reset":            "latest/DEFAULT_CONFIG [share.auto.offset.reset=latest DEFAULT_CONFIG]",
		"streams.rack.aware.assignment.tags": "/DEFAULT_CONFIG [group.streams.rack.aware.assignment.tags= DEFAULT_CONFIG]",
		"share.renew.acknowledge.enable":     "true/DEFAULT_CONFIG [share.renew.acknowledge.enable=true DEFAULT_CONFIG]",
	} {
		c, ok := d[name]
		if !ok {
			t.Errorf("%s not described", name)
			continue
		}
		if got := describedConfig(c); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if _, ok := d["streams.num.warmup.replicas"]; ok {
		t.Errorf("internal streams.num.warmup.replicas described")
	}

	for _, c := range []struct{ key, value, msg string }{
		{"foo.bar", "1", "Unknown group config name: foo.bar"},
		{"consumer.session.timeout.ms", "abc", "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"consumer.session.timeout.ms", "0", "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{"consumer.session.timeout.ms", "1000", "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"consumer.heartbeat.interval.ms", "50000", "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"consumer.assignor.offload.enable", "yes", "Invalid value yes for configuration consumer.assignor.offload.enable: Expected value to be either true or false"},
		{"share.record.lock.duration.ms", "999", "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"share.record.lock.duration.ms", "4000000", "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"share.partition.max.record.locks", "99999", "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"share.auto.offset.reset", "by_duration:-PT1H", "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"share.isolation.level", "READ_COMMITTED", "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"streams.num.standby.replicas", "3", "streams.num.standby.replicas must be less than or equal to 2"},
		{"streams.task.offset.interval.ms", "1", "streams.task.offset.interval.ms must be greater than or equal to 15000"},
		{"streams.num.warmup.replicas", "100", "streams.num.warmup.replicas must be less than or equal to 20"},
		{"streams.acceptable.recovery.lag", "-1", "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0"},
		{"streams.rack.aware.assignment.tags", "a,a", "streams.rack.aware.assignment.tags must not contain duplicate tag keys."},
		{"streams.assignor.name", "foo", "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky]."},
		{"errors.deadletterqueue.topic.name", "__dlq", "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
	} {
		for _, validateOnly := range []bool{false, true} {
			code, msg := alterGroupConfigs(ctx, t, cl, validateOnly, "g1", c.key, c.value)
			if code != 40 || msg != c.msg {
				t.Errorf("%s=%s (validate_only %v): error %d %q, want 40 (INVALID_CONFIG) %q", c.key, c.value, validateOnly, code, msg, c.msg)
			}
		}
	}
	if code, msg := alterGroupConfigs(ctx, t, cl, false, "", "share.delivery.count.limit", "3"); code != 42 || msg != "Default group resources are not allowed." {
		t.Errorf("the default group resource: error %d %q, want 42 (INVALID_REQUEST)", code, msg)
	}
	// validate_only stores nothing.
	if code, msg := alterGroupConfigs(ctx, t, cl, true, "g1", "share.delivery.count.limit", "3"); code != 0 {
		t.Fatalf("validate_only: %d %s", code, msg)
	}
	if got := describedConfig(describeGroupConfigs(ctx, t, cl, "g1")["share.delivery.count.limit"]); got != "5/DEFAULT_CONFIG [group.share.delivery.count.limit=5 DEFAULT_CONFIG]" {
		t.Errorf("after validate_only: %s", got)
	}

	if code, msg := alterGroupConfigs(ctx, t, cl, false, "g1",
		"share.delivery.count.limit", "3", "consumer.session.timeout.ms", "50000",
		"streams.rack.aware.assignment.tags", "x,y", "share.auto.offset.reset", "by_duration:P1D",
		"errors.deadletterqueue.topic.name", "dlq", "streams.num.warmup.replicas", "4"); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	d = describeGroupConfigs(ctx, t, cl, "g1")
	for name, want := range map[string]string{
		"share.delivery.count.limit":         "3/GROUP_CONFIG [share.delivery.count.limit=3 GROUP_CONFIG] [group.share.delivery.count.limit=5 DEFAULT_CONFIG]",
		"consumer.session.timeout.ms":        "50000/GROUP_CONFIG [consumer.session.timeout.ms=50000 GROUP_CONFIG] [group.consumer.session.timeout.ms=45000 DEFAULT_CONFIG]",
		"streams.rack.aware.assignment.tags": "x,y/GROUP_CONFIG [streams.rack.aware.assignment.tags=x,y GROUP_CONFIG] [group.streams.rack.aware.assignment.tags= DEFAULT_CONFIG]",
		"share.auto.offset.reset":            "by_duration:P1D/GROUP_CONFIG [share.auto.offset.reset=by_duration:P1D GROUP_CONFIG] [share.auto.offset.reset=latest DEFAULT_CONFIG]",
		"errors.deadletterqueue.topic.name":  "dlq/GROUP_CONFIG [errors.deadletterqueue.topic.name=dlq GROUP_CONFIG] [errors.deadletterqueue.topic.name= DEFAULT_CONFIG]",
		"share.isolation.level":              "read_uncommitted/DEFAULT_CONFIG [share.isolation.level=read_uncommitted DEFAULT_CONFIG]",
	} {
		if got := describedConfig(d[name]); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	// Deleting an override returns the key to the broker default.
	if code, msg := alterGroupConfigs(ctx, t, cl, false, "g1", "share.delivery.count.limit", "~"); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	if got := *describeGroupConfigs(ctx, t, cl, "g1")["share.delivery.count.limit"].Value; got != "5" {
		t.Errorf("share.delivery.count.limit after delete: %s, want 5", got)
	}
}

// TestConsumerGroupSessionTimeoutOverride: a KIP-848 group's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms GROUP
// configs, not the broker's 45 s default, govern its members: the
// heartbeat interval handed out is the group's, and a member that stops
// heartbeating is removed after the group's 2 s session timeout.
func TestConsumerGroupSessionTimeoutOverride(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t, "group.consumer.min.session.timeout.ms=1000", "group.consumer.min.heartbeat.interval.ms=100")
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, group = "session-override", "g-session"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if code, msg := alterGroupConfigs(ctx, t, cl, false, group,
		"consumer.session.timeout.ms", "2000", "consumer.heartbeat.interval.ms", "500"); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = group, "silent-member-0000000001", 0, 5000
	hb.SubscribedTopicNames, hb.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctx, cl)
	for err == nil && coordinatorBusy(resp.ErrorCode) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond) // the new __consumer_offsets partition is loading
		resp, err = hb.RequestWith(ctx, cl)
	}
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, resp)
	}
	if resp.HeartbeatIntervalMillis != 500 {
		t.Errorf("heartbeat interval %d ms, want the group's 500", resp.HeartbeatIntervalMillis)
	}

	// The member never heartbeats again. Well before the broker default
	// (45 s) would remove it, the group's 2 s session timeout must.
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		dresp, err := req.RequestWith(ctx, cl)
		if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].ErrorCode != 0 {
			t.Fatalf("describe: %v %+v", err, dresp)
		}
		if len(dresp.Groups[0].Members) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the silent member is still in the group after 30 s; the group's consumer.session.timeout.ms is 2 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestShareAutoOffsetResetByDuration: share.auto.offset.reset
// by_duration:PT1H starts a new share partition at the first record no
// older than an hour, so a record stamped two hours ago is skipped.
func TestShareAutoOffsetResetByDuration(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, group = "share-by-duration", "sg-by-duration"
	shareTopic(ctx, t, kadm.NewClient(cl), topic, 1)
	if code, msg := alterGroupConfigs(ctx, t, cl, false, group, "share.auto.offset.reset", "by_duration:PT1H"); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	now := time.Now()
	for _, r := range []*kgo.Record{
		{Topic: topic, Value: []byte("old"), Timestamp: now.Add(-2 * time.Hour)},
		{Topic: topic, Value: []byte("new1"), Timestamp: now},
		{Topic: topic, Value: []byte("new2"), Timestamp: now},
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sc := shareClient(t, srv, group, topic)
	defer sc.Close()
	var got []string
	for len(got) < 2 {
		fs := pollShort(ctx, sc)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	fs := pollShort(ctx, sc)
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if strings.Join(got, ",") != "new1,new2" {
		t.Fatalf("by_duration:PT1H consumed %v, want [new1 new2]", got)
	}
}

// TestShareGroupHeartbeatIntervalOverride: a share group's
// share.heartbeat.interval.ms GROUP config is the interval its members
// are given, not the broker's 5 s.
func TestShareGroupHeartbeatIntervalOverride(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t, "group.share.min.heartbeat.interval.ms=100")
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, group = "share-hb-override", "sg-hb-override"
	shareTopic(ctx, t, kadm.NewClient(cl), topic, 1)
	if code, msg := alterGroupConfigs(ctx, t, cl, false, group, "share.heartbeat.interval.ms", "700"); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, "share-member-000000000001", 0, []string{topic}
	resp, err := hb.RequestWith(ctx, cl)
	for err == nil && coordinatorBusy(resp.ErrorCode) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		resp, err = hb.RequestWith(ctx, cl)
	}
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, resp)
	}
	if resp.HeartbeatIntervalMillis != 700 {
		t.Errorf("heartbeat interval %d ms, want the group's 700", resp.HeartbeatIntervalMillis)
	}
}

// coordinatorBusy reports the retriable answers of a group coordinator
// that is still being found or loading its partition: a client retries
// them, and so does a test that sends its own requests.
func coordinatorBusy(code int16) bool {
	return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code || code == kerr.NotCoordinator.Code
}
