package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchPurgatory: a parked fetch (Kafka's DelayedFetch) keeps what
// its partitions returned as they change, answers when they hold
// min_bytes together, and answers a failed read at once.
func TestFetchPurgatory(t *testing.T) {
	ctx := testContext(t)
	const topic = "purgatory"
	addr, adm, produce := startSessionTopic(t, ctx, topic)
	id := topicID(t, ctx, adm, topic)
	const maxWait = 30 * time.Second // far beyond any wake; only a missed wake reaches it

	// send sends a sessionless fetch of parts and returns a channel
	// with its response and how long it took.
	type answer struct {
		resp *kmsg.FetchResponse
		took time.Duration
	}
	send := func(minBytes int32, parts ...fetchAt) <-chan answer {
		s := &sessionConn{t: t, c: rawDial(t, addr), version: 17, topic: topic, id: id}
		req := kmsg.NewPtrFetchRequest()
		req.Version = 17
		req.ReplicaState.ID = -1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait/time.Millisecond), minBytes, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		s.cid++
		start := time.Now()
		rawWrite(t, s.c, rawFrame(req, s.cid))
		out := make(chan answer, 1)
		go func() {
			// A read error closes the connection, which the test sees as
			// a missing answer; it fails on the main goroutine.
			resp := &kmsg.FetchResponse{Version: 17}
			if body, err := readFetchFrame(s.c, maxWait+5*time.Second); err == nil && resp.ReadFrom(body) == nil {
				out <- answer{resp, time.Since(start)}
			}
			close(out)
		}()
		return out
	}
	wait := func(what string, ch <-chan answer) answer {
		t.Helper()
		select {
		case a, ok := <-ch:
			if !ok {
				t.Fatalf("%s: no answer", what)
			}
			return a
		case <-time.After(maxWait + 10*time.Second):
			t.Fatalf("%s: no answer", what)
		}
		return answer{}
	}

	t.Run("partitions that changed add up to min_bytes", func(t *testing.T) {
		// Each of p0 and p1 gets one record of 500 random bytes (which
		// the producer cannot compress): one alone is less than
		// min_bytes, both are more.
		rng := rand.New(rand.NewPCG(1, 2))
		big := func() string { return string(randBytes(rng, 500)) }
		ch := send(800, fetchAt{0, 2}, fetchAt{1, 1}, fetchAt{2, 0})
		produce(0, big())
		select {
		case a := <-ch:
			t.Fatalf("answered with one record of 500 bytes, below min_bytes 800: %v", partitionsOf(t, a.resp))
		case <-time.After(200 * time.Millisecond):
		}
		produce(1, big())
		a := wait("after the second record", ch)
		if got := partitionsOf(t, a.resp); fmt.Sprint(got) != "[p0:1 p1:1 p2:0]" {
			t.Fatalf("response carries %v, want [p0:1 p1:1 p2:0]", got)
		}
		if a.took >= maxWait {
			t.Fatalf("answered after %v, its whole max wait", a.took)
		}
	})
	t.Run("a failed read answers at once", func(t *testing.T) {
		// p0 at its end would wait; p1 at 99 is out of range.
		a := wait("out of range", send(1, fetchAt{0, 3}, fetchAt{1, 99}))
		if got := partitionsOf(t, a.resp); fmt.Sprint(got) != "[p0:0 p1:"+kerr.OffsetOutOfRange.Message+"]" {
			t.Fatalf("response carries %v", got)
		}
		if a.took >= maxWait {
			t.Fatalf("answered after %v, its whole max wait", a.took)
		}
	})
}

// readFetchFrame reads one flexible response frame within timeout and
// returns its body after the correlation id and header tags.
func readFetchFrame(c net.Conn, timeout time.Duration) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	if len(b) < 5 || b[4] != 0 {
		return nil, errors.New("bad response header")
	}
	return b[5:], nil
}
