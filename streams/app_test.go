package streams_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
	"github.com/samsa-io/samsa/streams"
)

// wordCount is the classic topology; seen counts the lines this instance
// read and the counts it updated.
func wordCount(t testing.TB, in, out string, seen *atomic.Int64) *streams.Topology {
	b := streams.NewBuilder()
	lines := streams.From(b, streams.String(), streams.String(), in).Peek(func(string, string) { seen.Add(1) })
	words := streams.FlatMapValues(lines, func(_, line string) []string { return strings.Fields(strings.ToLower(line)) })
	grouped := streams.GroupBy(words, func(_, w string) string { return w }, streams.String(), streams.String())
	counts := streams.Count(grouped, "counts-store").ToStream().Peek(func(string, int64) { seen.Add(1) })
	streams.MapValues(counts, func(_ string, n int64) string { return strconv.FormatInt(n, 10) }).
		To(out, streams.String(), streams.String())
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return top
}

type cluster struct {
	t     *testing.T
	addr  string
	cl    *kgo.Client
	adm   *kadm.Client
	words []string
}

func newCluster(t *testing.T, topics ...string) *cluster {
	s := servertest.Start(t)
	c := &cluster{t: t, addr: servertest.Addr(s), words: strings.Fields("apple banana cherry date elder fig grape")}
	var err error
	c.cl, err = kgo.NewClient(kgo.SeedBrokers(c.addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.cl.Close)
	c.adm = kadm.NewClient(c.cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tp := range topics {
		if _, err := c.adm.CreateTopic(ctx, 4, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// produceLines writes n lines of words (line i has words i%7 .. i%7+i%4)
// and adds their counts to want.
func (c *cluster) produceLines(topic string, from, n int, want map[string]int64) {
	c.t.Helper()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		var ws []string
		for j := 0; j <= i%4; j++ {
			w := c.words[(i+j)%len(c.words)]
			if j%2 == 1 {
				w = strings.ToUpper(w) // the topology lower-cases
			}
			ws = append(ws, w)
			want[strings.ToLower(w)]++
		}
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(strings.Join(ws, " "))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		c.t.Fatal(err)
	}
}

// waitCounts reads the output topic from the start until the latest count of
// every word equals want, and fails if a count ever passes its final value.
func (c *cluster) waitCounts(topic string, want map[string]int64) {
	c.t.Helper()
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]int64{}
	deadline := time.Now().Add(60 * time.Second)
	for !maps.Equal(got, want) {
		if time.Now().After(deadline) {
			c.t.Fatalf("counts in %s:\n got %v\nwant %v", topic, got, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := rd.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				c.t.Fatalf("output %q=%q: not a decimal count", r.Key, r.Value)
			}
			if n > want[string(r.Key)] {
				c.t.Fatalf("count %s=%d passes the true count %d", r.Key, n, want[string(r.Key)])
			}
			got[string(r.Key)] = n
		})
	}
}

func startApp(t *testing.T, top *streams.Topology, addr, appID string) *streams.App {
	t.Helper()
	app, err := streams.New(top, streams.Config{ApplicationID: appID, Bootstrap: []string{addr},
		CommitInterval: 200 * time.Millisecond, Logger: servertest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- app.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := app.Close(); err != nil {
			t.Errorf("app %s: %v", appID, err)
		}
	})
	return app
}

func TestWordCountOverBroker(t *testing.T) {
	c := newCluster(t, "lines", "counts")
	want := map[string]int64{}
	c.produceLines("lines", 0, 200, want)
	var seen atomic.Int64
	startApp(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc")
	c.waitCounts("counts", want)

	// The internal topics carry Kafka Streams' names; the changelog is compacted.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfgs, err := c.adm.DescribeTopicConfigs(ctx, "wc-counts-store-changelog", "wc-counts-store-repartition")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range cfgs {
		if rc.Err != nil {
			t.Fatalf("%s: %v", rc.Name, rc.Err)
		}
		policy := ""
		for _, kv := range rc.Configs {
			if kv.Key == "cleanup.policy" && kv.Value != nil {
				policy = *kv.Value
			}
		}
		if wantPolicy := map[bool]string{true: "compact", false: "delete"}[strings.HasSuffix(rc.Name, "-changelog")]; policy != wantPolicy {
			t.Errorf("%s: cleanup.policy=%q, want %q", rc.Name, policy, wantPolicy)
		}
	}
}

func TestWordCountRestoresFromChangelog(t *testing.T) {
	c := newCluster(t, "lines", "counts")
	want := map[string]int64{}
	c.produceLines("lines", 0, 100, want)
	var seen atomic.Int64
	first, err := streams.New(wordCount(t, "lines", "counts", &seen), streams.Config{ApplicationID: "wc",
		Bootstrap: []string{c.addr}, CommitInterval: 200 * time.Millisecond, Logger: servertest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- first.Run(context.Background()) }()
	c.waitCounts("counts", want)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	// A new instance starts with empty stores: counts continue from the
	// first run's only if it restored them from the changelog.
	c.produceLines("lines", 100, 100, want)
	startApp(t, wordCount(t, "lines", "counts", &seen), c.addr, "wc")
	c.waitCounts("counts", want)
}

func TestTwoInstancesSplitPartitions(t *testing.T) {
	c := newCluster(t, "lines", "counts")
	var seenA, seenB atomic.Int64
	a := startApp(t, wordCount(t, "lines", "counts", &seenA), c.addr, "wc2")
	b := startApp(t, wordCount(t, "lines", "counts", &seenB), c.addr, "wc2")
	deadline := time.Now().Add(60 * time.Second)
	for {
		ta, tb := a.Assignment(), b.Assignment()
		if n := owned(ta) + owned(tb); n == 8 && owned(ta) > 0 && owned(tb) > 0 {
			break // 4 input + 4 repartition partitions, split
		}
		if time.Now().After(deadline) {
			t.Fatalf("assignments never split: %v / %v", ta, tb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := map[string]int64{}
	c.produceLines("lines", 0, 300, want)
	c.waitCounts("counts", want)
	if seenA.Load() == 0 || seenB.Load() == 0 {
		t.Fatalf("records processed: %d and %d, want both > 0", seenA.Load(), seenB.Load())
	}
}

func owned(a map[string][]int32) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func TestMissingSourceTopicFailsFast(t *testing.T) {
	c := newCluster(t)
	var seen atomic.Int64
	app, err := streams.New(wordCount(t, "nope", "out", &seen), streams.Config{ApplicationID: "x", Bootstrap: []string{c.addr}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Run(ctx); err == nil || !strings.Contains(err.Error(), `source topic "nope" does not exist`) {
		t.Fatalf("Run: %v", err)
	}
	if _, err := c.adm.CreateTopic(ctx, 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	app, err = streams.New(wordCount(t, "in", "missing-out", &seen), streams.Config{ApplicationID: "x", Bootstrap: []string{c.addr}})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Run(ctx); err == nil || !strings.Contains(err.Error(), `sink topic "missing-out" does not exist`) {
		t.Fatalf("Run: %v", err)
	}
	if _, err := streams.New(wordCount(t, "a", "b", &seen), streams.Config{ApplicationID: "x", Bootstrap: []string{c.addr},
		ProcessingGuarantee: "exactly_once"}); err == nil || !strings.Contains(err.Error(), "processing.guarantee") {
		t.Fatalf("processing.guarantee=exactly_once (removed in Kafka 4): %v", err)
	}
}

// A value that does not deserialize stops the app (LogAndFail) without
// committing past it; with SkipBadRecords (LogAndContinue) the next run
// skips it and goes on.
func TestBadRecordFailsThenSkips(t *testing.T) {
	c := newCluster(t, "nums", "out")
	i32 := func(v int32) []byte { b, _ := streams.Int32().Serialize("", v); return b }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// One partition's worth of order: all three with the same key.
	for _, v := range [][]byte{i32(1), {0xff}, i32(3)} {
		if err := c.cl.ProduceSync(ctx, &kgo.Record{Topic: "nums", Key: []byte("k"), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	build := func() *streams.Topology {
		b := streams.NewBuilder()
		streams.MapValues(streams.From(b, streams.String(), streams.Int32(), "nums"),
			func(_ string, v int32) string { return strconv.Itoa(int(v)) }).To("out", streams.String(), streams.String())
		top, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return top
	}
	cfg := streams.Config{ApplicationID: "bad", Bootstrap: []string{c.addr}, CommitInterval: 50 * time.Millisecond, Logger: servertest.Logger()}
	app, err := streams.New(build(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Run(ctx); err == nil || !strings.Contains(err.Error(), "deserialize") {
		t.Fatalf("Run with a bad record: %v, want a deserialization error", err)
	}
	committed := func() int64 {
		offs, err := c.adm.FetchOffsets(ctx, "bad")
		if err != nil {
			t.Fatal(err)
		}
		var max int64 = -1
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == "nums" && o.At > max {
				max = o.At
			}
		})
		return max
	}
	if at := committed(); at > 1 {
		t.Fatalf("committed offset %d after failing on offset 1", at)
	}

	cfg.SkipBadRecords = true
	startApp2 := func() {
		app, err := streams.New(build(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		go app.Run(context.Background())
		t.Cleanup(func() { app.Close() })
	}
	startApp2()
	deadline := time.Now().Add(60 * time.Second)
	for committed() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want 3 (all three records, the bad one skipped)", committed())
		}
		time.Sleep(50 * time.Millisecond)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) == 0 || got[len(got)-1] != "3" {
		if ctx.Err() != nil {
			t.Fatalf("output %v, want it to end with 3", got)
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
	}
	// At least once: 1 may appear twice if the failed run produced it, but
	// only 1 and 3 ever appear.
	for _, v := range got {
		if v != "1" && v != "3" {
			t.Fatalf("output %v", got)
		}
	}
}

type ticker struct{}

func (ticker) Init(ctx streams.ProcessorContext[string, string]) error {
	ctx.Schedule(20*time.Millisecond, streams.WallClockTime, func(now time.Time) {
		ctx.Forward(streams.Record[string, string]{Key: "tick", Value: strconv.Itoa(int(ctx.TaskID().Partition)), Timestamp: now})
	})
	return nil
}
func (ticker) Process(streams.Record[string, string]) error { return nil }
func (ticker) Close() error                                 { return nil }

// A wall-clock punctuator runs although no record ever arrives: tasks
// start with the assignment.
func TestWallClockPunctuatorOnIdleInput(t *testing.T) {
	c := newCluster(t, "idle", "ticks")
	b := streams.NewBuilder()
	in := streams.From(b, streams.String(), streams.String(), "idle")
	streams.Process(in, func() streams.Processor[string, string, string, string] { return ticker{} }).
		To("ticks", streams.String(), streams.String())
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	startApp(t, top, c.addr, "ticker")
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics("ticks"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tasks := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(tasks) < 4 { // the input has 4 partitions, so 4 tasks tick
		if time.Now().After(deadline) {
			t.Fatalf("ticks from tasks %v, want all 4", tasks)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { tasks[string(r.Value)] = true })
		cancel()
	}
}
