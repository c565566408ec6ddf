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
