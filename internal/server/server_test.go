package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
)

func testConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	cfg, warnings, err := config.Load("", []string{
		"log.dirs=" + dir,
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	return cfg
}

func quiet() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func start(t *testing.T, cfg *config.Config) *Server {
	t.Helper()
	s, err := Start(cfg, quiet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func produce(t *testing.T, cl *kgo.Client, topic string, n, from int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return recs
}

func consumeAll(t *testing.T, addr, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), want, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// TestRestartKeepsRecordsAndOffsets: records and topics survive a clean
// restart, and new records continue at the next offset.
func TestRestartKeepsRecordsAndOffsets(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	s := start(t, cfg)
	addr := s.Addr("PLAINTEXT")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, "events", 50, 0)
	cl.Close()
	clusterID := s.ClusterID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = start(t, testConfig(t, dir))
	defer s.Close()
	if s.ClusterID() != clusterID {
		t.Fatalf("cluster id changed across restart: %s → %s", clusterID, s.ClusterID())
	}
	addr = s.Addr("PLAINTEXT")
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, "events", 50, 50)
	got := consumeAll(t, addr, "events", 100)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Key) != fmt.Sprintf("k%d", i) || string(r.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d key %q value %q", i, r.Offset, r.Key, r.Value)
		}
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("events", 0); o.Offset != 100 {
		t.Fatalf("end offset %d, want 100", o.Offset)
	}
}

// TestBrokerConfigsAndAutoCreate: DescribeConfigs reports the broker's
// values with Kafka's sources, and auto-created topics take num.partitions.
func TestBrokerConfigsAndAutoCreate(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.Load("", []string{
		"log.dirs=" + dir,
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"num.partitions=4",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, cfg)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("1", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe broker 1: %v %v", err, rc.Err)
	}
	want := map[string]struct {
		value  string
		source string
	}{
		"num.partitions":    {"4", "STATIC_BROKER_CONFIG"},
		"log.segment.bytes": {"1073741824", "DEFAULT_CONFIG"},
		"message.max.bytes": {"1048588", "DEFAULT_CONFIG"},
	}
	found := 0
	for _, c := range rc.Configs {
		w, ok := want[c.Key]
		if !ok {
			continue
		}
		found++
		if c.MaybeValue() != w.value || c.Source.String() != w.source {
			t.Errorf("%s = %q (%s), want %q (%s)", c.Key, c.MaybeValue(), c.Source, w.value, w.source)
		}
	}
	if found != len(want) {
		t.Fatalf("found %d of %d broker configs", found, len(want))
	}
	if _, err := adm.DescribeBrokerConfigs(ctx, 7); err == nil {
		t.Error("describing broker 7 on node 1 succeeded, want an error")
	}

	// Producing to an unknown topic with auto-creation allowed creates it
	// with num.partitions.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(td["auto"].Partitions); n != 4 {
		t.Fatalf("auto-created topic has %d partitions, want 4", n)
	}
}

// TestGroupOffsetsSurviveRestart: offsets committed to a group are read
// back from __consumer_offsets after a restart.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s := start(t, testConfig(t, dir))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	for p := int32(0); p < 3; p++ {
		offsets.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(10 * (p + 1)), LeaderEpoch: -1, Metadata: fmt.Sprintf("m%d", p)})
	}
	resp, err := adm.CommitOffsets(ctx, "billing", offsets)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	cl.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = start(t, testConfig(t, dir))
	defer s.Close()
	cl, err = kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm = kadm.NewClient(cl)
	var fetched kadm.OffsetResponses
	for { // the coordinator loads its partition in the background
		fetched, err = adm.FetchOffsets(ctx, "billing")
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		o, ok := fetched.Lookup("orders", p)
		if !ok || o.Err != nil || o.At != int64(10*(p+1)) || o.Metadata != fmt.Sprintf("m%d", p) {
			t.Fatalf("partition %d after restart: %+v (found %v)", p, o, ok)
		}
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups["billing"]; !ok {
		t.Fatalf("group billing not listed after restart: %v", groups.Groups())
	}
}

// TestCompactedTopicRefusesKeylessRecords: like Kafka, a compacted topic
// answers INVALID_RECORD to records without a key and accepts keyed ones.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	s := start(t, testConfig(t, t.TempDir()))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	policy := "compact"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &policy}, "state"); err != nil {
		t.Fatal(err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "state", Value: []byte("v")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "state", Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("keyed record: %v", err)
	}
}

// TestCreateTopicsReturnsConfigs: from v5 the response lists every config of
// a created topic with its source, even when the request set none (the Java
// AdminClient reads it).
func TestCreateTopicsReturnsConfigs(t *testing.T) {
	s := start(t, testConfig(t, t.TempDir()))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, name := range []string{"plain", "tuned"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		if name == "tuned" {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		value  string
		source int8
	}{
		"plain": {"604800000", int8(kmsg.ConfigSourceDefaultConfig)},
		"tuned": {"1000", int8(kmsg.ConfigSourceDynamicTopicConfig)},
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("%s: error %d", rt.Topic, rt.ErrorCode)
		}
		if len(rt.Configs) < 20 {
			t.Fatalf("%s: %d configs, want every topic config", rt.Topic, len(rt.Configs))
		}
		found := false
		for _, c := range rt.Configs {
			if c.Name == "retention.ms" {
				found = true
				if w := want[rt.Topic]; c.Value == nil || *c.Value != w.value || c.Source != w.source {
					t.Fatalf("%s retention.ms = %v source %d, want %s source %d", rt.Topic, c.Value, c.Source, w.value, w.source)
				}
			}
		}
		if !found {
			t.Fatalf("%s: no retention.ms in the response", rt.Topic)
		}
	}
}
