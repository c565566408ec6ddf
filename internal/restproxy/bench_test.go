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
// acks=all, over HTTP/1.1 keep-alive (v2 binary and json: 100 records a
// request; v3: one record a request, and one stream with one delivery
// report read per record) and natively with franz-go (100 records a
// ProduceSync, as a v2 request, and one, as a v3 request). b.N counts
// records; each case also reports records/s.

const benchValue = "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"

// reportRate adds the records/s metric: produced records over the timed part.
func reportRate(b *testing.B, produced int) {
	b.ReportMetric(float64(produced)/b.Elapsed().Seconds(), "records/s")
}

// postV2 sends body to path n times over client's kept-alive connection.
func postV2(b *testing.B, client *http.Client, url, ct string, body []byte, perRequest int) {
	b.SetBytes(int64(len(benchValue)))
	b.ResetTimer()
	produced := 0
	for produced < b.N {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		produced += perRequest
	}
	b.StopTimer()
	reportRate(b, produced)
}

func BenchmarkProduce(b *testing.B) {
	e := start(b, Config{})
	e.createTopic("bench", 1)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b64v := b64(benchValue)

	records := func(value string) []byte {
		var sb strings.Builder
		sb.WriteString(`{"records":[`)
		for i := range 100 {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`{"value":` + value + `,"partition":0}`)
		}
		sb.WriteString(`]}`)
		return []byte(sb.String())
	}

	b.Run("v2/binary-100-per-request", func(b *testing.B) {
		postV2(b, client, e.url+"/topics/bench", binaryType, records(`"`+b64v+`"`), 100)
	})

	b.Run("v2/json-100-per-request", func(b *testing.B) {
		// A JSON string of 98 characters: 100 bytes as its JSON text.
		postV2(b, client, e.url+"/topics/bench", jsonType, records(`"`+benchValue[:98]+`"`), 100)
	})

	b.Run("v3/1-per-request", func(b *testing.B) {
		md, err := e.adm.BrokerMetadata(e.ctx)
		if err != nil {
			b.Fatal(err)
		}
		body := []byte(`{"partition_id":0,"value":{"type":"BINARY","data":"` + b64v + `"}}`)
		postV2(b, client, e.url+"/v3/clusters/"+md.Cluster+"/topics/bench/records", "application/json", body, 1)
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
		b.StopTimer()
		reportRate(b, b.N)
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
		produced := 0
		for produced < b.N {
			for i := range recs {
				recs[i] = &kgo.Record{Value: []byte(benchValue)}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			produced += len(recs)
		}
		b.StopTimer()
		reportRate(b, produced)
	})

	// One record a ProduceSync, as a v3 request.
	b.Run("native/franz-go-1-per-call", func(b *testing.B) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.DefaultProduceTopic("bench"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		recs := make([]*kgo.Record, 1)
		b.SetBytes(int64(len(benchValue)))
		b.ResetTimer()
		produced := 0
		for produced < b.N {
			for i := range recs {
				recs[i] = &kgo.Record{Value: []byte(benchValue)}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			produced += len(recs)
		}
		b.StopTimer()
		reportRate(b, produced)
	})
}
