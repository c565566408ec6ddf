package streams

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// driver runs a topology in memory with one partition per topic, like Kafka
// Streams' TopologyTestDriver: records a sink writes to a topic the topology
// reads go back in; others are collected per topic.
type driver struct {
	t       *testing.T
	tasks   map[string]*task // by source topic
	pending []sent
	out     map[string][]sent
	offsets map[string]int64
}

type sent struct {
	topic      string
	partition  int32
	key, value []byte
	ts         int64
}

func (d *driver) send(topic string, partition int32, key, value []byte, ts int64, _ []Header) {
	d.pending = append(d.pending, sent{topic, partition, key, value, ts})
}

func newDriver(t *testing.T, b *Builder) *driver {
	t.Helper()
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, tasks: map[string]*task{}, out: map[string][]sent{}, offsets: map[string]int64{}}
	for _, s := range top.subs {
		tk := newTask(top, s, 0, "app", d)
		if err := tk.init(); err != nil {
			t.Fatal(err)
		}
		for topic := range tk.sources {
			d.tasks[topic] = tk
		}
	}
	return d
}

func (d *driver) pipe(topic string, key, value []byte, ts int64) {
	d.t.Helper()
	d.pending = append(d.pending, sent{topic: topic, key: key, value: value, ts: ts})
	for len(d.pending) > 0 {
		r := d.pending[0]
		d.pending = d.pending[1:]
		tk := d.tasks[r.topic]
		if tk == nil {
			d.out[r.topic] = append(d.out[r.topic], r)
			continue
		}
		off := d.offsets[r.topic]
		d.offsets[r.topic]++
		if err := tk.process(r.topic, 0, off, r.key, r.value, r.ts, nil); err != nil {
			d.t.Fatal(err)
		}
	}
}

func (d *driver) read(topic string) []string {
	var s []string
	for _, r := range d.out[topic] {
		s = append(s, string(r.key)+"="+string(r.value))
	}
	return s
}

func wordCount(b *Builder, in, out string) {
	lines := From(b, String(), String(), in)
	words := FlatMapValues(lines, func(_ string, line string) []string { return strings.Fields(strings.ToLower(line)) })
	counts := Count(GroupBy(words, func(_, w string) string { return w }, String(), String()), "counts")
	MapValues(counts.ToStream(), func(_ string, n int64) string { return strconv.FormatInt(n, 10) }).To(out, String(), String())
}

func TestWordCountTopology(t *testing.T) {
	b := NewBuilder()
	wordCount(b, "in", "out")
	d := newDriver(t, b)
	if n := len(d.tasks); n != 2 {
		t.Fatalf("tasks by source topic = %d, want 2 (input and repartition)", n)
	}
	d.pipe("in", nil, []byte("the quick the"), 1)
	d.pipe("in", nil, []byte("The end"), 2)
	got := strings.Join(d.read("out"), " ")
	want := "the=1 quick=1 the=2 the=3 end=1"
	if got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	// The store's changelog carries each update, big-endian int64.
	cl := d.out["app-counts-changelog"]
	if len(cl) != 5 || string(cl[4].key) != "end" || string(cl[4].value) != "\x00\x00\x00\x00\x00\x00\x00\x01" || cl[4].ts != 2 {
		t.Fatalf("changelog %+v", cl)
	}
	if _, ok := d.tasks["app-counts-repartition"]; !ok {
		t.Fatalf("no task reads app-counts-repartition: %v", d.tasks)
	}
}

func TestStatelessOperators(t *testing.T) {
	b := NewBuilder()
	a := From(b, String(), Int32(), "a")
	c := From(b, String(), Int32(), "c")
	m := a.Merge(c).Filter(func(_ string, v int32) bool { return v >= 0 })
	br := m.Branch(func(_ string, v int32) bool { return v%2 == 0 }, func(string, int32) bool { return true })
	MapValues(br[0], func(_ string, v int32) string { return "even" }).To("even", String(), String())
	Map(br[1], func(k string, v int32) (string, string) { return strings.ToUpper(k), "odd" }).To("odd", String(), String())
	d := newDriver(t, b)
	i32 := func(v int32) []byte { b, _ := Int32().Serialize("", v); return b }
	d.pipe("a", []byte("x"), i32(2), 1)
	d.pipe("c", []byte("y"), i32(3), 2)
	d.pipe("a", []byte("z"), i32(-1), 3)
	if got := strings.Join(d.read("even"), " "); got != "x=even" {
		t.Fatalf("even: %q", got)
	}
	if got := strings.Join(d.read("odd"), " "); got != "Y=odd" {
		t.Fatalf("odd: %q", got)
	}
}

func TestReduceKeepsFirstValue(t *testing.T) {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	tbl := Reduce(GroupByKey(s, String(), String()), "cat", func(agg, v string) string { return agg + "+" + v })
	tbl.ToStream().To("out", String(), String())
	d := newDriver(t, b)
	d.pipe("in", []byte("k"), []byte("a"), 1)
	d.pipe("in", []byte("k"), []byte("b"), 2)
	d.pipe("in", []byte("j"), []byte("c"), 3)
	if got := strings.Join(d.read("out"), " "); got != "k=a k=a+b j=c" {
		t.Fatalf("out %q", got)
	}
	if _, ok := d.tasks["app-cat-repartition"]; ok {
		t.Fatal("GroupByKey on an unchanged key must not repartition")
	}
}

type puncProc struct {
	ctx   ProcessorContext[string, string]
	fired []int64
}

func (p *puncProc) Init(ctx ProcessorContext[string, string]) error {
	p.ctx = ctx
	ctx.Schedule(10*time.Millisecond, StreamTime, func(now time.Time) {
		p.fired = append(p.fired, now.UnixMilli())
		ctx.Forward(Record[string, string]{Key: "tick", Value: "", Timestamp: now})
	})
	return nil
}
func (p *puncProc) Process(r Record[string, string]) error {
	md, ok := p.ctx.RecordMetadata()
	if !ok || md.Topic != "in" {
		return nil
	}
	return nil
}
func (p *puncProc) Close() error { return nil }

func TestStreamTimePunctuation(t *testing.T) {
	b := NewBuilder()
	pp := &puncProc{}
	s := Process(From(b, String(), String(), "in"), func() Processor[string, string, string, string] { return pp })
	s.To("out", String(), String())
	d := newDriver(t, b)
	for _, ts := range []int64{5, 3, 12, 14, 45} {
		d.pipe("in", []byte("k"), []byte("v"), ts)
	}
	// First at stream time 5 (the grid starts at 0), then 12 (passed 10),
	// then once at 45 for the missed 20, 30 and 40; 3 is out of order.
	want := []int64{5, 12, 45}
	if len(pp.fired) != len(want) || pp.fired[0] != 5 || pp.fired[1] != 12 || pp.fired[2] != 45 {
		t.Fatalf("fired at %v, want %v", pp.fired, want)
	}
	if n := len(d.read("out")); n != 3 {
		t.Fatalf("punctuator forwarded %d records, want 3", n)
	}
}

func TestSerdes(t *testing.T) {
	b, _ := Int64().Serialize("t", 258)
	if string(b) != "\x00\x00\x00\x00\x00\x00\x01\x02" {
		t.Fatalf("int64 %x", b)
	}
	b, _ = Int32().Serialize("t", -2)
	if string(b) != "\xff\xff\xff\xfe" {
		t.Fatalf("int32 %x", b)
	}
	if _, err := Int32().Deserialize("t", []byte{1}); err == nil {
		t.Fatal("int32 of 1 byte: no error")
	}
	type v struct{ A int }
	j := JSON[v]()
	b, _ = j.Serialize("t", v{7})
	got, err := j.Deserialize("t", b)
	if string(b) != `{"A":7}` || err != nil || got.A != 7 {
		t.Fatalf("json %s %v %v", b, got, err)
	}
}

func TestBuildErrors(t *testing.T) {
	b := NewBuilder()
	AddSource(b, "s", String(), String(), "t")
	AddSink(b, "k", "o", String(), String(), "nope")
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), `parent "nope" does not exist`) {
		t.Fatalf("Build: %v", err)
	}
}
