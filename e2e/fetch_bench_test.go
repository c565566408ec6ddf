package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/servertest"
)

// The fetch benchmarks drive a server over loopback TCP with raw Fetch
// v17 requests, as a consumer keeping a fetch session (KIP-227) sends
// them: a full fetch at epoch 0, then incremental ones naming only the
// partitions whose offset moved. A server that keeps no session answers
// session id 0 and the client sends full fetches, so the same code
// measures a server with or without sessions. The file uses nothing but
// servertest and the wire, so that it runs on older trees too.

// benchConn is one connection speaking raw requests.
type benchConn struct {
	c   net.Conn
	cid int32
	buf []byte
}

func (c *benchConn) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	c.cid++
	b := append(c.buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(c.cid))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.buf = b
	if _, err := c.c.Write(b); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.c, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.c, body); err != nil {
		return err
	}
	body = body[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:]
	}
	return resp.ReadFrom(body)
}

// benchConsumer fetches every partition of one topic in a session.
type benchConsumer struct {
	conn    *benchConn
	id      [16]byte
	offsets []int64
	sent    []int64 // offsets the session holds; nil: no session
	session int32
	epoch   int32
}

// fetch sends the next fetch and returns how many record bytes it got;
// the offsets move past the batches returned.
func (c *benchConsumer) fetch(maxWait time.Duration) (int, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 17
	req.ReplicaState.ID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait/time.Millisecond), 1, 50<<20
	req.SessionID, req.SessionEpoch = c.session, c.epoch
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = c.id
	for p, off := range c.offsets {
		if c.epoch > 0 && c.sent[p] == off {
			continue
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	if len(rt.Partitions) > 0 {
		req.Topics = append(req.Topics, rt)
	}
	resp := kmsg.NewPtrFetchResponse()
	if err := c.conn.roundTrip(req, resp); err != nil {
		return 0, err
	}
	if resp.ErrorCode != 0 {
		return 0, fmt.Errorf("fetch error %d", resp.ErrorCode)
	}
	if resp.SessionID != 0 {
		if c.epoch == 0 {
			c.sent = make([]int64, len(c.offsets))
		}
		copy(c.sent, c.offsets)
		c.session, c.epoch = resp.SessionID, c.epoch+1
	}
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return 0, fmt.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
			for rest := p.RecordBatches; len(rest) >= 12; {
				size := 12 + int(binary.BigEndian.Uint32(rest[8:]))
				if size > len(rest) {
					break
				}
				h, err := record.ParseHeader(rest[:size])
				if err != nil {
					return 0, err
				}
				c.offsets[p.Partition] = h.BaseOffset + int64(h.LastOffsetDelta) + 1
				n += size
				rest = rest[size:]
			}
		}
	}
	return n, nil
}

// benchServer starts a server with a topic of n partitions, each holding
// one record, and returns a dialer and the topic id.
func benchServer(b *testing.B, topic string, n int) (dial func() *benchConn, id [16]byte) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b.Cleanup(cancel)
	addr := servertest.Addr(servertest.Start(b))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, int32(n), 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	for p := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("v")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	dial = func() *benchConn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return &benchConn{c: c}
	}
	return dial, td[topic].ID
}

// BenchmarkFetchIdle is a consumer polling caught-up partitions with
// max_wait 0: every fetch reads each partition; with a session the
// request and the response name none of them.
func BenchmarkFetchIdle(b *testing.B) {
	for _, n := range []int{6, 100} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			dial, id := benchServer(b, "bench-idle", n)
			c := &benchConsumer{conn: dial(), id: id, offsets: make([]int64, n)}
			if got, err := c.fetch(0); err != nil || got == 0 {
				b.Fatalf("first fetch: %d bytes, %v", got, err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := c.fetch(0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFetchWake is one record produced (acks=1) to one partition
// after another while a consumer's fetch of every partition waits for
// data (max_wait 10 s): each iteration is a parked fetch woken by an
// append, answered, and parked again.
func BenchmarkFetchWake(b *testing.B) {
	for _, n := range []int{6, 100} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			const topic = "bench-wake"
			dial, id := benchServer(b, topic, n)
			c := &benchConsumer{conn: dial(), id: id, offsets: make([]int64, n)}
			if got, err := c.fetch(0); err != nil || got == 0 {
				b.Fatalf("first fetch: %d bytes, %v", got, err)
			}
			got := make(chan error, 1)
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					bytes, err := c.fetch(10 * time.Second)
					if bytes == 0 && err == nil {
						continue
					}
					select {
					case got <- err:
					case <-done:
						return
					}
					if err != nil {
						return
					}
				}
			}()
			prod := dial()
			batch := record.Build(record.BuildOptions{PartitionLeaderEpoch: -1}, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("w")}})
			b.ResetTimer()
			for i := range b.N {
				req := kmsg.NewPtrProduceRequest()
				req.Version, req.Acks, req.TimeoutMillis = 9, 1, 10000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = int32(i%n), batch
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				if err := prod.roundTrip(req, kmsg.NewPtrProduceResponse()); err != nil {
					b.Fatal(err)
				}
				if err := <-got; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
