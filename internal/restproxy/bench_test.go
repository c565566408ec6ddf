package restproxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The produce benchmarks write 100-byte values to one partition with
// acks=all, over HTTP/1.1 keep-alive (v2: 100 records a request; v3: one
// stream, one delivery report read per record) and natively with franz-go
// (100 records a ProduceSync, as a v2 request). b.N counts records.

const benchValue = "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"

func BenchmarkProduce(b *testing.B) {
	e := start(b, Config{})
	e.createTopic("bench", 1)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b64v := b64(benchValue)

	b.Run("v2/100-per-request", func(b *testing.B) {
		var sb strings.Builder
		sb.WriteString(`{"records":[`)
		for i := range 100 {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`{"value":"` + b64v + `","partition":0}`)
		}
		sb.WriteString(`]}`)
		body := []byte(sb.String())
		b.SetBytes(int64(len(benchValue)))
		b.ResetTimer()
		for n := 0; n < b.N; n += 100 {
			req, _ := http.NewRequest("POST", e.url+"/topics/bench", bytes.NewReader(body))
			req.Header.Set("Content-Type", binaryType)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})

	b.Run("v3/stream", func(b *testing.B) {
		md, err := e.adm.BrokerMetadata(e.ctx)
		if err != nil {
			b.Fatal(err)
		}
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", e.url+"/v3/clusters/"+md.Cluster+"/topics/bench/records", pr)
		req.Header.Set("Content-Type", "application/json")
		respc := make(chan *http.Response, 1)
		go func() {
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
			}
			respc <- resp
		}()
		rec := []byte(`{"partition_id":0,"value":{"type":"BINARY","data":"` + b64v + `"}}` + "\n")
		// Keep up to 100 records in flight, as the v2 case does.
		const window = 100
		b.SetBytes(int64(len(benchValue)))
		b.ResetTimer()
		var rd *bufio.Reader
		sent := 0
		for n := 0; n < b.N; n++ {
			for sent < b.N && sent-n < window {
				if _, err := pw.Write(rec); err != nil {
					b.Fatal(err)
				}
				sent++
			}
			if rd == nil {
				resp := <-respc
				if resp == nil {
					b.FailNow()
				}
				defer resp.Body.Close()
				rd = bufio.NewReader(resp.Body)
			}
			line, err := rd.ReadBytes('\n')
			if err != nil || !bytes.Contains(line, []byte(`"error_code":200`)) {
				b.Fatalf("report %q: %v", line, err)
			}
		}
		pw.Close()
	})

	b.Run("native/franz-go-100-per-call", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.DefaultProduceTopic("bench"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		recs := make([]*kgo.Record, 100)
		b.SetBytes(int64(len(benchValue)))
		b.ResetTimer()
		for n := 0; n < b.N; n += 100 {
			for i := range recs {
				recs[i] = &kgo.Record{Value: []byte(benchValue)}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
