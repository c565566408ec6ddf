package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/security/tlstest"
	"github.com/samsa-io/samsa/internal/servertest"
)

// TestConsumeFromFiles: a consumer's fetch answers carry their batches
// straight from the segment files (sendfile on PLAINTEXT, copied into the
// frame under TLS). franz-go, sarama and kafka-go consumers, over
// PLAINTEXT and SSL, read back exactly what was produced across many
// segments, while on the same broker retention deletes the segments of
// another topic as fast as they roll and a reader fetches at that
// topic's log start: every batch it gets is whole and intact (its CRC
// holds), whatever is deleted under it.
func TestConsumeFromFiles(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "Samsa e2e CA")
	broker := ca.Server(t, pkix.Name{CommonName: "localhost"})
	srv := servertest.StartIn(t, filepath.Join(dir, "data"),
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.name.ssl.ssl.keystore.type=PEM",
		"listener.name.ssl.ssl.keystore.location="+broker.WritePEM(t, dir, "broker.pem"),
		"log.retention.check.interval.ms=50")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	plain, ssl := srv.Addr("PLAINTEXT"), srv.Addr("SSL")

	cl := newKgo(t, plain)
	adm := kadm.NewClient(cl)
	topic := topicName("files", "segments")
	oneMs := "1"
	franzCreate(t, ctx, adm, topic, 3, map[string]*string{"segment.ms": &oneMs}) // a segment per append, about
	// In chunks, so that each chunk makes a batch of its own per
	// partition, and rolls a segment (its timestamps run a second past
	// the segment's first).
	var produced []rec
	recs := genRecords(15, 3000)
	for i := 0; i < len(recs); i += 100 {
		produced = append(produced, franzProduce(t, ctx, cl, topic, recs[i:i+100], true)...)
	}
	ends := franzEnds(t, ctx, adm, topic)
	if n := countSegments(t, filepath.Join(dir, "data"), topic+"-0"); n < 5 {
		t.Fatalf("%s-0 has %d segments, want several", topic, n)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	churn := startChurn(t, ctx, plain, stop, &wg)

	consumers := []struct {
		name    string
		consume func() []rec
	}{
		{"franz-go plaintext", func() []rec { return franzConsumeOpts(t, ctx, plain, topic, len(produced)) }},
		{"franz-go ssl", func() []rec {
			return franzConsumeOpts(t, ctx, ssl, topic, len(produced), kgo.DialTLSConfig(tlsCfg))
		}},
		{"sarama plaintext", func() []rec { return saramaConsume(t, ctx, plain, topic, ends) }},
		{"sarama ssl", func() []rec {
			cfg := saramaConfig()
			cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg
			return saramaConsumeWith(t, ctx, cfg, ssl, topic, ends)
		}},
		{"kafka-go plaintext", func() []rec {
			return kafkagoConsumeDialer(t, ctx, &kafka.Dialer{Timeout: 5 * time.Second}, plain, topic, ends)
		}},
		{"kafka-go ssl", func() []rec {
			return kafkagoConsumeDialer(t, ctx, &kafka.Dialer{Timeout: 5 * time.Second, TLS: tlsCfg}, ssl, topic, ends)
		}},
	}
	for _, c := range consumers {
		got := c.consume()
		if t.Failed() {
			t.Fatalf("%s failed", c.name)
		}
		checkConsumed(t, 3, produced, got, ends, checkOpts{nilKeyAsEmpty: strings.HasPrefix(c.name, "kafka-go")})
	}
	// The churn must have run meanwhile; on a loaded machine give it
	// time to show both.
	for deadline := time.Now().Add(60 * time.Second); churn.fetched.Load() == 0 || churn.deleted.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || t.Failed() {
			break
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("churn: %d answers with batches, the log start moved %d times", churn.fetched.Load(), churn.deleted.Load())
	if churn.fetched.Load() == 0 || churn.deleted.Load() < 2 {
		t.Fatalf("the churn reader got %d answers with batches while retention moved the log start %d times; want both",
			churn.fetched.Load(), churn.deleted.Load())
	}
}

// churn counts what startChurn's reader saw.
type churn struct {
	fetched atomic.Int64 // answers with batches, all intact
	deleted atomic.Int64 // times the log start offset was seen to move
}

// startChurn produces to a topic whose segments retention deletes as
// soon as they roll (retention.bytes=1, file.delete.delay.ms=0), and
// fetches at its log start offset over and over, checking every batch of
// every answer, until stop closes.
func startChurn(t *testing.T, ctx context.Context, addr string, stop chan struct{}, wg *sync.WaitGroup) *churn {
	t.Helper()
	cl := newKgo(t, addr, kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	topic := topicName("files", "churn")
	one, zero := "1", "0"
	franzCreate(t, ctx, adm, topic, 1, map[string]*string{"segment.ms": &one, "retention.bytes": &one, "file.delete.delay.ms": &zero})
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("ListTopics %s: %v %v", topic, err, td[topic].Err)
	}
	id := td[topic].ID
	c := &churn{}
	wg.Add(2)
	go func() {
		defer wg.Done()
		value := make([]byte, 20_000)
		for {
			select {
			case <-stop:
				return
			default:
			}
			cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value})
		}
	}()
	go func() {
		defer wg.Done()
		last := int64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			starts, err := adm.ListStartOffsets(ctx, topic)
			if err != nil {
				continue
			}
			start := starts[topic][0].Offset
			if start > last {
				c.deleted.Add(1)
				last = start
			}
			req := kmsg.NewPtrFetchRequest()
			req.MaxBytes = 1 << 20
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = topic, id
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.FetchOffset, fp.PartitionMaxBytes = start, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
			kresp, err := req.RequestWith(ctx, cl)
			if err != nil {
				continue // the connection closed under a shortened file, or ctx ended
			}
			if len(kresp.Topics) != 1 || len(kresp.Topics[0].Partitions) != 1 {
				t.Errorf("churn fetch: %d topics in the answer", len(kresp.Topics))
				return
			}
			p := kresp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				if p.ErrorCode != kerr.OffsetOutOfRange.Code {
					t.Errorf("churn fetch at %d: %v", start, kerr.ErrorForCode(p.ErrorCode))
					return
				}
				continue // retention passed start meanwhile
			}
			if err := checkBatches(p.RecordBatches, start); err != nil {
				t.Errorf("churn fetch at %d: %v", start, err)
				return
			}
			if len(p.RecordBatches) > 0 {
				c.fetched.Add(1)
			}
		}
	}()
	return c
}

// checkBatches checks that b is whole batches with intact CRCs, the
// first holding offset from.
func checkBatches(b []byte, from int64) error {
	for first := true; len(b) > 0; first = false {
		h, err := record.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.Size() > len(b) {
			return errPartialBatch
		}
		if crc := record.ComputeCRC(b[:h.Size()]); crc != h.CRC {
			return errBadCRC
		}
		if first && (h.BaseOffset > from || h.LastOffset() < from) {
			return errWrongBatch
		}
		b = b[h.Size():]
	}
	return nil
}

type checkErr string

func (e checkErr) Error() string { return string(e) }

const (
	errPartialBatch = checkErr("a partial batch")
	errBadCRC       = checkErr("a batch whose CRC does not hold")
	errWrongBatch   = checkErr("the first batch does not hold the fetch offset")
)

// countSegments counts the .log files of the partition directory part
// under dir.
func countSegments(t *testing.T, dir, part string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(path)) == part && strings.HasSuffix(path, ".log") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// franzConsumeOpts is franzConsume with extra client options.
func franzConsumeOpts(t *testing.T, ctx context.Context, addr, topic string, n int, opts ...kgo.Opt) []rec {
	t.Helper()
	cl := newKgo(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	defer cl.Close()
	var out []rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records before timeout", topic, len(out), n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Errorf("consume %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(kr *kgo.Record) { out = append(out, fromKgo(kr)) })
	}
	return out
}

// kafkagoConsumeDialer is kafkagoConsume with a given dialer (TLS).
func kafkagoConsumeDialer(t *testing.T, ctx context.Context, d *kafka.Dialer, addr, topic string, ends map[int32]int64) []rec {
	t.Helper()
	var out []rec
	for p := int32(0); p < int32(len(ends)); p++ {
		if ends[p] == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: int(p),
			MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 200 * time.Millisecond, Dialer: d})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			t.Fatalf("SetOffset: %v", err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s[%d] after %d records in total: %v", topic, p, len(out), err)
			}
			c := rec{Key: m.Key, Value: m.Value, Timestamp: m.Time, Partition: int32(m.Partition), Offset: m.Offset}
			for _, h := range m.Headers {
				c.Headers = append(c.Headers, hdr{Key: h.Key, Value: h.Value})
			}
			out = append(out, c)
			if m.Offset >= ends[p]-1 {
				break
			}
		}
		r.Close()
	}
	return out
}
