package e2e

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder captures what checkConsumed reports. Fatalf ends the checker's
// goroutine like testing.T.FailNow does.
type recorder struct{ msgs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func runChecker(produced, consumed []rec, ends map[int32]int64) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkConsumed(r, 3, produced, consumed, ends, checkOpts{})
	}()
	<-done
	return r.msgs
}

// TestChecker proves that checkConsumed passes a faithful read and catches
// each kind of corruption a broker could introduce, so a green e2e test
// means something.
func TestChecker(t *testing.T) {
	produced := genRecords(1, 60)
	next := map[int32]int64{}
	for i := range produced {
		p := int32(i % 3)
		produced[i].Partition, produced[i].Offset = p, next[p]
		next[p]++
	}
	// A faithful consumer: partition by partition, in offset order.
	var good []rec
	for p := range int32(3) {
		for _, r := range produced {
			if r.Partition == p {
				good = append(good, r)
			}
		}
	}
	ends := map[int32]int64{0: 20, 1: 20, 2: 20}
	if msgs := runChecker(produced, good, ends); len(msgs) != 0 {
		t.Fatalf("faithful read reported: %v", msgs)
	}

	mutate := func(f func(c []rec) []rec) []rec {
		c := make([]rec, len(good))
		copy(c, good)
		return f(c)
	}
	for _, tc := range []struct {
		name     string
		consumed []rec
		ends     map[int32]int64
		want     string
	}{
		{"lost record", mutate(func(c []rec) []rec { return c[:len(c)-1] }), ends, "never consumed"},
		{"duplicate", mutate(func(c []rec) []rec { return append(c, c[0]) }), ends, "consumed twice"},
		{"swapped", mutate(func(c []rec) []rec { c[1], c[2] = c[2], c[1]; return c }), ends, "contiguous"},
		{"offset gap", mutate(func(c []rec) []rec { c[5].Offset += 1; return c }), ends, "contiguous"},
		{"key", mutate(func(c []rec) []rec { c[3].Key = []byte("other"); return c }), ends, "key"},
		{"null key", mutate(func(c []rec) []rec {
			for i := range c {
				if c[i].Key == nil {
					c[i].Key = []byte{}
				}
			}
			return c
		}), ends, "want null"},
		{"value", mutate(func(c []rec) []rec { c[4].Value = append([]byte{}, "x"...); return c }), ends, "value differs"},
		{"header", mutate(func(c []rec) []rec {
			c[6].Headers = []hdr{c[6].Headers[0], {Key: "blob", Value: []byte("z")}}
			return c
		}), ends, "headers"},
		{"timestamp", mutate(func(c []rec) []rec { c[7].Timestamp = c[7].Timestamp.Add(time.Millisecond); return c }), ends, "timestamp"},
		{"partition", mutate(func(c []rec) []rec { c[0].Partition = 1; return c }), ends, "partition"},
		{"end offset", good, map[int32]int64{0: 21, 1: 20, 2: 20}, "end offset 21"},
	} {
		msgs := runChecker(produced, tc.consumed, tc.ends)
		if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
			t.Errorf("%s: checker said %q, want a message containing %q", tc.name, msgs, tc.want)
		}
	}
}
