package streams

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func timestamps(d *driver, topic string) string {
	var ts []string
	for _, r := range d.out[topic] {
		ts = append(ts, fmt.Sprint(r.ts))
	}
	return strings.Join(ts, " ")
}

// Aggregations forward, and log, the larger of the record's timestamp and
// the aggregate's (Kafka's timestamped stores); a new task restored from
// the changelog knows the aggregate's timestamp.
func TestAggregateTimestamps(t *testing.T) {
	build := func() *Builder {
		b := NewBuilder()
		s := From(b, String(), String(), "in")
		Count(GroupByKey(s, String(), String()), "n").ToStream().To("out", String(), Int64())
		CountWindows(WindowedBy(GroupByKey(s, String(), String()), TumblingWindows(10*time.Second, time.Minute)), "w").
			ToStream().To("wout", TimeWindowedSerde(String(), 10*time.Second), Int64())
		return b
	}
	d := newDriver(t, build())
	d.pipe("in", []byte("k"), nil, 5000)
	d.pipe("in", []byte("k"), nil, 2000) // out of order: the aggregate keeps 5000
	if got := timestamps(d, "out"); got != "5000 5000" {
		t.Fatalf("count timestamps %s, want 5000 5000", got)
	}
	if got := timestamps(d, "wout"); got != "5000 5000" {
		t.Fatalf("windowed count timestamps %s, want 5000 5000", got)
	}
	if got := timestamps(d, "app-n-changelog"); got != "5000 5000" {
		t.Fatalf("changelog timestamps %s, want 5000 5000", got)
	}

	// A new instance of the tasks, restored from the changelogs.
	d2 := newDriver(t, build())
	for _, tk := range d2.tasks {
		for _, si := range tk.stores {
			for _, r := range d.out[si.changelog] {
				si.raw.restore(r.key, r.value, r.ts)
			}
		}
	}
	d2.pipe("in", []byte("k"), nil, 1000)
	if got := timestamps(d2, "out"); got != "5000" {
		t.Fatalf("count timestamp after restore %s, want 5000", got)
	}
	if got := d2.readWindowed("wout", 10*time.Second); got != "k@0=3" {
		t.Fatalf("windowed count after restore %s, want k@0=3", got)
	}
	if got := timestamps(d2, "wout"); got != "5000" {
		t.Fatalf("windowed count timestamp after restore %s, want 5000", got)
	}
}

// Session aggregates carry the session's end as timestamp, tombstones too.
func TestSessionTimestamps(t *testing.T) {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	CountSessions(SessionWindowedBy(GroupByKey(s, String(), String()), SessionWindows{Gap: 5 * time.Second, Grace: time.Minute}), "s").
		ToStream().To("out", SessionWindowedSerde(String()), Nullable(Int64()))
	d := newDriver(t, b)
	d.pipe("in", []byte("k"), nil, 4000)
	d.pipe("in", []byte("k"), nil, 1000) // joins [4000,4000]: tombstone, then [1000,4000]
	if got := timestamps(d, "out"); got != "4000 4000 4000" {
		t.Fatalf("timestamps %s, want 4000 4000 4000", got)
	}
}
