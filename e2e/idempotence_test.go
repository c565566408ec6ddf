package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/servertest"
)

// rawProducer sends hand-built idempotent batches, so a test controls the
// sequence numbers and can resend a batch as a producer whose response was
// lost does.
type rawProducer struct {
	id      int64
	epoch   int16
	topic   string
	topicID [16]byte // Produce v13 names the topic by id
}

// batch is n records with sequences seq..seq+n-1 and values "seq-<s>".
func (p rawProducer) batch(seq int32, n int) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(fmt.Sprintf("seq-%d", seq+int32(i)))}
	}
	return record.Build(record.BuildOptions{PartitionLeaderEpoch: -1,
		Producer: &record.ProducerInfo{ID: p.id, Epoch: p.epoch, BaseSequence: seq}}, recs)
}

// produce sends one batch to partition 0 with acks=all and returns the
// partition's error code and base offset. A partition not hosted yet (just
// after a restart) is retried.
func (p rawProducer) produce(t *testing.T, ctx context.Context, cl *kgo.Client, seq int32, n int) (int16, int64) {
	t.Helper()
	for {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = p.topic, p.topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = p.batch(seq, n)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("produce seq %d: %v", seq, err)
		}
		sp := resp.Topics[0].Partitions[0]
		switch sp.ErrorCode {
		case kerr.NotLeaderForPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code:
			if ctx.Err() != nil {
				t.Fatalf("produce seq %d: partition never became available", seq)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return sp.ErrorCode, sp.BaseOffset
	}
}

func initProducerID(t *testing.T, ctx context.Context, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v, code %d", err, resp.ErrorCode)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// consumeAll reads partition 0 from offset 0 to its end and returns the
// value of each offset.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, want int) map[int64]string {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	got := map[int64]string{}
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", n, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, dup := got[r.Offset]; dup {
				t.Errorf("offset %d consumed twice", r.Offset)
			}
			got[r.Offset] = string(r.Value)
			n++
		})
	}
	return got
}

// TestIdempotentProduceAcrossRestarts writes five 2-record batches of one
// idempotent producer, stops the server cleanly (in process) or kills it
// with SIGKILL (a child process: a crash), restarts it on the same data
// directory and checks that the producer is remembered: the last batch
// resent is answered with its original offset and stored once, the next
// sequence continues, a gap is refused.
func TestIdempotentProduceAcrossRestarts(t *testing.T) {
	ctx := testContext(t)
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "clean", true: "crash"}[crash]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var addr string
			var stop func()
			if crash {
				addr, stop = startKillable(t, dir)
			} else {
				srv := servertest.StartIn(t, dir)
				addr, stop = servertest.Addr(srv), func() {
					if err := srv.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
			topic := topicName("raw", "idempotent-restart")
			adm := newKadm(t, addr)
			franzCreate(t, ctx, adm, topic, 1, nil)
			cl := newKgo(t, addr)
			id, epoch := initProducerID(t, ctx, cl)
			p := rawProducer{id: id, epoch: epoch, topic: topic, topicID: topicIDs(t, ctx, adm, topic)[topic]}
			for i := int32(0); i < 5; i++ {
				if code, off := p.produce(t, ctx, cl, 2*i, 2); code != 0 || off != int64(2*i) {
					t.Fatalf("batch %d: code %d offset %d, want 0 and %d", i, code, off, 2*i)
				}
			}
			cl.Close()
			stop()

			srv := servertest.StartIn(t, dir)
			addr = servertest.Addr(srv)
			cl = newKgo(t, addr)
			if code, off := p.produce(t, ctx, cl, 8, 2); code != 0 || off != 8 {
				t.Fatalf("resent last batch: code %d offset %d, want NONE and the original offset 8", code, off)
			}
			if code, off := p.produce(t, ctx, cl, 10, 3); code != 0 || off != 10 {
				t.Fatalf("next batch: code %d offset %d, want 0 and 10", code, off)
			}
			if code, _ := p.produce(t, ctx, cl, 20, 1); code != kerr.OutOfOrderSequenceNumber.Code {
				t.Fatalf("sequence gap: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", code)
			}
			got := consumeAll(t, ctx, addr, topic, 13)
			for off := int64(0); off < 13; off++ {
				if want := fmt.Sprintf("seq-%d", off); got[off] != want {
					t.Errorf("offset %d holds %q, want %q", off, got[off], want)
				}
			}
			if len(got) != 13 {
				t.Errorf("%d records stored, want 13", len(got))
			}
			dps, err := newKadm(t, addr).DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
			if err != nil {
				t.Fatalf("DescribeProducers: %v", err)
			}
			parts := dps.SortedPartitions()
			if len(parts) != 1 || parts[0].Err != nil || len(parts[0].ActiveProducers) != 1 {
				t.Fatalf("DescribeProducers: %+v", parts)
			}
			for _, ap := range parts[0].ActiveProducers {
				if ap.ProducerID != id || ap.ProducerEpoch != epoch || ap.LastSequence != 12 ||
					ap.CoordinatorEpoch != -1 || ap.CurrentTxnStartOffset != -1 {
					t.Fatalf("active producer %+v, want id %d epoch %d last sequence 12", ap, id, epoch)
				}
			}
		})
	}
}
