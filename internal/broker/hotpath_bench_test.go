package broker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/servertest"
)

// The hot-path benchmarks measure the broker's cost per request on the
// produce and fetch paths: an in-process server, one raw connection over
// loopback, the request encoded once and sent again each iteration, the
// answer read into a reused buffer (so the client adds almost nothing to
// the CPU and allocation figures). The first answer is decoded and
// checked in full; later ones must have the same size and no error.
// Instruction counts: run the test binary under
// `valgrind --tool=callgrind` (docs/benchmarks.md, "The broker's CPU per record").

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time (server and client, user and system)
// per iteration since start: steadier than wall time on a loaded machine.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// rawConn sends prebuilt requests and reads answers.
type rawConn struct {
	c    net.Conn
	resp []byte
}

// frame encodes req as a request frame with correlation id 1.
func frame(req kmsg.Request) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// roundTrip writes a request frame and returns the answer's body after
// its correlation id (valid until the next call).
func (c *rawConn) roundTrip(f []byte) ([]byte, error) {
	if _, err := c.c.Write(f); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.c, size[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(c.resp) < n {
		c.resp = make([]byte, n)
	}
	c.resp = c.resp[:n]
	if _, err := io.ReadFull(c.c, c.resp); err != nil {
		return nil, err
	}
	return c.resp[4:], nil
}

// decode decodes an answer body of req.
func decode(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:]
	}
	return resp, resp.ReadFrom(body)
}

// hotServer starts a server with a topic of n partitions and returns a
// raw connection to it and the topic's id.
func hotServer(b *testing.B, topic string, n int) (*rawConn, [16]byte) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := servertest.Addr(servertest.Start(b))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	created, err := kadm.NewClient(cl).CreateTopic(ctx, int32(n), 1, nil, topic)
	if err != nil {
		b.Fatal(err)
	}
	if created.Err != nil {
		b.Fatal(created.Err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &rawConn{c: c}, created.ID
}

// hotBatch is a batch of n records of 100 random bytes.
func hotBatch(n int) []byte {
	value := make([]byte, 100)
	rand.Read(value)
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: value}
	}
	return record.Build(record.BuildOptions{PartitionLeaderEpoch: -1}, recs)
}

// produceRequest is a Produce v11 request (topics by name) with batch on
// each of partitions.
func produceRequest(topic string, partitions int, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 11, acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range int32(partitions) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// checkProduce fails unless body answers every partition without error.
func checkProduce(b *testing.B, req *kmsg.ProduceRequest, body []byte, partitions int) {
	b.Helper()
	kresp, err := decode(req, body)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, t := range kresp.(*kmsg.ProduceResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				b.Fatalf("partition %d: %v", p.Partition, err)
			}
			n++
		}
	}
	if n != partitions {
		b.Fatalf("%d partitions answered, want %d", n, partitions)
	}
}

// BenchmarkHotProduce sends one Produce request at a time: 6 partitions,
// each a batch of 10 or 100 records of 100 B, acks=1 and acks=all.
func BenchmarkHotProduce(b *testing.B) {
	const partitions = 6
	for _, records := range []int{10, 100} {
		for _, acks := range []int16{1, -1} {
			b.Run(fmt.Sprintf("records=%d/acks=%d", records, acks), func(b *testing.B) {
				const topic = "hot-produce"
				c, _ := hotServer(b, topic, partitions)
				req := produceRequest(topic, partitions, acks, hotBatch(records))
				f := frame(req)
				body, err := c.roundTrip(f)
				if err != nil {
					b.Fatal(err)
				}
				checkProduce(b, req, body, partitions)
				size := len(body)
				b.SetBytes(int64(partitions * records * 100))
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for range b.N {
					body, err := c.roundTrip(f)
					if err != nil {
						b.Fatal(err)
					}
					if len(body) != size {
						b.Fatalf("answer of %d bytes, want %d", len(body), size)
					}
				}
				b.StopTimer()
				reportCPU(b, cpu)
				checkProduce(b, req, body, partitions)
			})
		}
	}
}

// BenchmarkHotFetch sends one full Fetch v17 request at a time (no
// session, so every fetch reads every partition, as a consumer's first
// fetch or a fetch of a session whose offsets all moved) for 6
// partitions, each holding 1 or 10 batches of 10 records of 100 B, from
// offset 0: a consumer reading small batches near the log's end.
func BenchmarkHotFetch(b *testing.B) {
	const partitions = 6
	for _, batches := range []int{1, 10} {
		b.Run(fmt.Sprintf("batches=%d", batches), func(b *testing.B) {
			const topic = "hot-fetch"
			c, id := hotServer(b, topic, partitions)
			batch := hotBatch(10)
			preq := produceRequest(topic, partitions, 1, batch)
			pf := frame(preq)
			for range batches {
				body, err := c.roundTrip(pf)
				if err != nil {
					b.Fatal(err)
				}
				checkProduce(b, preq, body, partitions)
			}
			req := kmsg.NewPtrFetchRequest()
			req.Version = 17
			req.ReplicaState.ID = -1
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 50<<20
			req.SessionID, req.SessionEpoch = 0, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = id
			for p := range int32(partitions) {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = p, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			f := frame(req)
			check := func(body []byte) {
				kresp, err := decode(req, body)
				if err != nil {
					b.Fatal(err)
				}
				resp := kresp.(*kmsg.FetchResponse)
				if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
					b.Fatalf("fetch answer: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
				}
				for _, p := range resp.Topics[0].Partitions {
					if p.ErrorCode != 0 || p.HighWatermark != int64(10*batches) {
						b.Fatalf("partition %d: error %d, high watermark %d", p.Partition, p.ErrorCode, p.HighWatermark)
					}
					if len(p.RecordBatches) != batches*len(batch) {
						b.Fatalf("partition %d: %d record bytes, want %d", p.Partition, len(p.RecordBatches), batches*len(batch))
					}
					// The stored batch differs from the sent one in its
					// base offset, leader epoch and CRC only.
					if !bytes.Equal(p.RecordBatches[61:len(batch)], batch[61:]) {
						b.Fatalf("partition %d: records differ from those produced", p.Partition)
					}
				}
			}
			body, err := c.roundTrip(f)
			if err != nil {
				b.Fatal(err)
			}
			check(body)
			size := len(body)
			b.SetBytes(int64(partitions * batches * 10 * 100))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				body, err := c.roundTrip(f)
				if err != nil {
					b.Fatal(err)
				}
				if len(body) != size {
					b.Fatalf("answer of %d bytes, want %d", len(body), size)
				}
			}
			b.StopTimer()
			reportCPU(b, cpu)
			check(body)
		})
	}
}
