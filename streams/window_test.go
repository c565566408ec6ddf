package streams

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// readWindowed renders a topic of TimeWindowedSerde(String) keys and int64
// values as "key@start=value".
func (d *driver) readWindowed(topic string, size time.Duration) string {
	d.t.Helper()
	ws := TimeWindowedSerde(String(), size)
	var out []string
	for _, r := range d.out[topic] {
		k, err := ws.Deserialize(topic, r.key)
		if err != nil {
			d.t.Fatal(err)
		}
		if k.Window.End-k.Window.Start != size.Milliseconds() {
			d.t.Fatalf("window %+v of size %v", k.Window, size)
		}
		v, err := Int64().Deserialize(topic, r.value)
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s@%d=%d", k.Key, k.Window.Start, v))
	}
	return strings.Join(out, " ")
}

func windowedCount(w TimeWindows, suppress bool) *Builder {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	t := CountWindows(WindowedBy(GroupByKey(s, String(), String()), w), "wc")
	if suppress {
		t = SuppressUntilWindowCloses(t, "wc-suppress", Int64())
	}
	t.ToStream().To("out", TimeWindowedSerde(String(), w.Size), Int64())
	return b
}

// Tumbling windows of 10 s with 5 s of grace: a record up to 5 s behind
// the stream time past its window's end still counts; a later one is
// dropped.
func TestTumblingWindowCountWithGrace(t *testing.T) {
	d := newDriver(t, windowedCount(TumblingWindows(10*time.Second, 5*time.Second), false))
	for _, ts := range []int64{1000, 3000, 12000, 9000 /* late, within grace */, 21000, 8000 /* window closed at 15000 */, 19999} {
		d.pipe("in", []byte("a"), []byte("x"), ts)
	}
	d.pipe("in", []byte("b"), []byte("x"), 20500)
	want := "a@0=1 a@0=2 a@10000=1 a@0=3 a@20000=1 a@10000=2 b@20000=1"
	if got := d.readWindowed("out", 10*time.Second); got != want {
		t.Fatalf("output\n got %s\nwant %s", got, want)
	}
	// The changelog key is Kafka's window key schema: key, start, seqnum.
	cl := d.out["app-wc-changelog"]
	if len(cl) != 7 || string(cl[2].key) != "a\x00\x00\x00\x00\x00\x00\x27\x10\x00\x00\x00\x00" {
		t.Fatalf("changelog %+v", cl)
	}
}

// Hopping windows of 10 s every 5 s: a record is in two windows.
func TestHoppingWindowCount(t *testing.T) {
	d := newDriver(t, windowedCount(HoppingWindows(10*time.Second, 5*time.Second, 0), false))
	d.pipe("in", []byte("a"), []byte("x"), 7000)
	d.pipe("in", []byte("a"), []byte("x"), 3000)  // [0,10000) only; [-5000,5000) does not exist
	d.pipe("in", []byte("a"), []byte("x"), 14000) // closes [0,10000)
	d.pipe("in", []byte("a"), []byte("x"), 9000)  // [5000,15000) only
	want := "a@0=1 a@5000=1 a@0=2 a@5000=2 a@10000=1 a@5000=3"
	if got := d.readWindowed("out", 10*time.Second); got != want {
		t.Fatalf("output\n got %s\nwant %s", got, want)
	}
}

// Suppress emits each window's final count once, when the window closes
// (stream time past end + grace), in order of window end.
func TestSuppressUntilWindowCloses(t *testing.T) {
	d := newDriver(t, windowedCount(TumblingWindows(10*time.Second, 2*time.Second), true))
	d.pipe("in", []byte("b"), []byte("x"), 1000)
	d.pipe("in", []byte("a"), []byte("x"), 2000)
	d.pipe("in", []byte("a"), []byte("x"), 11000)
	d.pipe("in", []byte("a"), []byte("x"), 9000) // late, within grace
	if got := d.readWindowed("out", 10*time.Second); got != "" {
		t.Fatalf("output before any window closed: %s", got)
	}
	d.pipe("in", []byte("c"), []byte("x"), 12000) // closes [0,10000)
	if got, want := d.readWindowed("out", 10*time.Second), "a@0=2 b@0=1"; got != want {
		t.Fatalf("output\n got %s\nwant %s", got, want)
	}
	d.pipe("in", []byte("a"), []byte("x"), 35000) // closes [10000,20000)
	if got, want := d.readWindowed("out", 10*time.Second), "a@0=2 b@0=1 a@10000=1 c@10000=1"; got != want {
		t.Fatalf("output\n got %s\nwant %s", got, want)
	}
}

func TestWindowsValidated(t *testing.T) {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	CountWindows(WindowedBy(GroupByKey(s, String(), String()), HoppingWindows(time.Second, 2*time.Second, 0)), "w")
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "advance") {
		t.Fatalf("Build: %v", err)
	}
}
