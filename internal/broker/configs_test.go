package broker_test

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// End to end through kadm against a real server: dynamic topic and broker
// configs are described with their sources, take effect on the partitions
// at once, and survive a restart.

type cluster struct {
	cl  *kgo.Client
	adm *kadm.Client
}

func connect(t *testing.T, addr string) *cluster {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &cluster{cl: cl, adm: kadm.NewClient(cl)}
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// topicConfig returns a topic config's value and source.
func (c *cluster) topicConfig(t *testing.T, topic, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := c.adm.DescribeTopicConfigs(tctx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == key {
			return cfg.MaybeValue(), cfg.Source
		}
	}
	t.Fatalf("%s has no config %s", topic, key)
	return "", 0
}

// produceSize produces one record of n value bytes and returns its error.
func (c *cluster) produceSize(t *testing.T, topic string, n int) error {
	t.Helper()
	// Random bytes: the client compresses, and zeros would shrink below
	// any limit.
	v := make([]byte, n)
	rand.Read(v)
	// Keyed: some topics here are compacted, which refuses keyless records.
	r := &kgo.Record{Topic: topic, Key: []byte("k"), Value: v}
	return c.cl.ProduceSync(tctx(t), r).FirstErr()
}

func alterErr(t *testing.T, resps kadm.AlterConfigsResponses, err error) (error, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 1 {
		t.Fatalf("%d responses", len(resps))
	}
	return resps[0].Err, resps[0].ErrMessage
}

// dynamicKeys are the keys of configs set dynamically on the broker.
func dynamicKeys(cs []kadm.Config) []string {
	var keys []string
	for _, c := range cs {
		if c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

func set(k, v string) kadm.AlterConfig {
	return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
}

func TestDynamicTopicConfigs(t *testing.T) {
	dir := t.TempDir()
	s := servertest.StartIn(t, dir)
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := c.produceSize(t, "t", 4000); err != nil {
		t.Fatalf("produce before limit: %v", err)
	}

	// validate_only changes nothing.
	resps, err := c.adm.ValidateAlterTopicConfigs(tctx(t), []kadm.AlterConfig{set("max.message.bytes", "1000")}, "t")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatal(e)
	}
	if v, src := c.topicConfig(t, "t", "max.message.bytes"); v != "1048588" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after validate_only: %s %v", v, src)
	}

	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{set("retention.ms", "60000"), set("max.message.bytes", "1000")}, "t")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatal(e)
	}
	if v, src := c.topicConfig(t, "t", "retention.ms"); v != "60000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms = %s %v", v, src)
	}
	// The partition enforces the new limit at once.
	if err := c.produceSize(t, "t", 4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce over max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
	}

	// APPEND and SUBTRACT on a LIST key.
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "t")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatal(e)
	}
	if v, src := c.topicConfig(t, "t", "cleanup.policy"); v != "delete,compact" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("after append: %s %v", v, src)
	}
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")}}, "t")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatal(e)
	}
	if v, _ := c.topicConfig(t, "t", "cleanup.policy"); v != "compact" {
		t.Fatalf("after subtract: %s", v)
	}
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "t")
	if e, msg := alterErr(t, resps, err); !errors.Is(e, kerr.InvalidConfig) || !strings.Contains(msg, "retention.ms") {
		t.Fatalf("append to a long: %v %q", e, msg)
	}

	// Unknown keys and bad values are INVALID_CONFIG naming the key.
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{set("retention.msec", "1")}, "t")
	if e, msg := alterErr(t, resps, err); !errors.Is(e, kerr.InvalidConfig) || !strings.Contains(msg, "retention.msec") {
		t.Fatalf("unknown key: %v %q", e, msg)
	}
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{set("segment.bytes", "12")}, "t")
	if e, msg := alterErr(t, resps, err); !errors.Is(e, kerr.InvalidConfig) || !strings.Contains(msg, "segment.bytes") {
		t.Fatalf("bad value: %v %q", e, msg)
	}
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{set("retention.ms", "1")}, "nope")
	if e, _ := alterErr(t, resps, err); !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing topic: %v", e)
	}

	// Changes survive a restart, and the partition still enforces them.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = servertest.StartIn(t, dir)
	c = connect(t, servertest.Addr(s))
	if v, src := c.topicConfig(t, "t", "retention.ms"); v != "60000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after restart = %s %v", v, src)
	}
	if err := c.produceSize(t, "t", 4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce after restart: %v, want MESSAGE_TOO_LARGE", err)
	}

	// DELETE goes back to the default.
	resps, err = c.adm.AlterTopicConfigs(tctx(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}, {Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, "t")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatal(e)
	}
	if v, src := c.topicConfig(t, "t", "retention.ms"); v != "604800000" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("retention.ms after delete = %s %v", v, src)
	}
	if err := c.produceSize(t, "t", 4000); err != nil {
		t.Fatalf("produce after delete: %v", err)
	}
}

func TestDynamicBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	s := servertest.StartIn(t, dir)
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.adm.CreateTopic(tctx(t), 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("5000")}, "own"); err != nil {
		t.Fatal(err)
	}

	// The cluster default reaches topics without an override, and only them.
	resps, err := c.adm.AlterBrokerConfigs(tctx(t), []kadm.AlterConfig{set("log.retention.ms", "3600000"), set("message.max.bytes", "2000")})
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatal(e, msg)
	}
	if v, src := c.topicConfig(t, "plain", "retention.ms"); v != "3600000" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("plain retention.ms = %s %v", v, src)
	}
	if v, src := c.topicConfig(t, "own", "retention.ms"); v != "5000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("own retention.ms = %s %v", v, src)
	}
	if err := c.produceSize(t, "plain", 4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce over cluster message.max.bytes: %v", err)
	}

	// The per-broker value wins over the cluster default.
	resps, err = c.adm.AlterBrokerConfigs(tctx(t), []kadm.AlterConfig{set("message.max.bytes", "10000")}, 1)
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatal(e, msg)
	}
	rcs, err := c.adm.DescribeBrokerConfigs(tctx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, cfg := range rcs[0].Configs {
		if cfg.Key != "message.max.bytes" {
			continue
		}
		found = true
		if cfg.MaybeValue() != "10000" || cfg.Source != kmsg.ConfigSourceDynamicBrokerConfig ||
			len(cfg.Synonyms) < 3 || cfg.Synonyms[1].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || *cfg.Synonyms[1].Value != "2000" {
			t.Fatalf("message.max.bytes %s %v %+v", cfg.MaybeValue(), cfg.Source, cfg.Synonyms)
		}
	}
	if !found {
		t.Fatal("message.max.bytes not described")
	}
	if err := c.produceSize(t, "plain", 4000); err != nil {
		t.Fatalf("produce under per-broker limit: %v", err)
	}

	// The cluster-default resource lists only what is set there.
	rcs, err = c.adm.DescribeBrokerConfigs(tctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := rcs[0].Configs; len(got) != 2 || got[0].Key != "log.retention.ms" || got[1].Key != "message.max.bytes" || got[1].MaybeValue() != "2000" {
		t.Fatalf("cluster defaults %+v", got)
	}

	// Read-only keys and per-broker keys at cluster level are refused
	// with Kafka's INVALID_REQUEST, and so are the listener keys that a
	// broker binds and registers at start-up only (Kafka refuses to
	// alter a KRaft broker's advertised listeners).
	resps, err = c.adm.AlterBrokerConfigs(tctx(t), []kadm.AlterConfig{set("num.partitions", "3")}, 1)
	if e, msg := alterErr(t, resps, err); !errors.Is(e, kerr.InvalidRequest) || msg != "Cannot update these configs dynamically: [num.partitions]" {
		t.Fatalf("read-only key: %v %q", e, msg)
	}
	for _, kv := range [][2]string{
		{"listeners", "PLAINTEXT://127.0.0.1:1234"},
		{"advertised.listeners", "PLAINTEXT://example.com:9092"},
		{"listener.security.protocol.map", "PLAINTEXT:SSL"},
	} {
		resps, err = c.adm.AlterBrokerConfigs(tctx(t), []kadm.AlterConfig{set(kv[0], kv[1])}, 1)
		if e, msg := alterErr(t, resps, err); !errors.Is(e, kerr.InvalidRequest) || !strings.HasPrefix(msg, "Cannot update these configs dynamically: ["+kv[0]+"]") {
			t.Fatalf("%s: %v %q", kv[0], e, msg)
		}
	}
	if rcs, err := c.adm.DescribeBrokerConfigs(tctx(t), 1); err != nil {
		t.Fatal(err)
	} else if got := dynamicKeys(rcs[0].Configs); slices.Contains(got, "listeners") || slices.Contains(got, "num.partitions") {
		t.Fatalf("a refused key was stored: dynamic configs %v", got)
	}

	// Survives a restart.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = servertest.StartIn(t, dir)
	c = connect(t, servertest.Addr(s))
	if v, src := c.topicConfig(t, "plain", "retention.ms"); v != "3600000" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("after restart: %s %v", v, src)
	}

	// Deleting the per-broker value falls back to the cluster default.
	resps, err = c.adm.AlterBrokerConfigs(tctx(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}}, 1)
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatal(e, msg)
	}
	if err := c.produceSize(t, "plain", 4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce after per-broker delete: %v", err)
	}
}

func TestBrokerLogger(t *testing.T) {
	s := servertest.Start(t)
	c := connect(t, servertest.Addr(s))
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.Resources[0]
	if rr.ErrorCode != 0 || len(rr.Configs) != 1 || rr.Configs[0].Name != "root" || rr.Configs[0].Value == nil ||
		rr.Configs[0].Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Fatalf("describe loggers: %+v", rr)
	}
	// An unknown logger is INVALID_CONFIG whatever the wiring.
	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ic.Name, ic.Value = "kafka.server", kmsg.StringPtr("DEBUG")
	ir.Configs = append(ir.Configs, ic)
	ireq.Resources = append(ireq.Resources, ir)
	iresp, err := ireq.RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := iresp.Resources[0]; got.ErrorCode != kerr.InvalidConfig.Code || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, "kafka.server") {
		t.Fatalf("unknown logger: %+v", got)
	}
}

func TestDeleteRecordsErrors(t *testing.T) {
	s := servertest.Start(t)
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 1, 1, nil, "d"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.produceSize(t, "d", 10); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	for _, tp := range []struct {
		topic  string
		part   int32
		offset int64
	}{{"d", 0, 9}, {"d", 0, -2}, {"d", 5, 1}, {"nope", 0, 1}} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = tp.part, tp.offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	// Straight to the broker: the client would refuse unknown partitions.
	kresp, err := c.cl.Broker(1).Request(tctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DeleteRecordsResponse)
	want := []*kerr.Error{kerr.OffsetOutOfRange, kerr.OffsetOutOfRange, kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition}
	for i, rt := range resp.Topics {
		if p := rt.Partitions[0]; p.ErrorCode != want[i].Code || p.LowWatermark != -1 {
			t.Errorf("%s-%d: code %d low %d, want %s", rt.Topic, p.Partition, p.ErrorCode, p.LowWatermark, want[i].Message)
		}
	}

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "d", Partition: 0, At: 2})
	resps, err := c.adm.DeleteRecords(tctx(t), os)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := resps.Lookup("d", 0)
	if r.Err != nil || r.LowWatermark != 2 {
		t.Fatalf("delete to 2: %+v", r)
	}
	starts, err := c.adm.ListStartOffsets(tctx(t), "d")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("d", 0); o.Offset != 2 {
		t.Fatalf("log start offset %d, want 2", o.Offset)
	}
}
