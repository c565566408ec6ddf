package streams

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Sessions with a 5 s gap and 10 s grace: records join, a record between
// two sessions merges them (tombstones for both, then the merged count),
// and a record too late for any open session is dropped.
func TestSessionWindowCount(t *testing.T) {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	CountSessions(SessionWindowedBy(GroupByKey(s, String(), String()), SessionWindows{Gap: 5 * time.Second, Grace: 10 * time.Second}), "sessions").
		ToStream().To("out", SessionWindowedSerde(String()), Nullable(Int64()))
	d := newDriver(t, b)
	for _, ts := range []int64{1000, 10000, 5500, 40000, 24000 /* its session would end before 30000: dropped */, 36000} {
		d.pipe("in", []byte("a"), []byte("x"), ts)
	}
	var got []string
	for _, r := range d.out["out"] {
		k, err := SessionWindowedSerde(String()).Deserialize("out", r.key)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Nullable(Int64()).Deserialize("out", r.value)
		if err != nil {
			t.Fatal(err)
		}
		val := "nil"
		if v != nil {
			val = fmt.Sprint(*v)
		}
		got = append(got, fmt.Sprintf("%s[%d,%d]=%s", k.Key, k.Window.Start, k.Window.End, val))
	}
	want := "a[1000,1000]=1 a[10000,10000]=1 a[1000,1000]=nil a[10000,10000]=nil a[1000,10000]=3 " +
		"a[40000,40000]=1 a[40000,40000]=nil a[36000,40000]=2"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("output\n got %s\nwant %s", g, want)
	}
	// The store's changelog: session keys (key, end, start), tombstones
	// for the merged sessions.
	cl := d.out["app-sessions-changelog"]
	if len(cl) != 8 || cl[2].value != nil || string(cl[4].key) != "a"+string(sessionKey(nil, Window{1000, 10000})) {
		t.Fatalf("changelog %+v", cl)
	}
}

// Reduce over sessions: a session's first value as is; a bridging record
// joins the sessions' values, earliest first, then its own.
func TestSessionWindowReduce(t *testing.T) {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	ReduceSessions(SessionWindowedBy(GroupByKey(s, String(), String()), SessionWindows{Gap: 5 * time.Second, Grace: 10 * time.Second}), "cat",
		func(agg, v string) string { return agg + "+" + v }).
		ToStream().To("out", SessionWindowedSerde(String()), Nullable(String()))
	d := newDriver(t, b)
	d.pipe("in", []byte("k"), []byte("a"), 1000)
	d.pipe("in", []byte("k"), []byte("b"), 10000)
	d.pipe("in", []byte("k"), []byte("c"), 5500)
	var got []string
	for _, r := range d.out["out"] {
		k, _ := SessionWindowedSerde(String()).Deserialize("out", r.key)
		v := "nil"
		if r.value != nil {
			v = string(r.value)
		}
		got = append(got, fmt.Sprintf("%s[%d,%d]=%s", k.Key, k.Window.Start, k.Window.End, v))
	}
	want := "k[1000,1000]=a k[10000,10000]=b k[1000,1000]=nil k[10000,10000]=nil k[1000,10000]=a+b+c"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("output\n got %s\nwant %s", g, want)
	}
}

// Without grace a session that ended more than the gap before the stream
// time has expired from the store (retention = gap + grace, as in Kafka),
// so a record that would bridge it joins only the later session.
func TestSessionExpiredWithoutGrace(t *testing.T) {
	b := NewBuilder()
	s := From(b, String(), String(), "in")
	CountSessions(SessionWindowedBy(GroupByKey(s, String(), String()), SessionWindows{Gap: 5 * time.Second}), "s").
		ToStream().To("out", SessionWindowedSerde(String()), Nullable(Int64()))
	d := newDriver(t, b)
	d.pipe("in", []byte("k"), []byte("x"), 1000)
	d.pipe("in", []byte("k"), []byte("x"), 10000)
	d.pipe("in", []byte("k"), []byte("x"), 5500)
	var got []string
	for _, r := range d.out["out"] {
		k, _ := SessionWindowedSerde(String()).Deserialize("out", r.key)
		v, _ := Nullable(Int64()).Deserialize("out", r.value)
		val := "nil"
		if v != nil {
			val = fmt.Sprint(*v)
		}
		got = append(got, fmt.Sprintf("[%d,%d]=%s", k.Window.Start, k.Window.End, val))
	}
	if g, want := strings.Join(got, " "), "[1000,1000]=1 [10000,10000]=1 [10000,10000]=nil [5500,10000]=2"; g != want {
		t.Fatalf("output\n got %s\nwant %s", g, want)
	}
}
