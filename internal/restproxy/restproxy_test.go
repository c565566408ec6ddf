package restproxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

const (
	binaryType = "application/vnd.kafka.binary.v2+json"
	jsonType   = "application/vnd.kafka.json.v2+json"
)

// env is a proxy served over a real socket in front of a one-node server.
type env struct {
	t      testing.TB
	url    string
	broker string
	proxy  *Proxy
	cl     *kgo.Client
	adm    *kadm.Client
	ctx    context.Context
	// user and pass, when user is set, are sent as basic authentication.
	user, pass string
}

// as is e sending user's basic authentication.
func (e *env) as(user, pass string) *env {
	c := *e
	c.user, c.pass = user, pass
	return &c
}

func start(t testing.TB, cfg Config, overrides ...string) *env {
	t.Helper()
	return startOn(t, servertest.Start(t, overrides...), cfg)
}

// startOn serves a proxy in front of s.
func startOn(t testing.TB, s *server.Server, cfg Config) *env {
	t.Helper()
	broker := servertest.Addr(s)
	cfg.ClientOpts = []kgo.Opt{kgo.SeedBrokers(broker)}
	cfg.Logger = servertest.Logger()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() { srv.Close(); p.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, url: srv.URL, broker: broker, proxy: p, cl: cl, adm: kadm.NewClient(cl), ctx: ctx}
}

func (e *env) createTopic(name string, partitions int32) {
	e.t.Helper()
	resp, err := e.adm.CreateTopic(e.ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.t.Fatalf("create %s: %v", name, err)
	}
}

// eventually waits until cond holds: metadata reaches the broker after
// the controller commits it.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	for !cond() {
		if e.ctx.Err() != nil {
			e.t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// response is an HTTP answer: status, content type and body.
type response struct {
	status int
	ct     string
	body   []byte
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d %s: %v", r.status, r.body, err)
	}
}

// errorCode is the error_code of an error answer.
func (r response) errorCode(t testing.TB) int {
	t.Helper()
	var e struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	r.decode(t, &e)
	if e.Message == "" {
		t.Errorf("error answer without message: %s", r.body)
	}
	return e.ErrorCode
}

// do sends one request; ct and accept are set when not empty.
func (e *env) do(method, path, ct, accept string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

// want checks an answer's status.
func (e *env) want(r response, status int) response {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r
}

// consume reads n records of topic from the start with franz-go.
func (e *env) consume(topic string, n int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(e.ctx)
		if err := e.ctx.Err(); err != nil {
			e.t.Fatalf("consumed %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

type offsetAnswer struct {
	Offsets []struct {
		Partition *int32  `json:"partition"`
		Offset    *int64  `json:"offset"`
		ErrorCode *int    `json:"error_code"`
		Error     *string `json:"error"`
	} `json:"offsets"`
	KeySchemaID   *int `json:"key_schema_id"`
	ValueSchemaID *int `json:"value_schema_id"`
}

// TestProduceV2 produces binary and JSON records over HTTP and reads them
// with franz-go: partitions, offsets, keys and values as answered.
func TestProduceV2(t *testing.T) {
	e := start(t, Config{})
	e.createTopic("orders", 3)

	r := e.want(e.do("POST", "/topics/orders", binaryType, "", map[string]any{"records": []map[string]any{
		{"key": b64("k1"), "value": b64("v1")},
		{"key": b64("k2"), "value": b64("v2"), "partition": 2},
		{"value": b64("v3"), "partition": 2},
		{"key": nil, "value": nil, "partition": 1},
	}}), 200)
	if r.ct != v2Type {
		t.Errorf("content type %q", r.ct)
	}
	var ans offsetAnswer
	r.decode(t, &ans)
	if len(ans.Offsets) != 4 || ans.KeySchemaID != nil || ans.ValueSchemaID != nil {
		t.Fatalf("answer %s", r.body)
	}
	for i, o := range ans.Offsets {
		if o.ErrorCode != nil || o.Partition == nil || o.Offset == nil {
			t.Fatalf("offset %d: %s", i, r.body)
		}
	}
	if *ans.Offsets[1].Partition != 2 || *ans.Offsets[2].Partition != 2 || *ans.Offsets[2].Offset != *ans.Offsets[1].Offset+1 || *ans.Offsets[3].Partition != 1 {
		t.Errorf("partitions and offsets: %s", r.body)
	}
	// The partition path, JSON data.
	r = e.want(e.do("POST", "/topics/orders/partitions/0", jsonType, "", `{"records":[{"key":{"id":1},"value":{"total": 12.5, "items":["a"]}},{"value":[1,2]}]}`), 200)
	var ans2 offsetAnswer
	r.decode(t, &ans2)
	if len(ans2.Offsets) != 2 || *ans2.Offsets[0].Partition != 0 || *ans2.Offsets[1].Offset != *ans2.Offsets[0].Offset+1 {
		t.Fatalf("answer %s", r.body)
	}

	type at struct {
		p int32
		o int64
	}
	got := map[at]*kgo.Record{}
	for _, rec := range e.consume("orders", 6) {
		got[at{rec.Partition, rec.Offset}] = rec
	}
	check := func(o struct {
		Partition *int32  `json:"partition"`
		Offset    *int64  `json:"offset"`
		ErrorCode *int    `json:"error_code"`
		Error     *string `json:"error"`
	}, key, value []byte) {
		t.Helper()
		rec := got[at{*o.Partition, *o.Offset}]
		if rec == nil {
			t.Fatalf("no record at %d/%d", *o.Partition, *o.Offset)
		}
		if !bytes.Equal(rec.Key, key) || !bytes.Equal(rec.Value, value) || (key == nil) != (rec.Key == nil) || (value == nil) != (rec.Value == nil) {
			t.Errorf("record at %d/%d: key %q value %q, want %q %q", *o.Partition, *o.Offset, rec.Key, rec.Value, key, value)
		}
	}
	check(ans.Offsets[0], []byte("k1"), []byte("v1"))
	check(ans.Offsets[1], []byte("k2"), []byte("v2"))
	check(ans.Offsets[2], nil, []byte("v3"))
	check(ans.Offsets[3], nil, nil)
	check(ans2.Offsets[0], []byte(`{"id":1}`), []byte(`{"total":12.5,"items":["a"]}`))
	check(ans2.Offsets[1], nil, []byte(`[1,2]`))
	// A keyed record goes where Kafka's default partitioner sends it.
	if p := kgo.StickyKeyPartitioner(nil).ForTopic("orders").Partition(&kgo.Record{Key: []byte("k1")}, 3); int32(p) != *ans.Offsets[0].Partition {
		t.Errorf("k1 went to partition %d, Kafka's partitioner says %d", *ans.Offsets[0].Partition, p)
	}
}

// TestTopicsV2 reads topics, partitions, offsets and brokers.
func TestTopicsV2(t *testing.T) {
	e := start(t, Config{})
	e.createTopic("a", 2)
	e.createTopic("b", 1)
	if _, err := e.adm.AlterTopicConfigs(e.ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, "a"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.DefaultProduceTopic("a"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 5 {
		if err := cl.ProduceSync(e.ctx, &kgo.Record{Partition: 1, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var topics []string
	e.want(e.do("GET", "/topics", "", v2Type, nil), 200).decode(t, &topics)
	if strings.Join(topics, ",") != "a,b" {
		t.Errorf("topics %v", topics)
	}
	var topic struct {
		Name       string            `json:"name"`
		Configs    map[string]string `json:"configs"`
		Partitions []v2Partition     `json:"partitions"`
	}
	e.want(e.do("GET", "/topics/a", "", "", nil), 200).decode(t, &topic)
	if topic.Name != "a" || topic.Configs["retention.ms"] != "3600000" || len(topic.Partitions) != 2 ||
		topic.Partitions[1].Partition != 1 || len(topic.Partitions[1].Replicas) != 1 || !topic.Partitions[1].Replicas[0].InSync || !topic.Partitions[1].Replicas[0].Leader {
		t.Errorf("topic %+v", topic)
	}
	var parts []v2Partition
	e.want(e.do("GET", "/topics/a/partitions", "", "", nil), 200).decode(t, &parts)
	if len(parts) != 2 || parts[0].Partition != 0 {
		t.Errorf("partitions %+v", parts)
	}
	var part v2Partition
	e.want(e.do("GET", "/topics/a/partitions/1", "", "", nil), 200).decode(t, &part)
	if part.Partition != 1 || part.Leader != part.Replicas[0].Broker {
		t.Errorf("partition %+v", part)
	}
	var offs map[string]int64
	e.want(e.do("GET", "/topics/a/partitions/1/offsets", "", "", nil), 200).decode(t, &offs)
	if offs["beginning_offset"] != 0 || offs["end_offset"] != 5 {
		t.Errorf("offsets %v", offs)
	}
	var brokers struct{ Brokers []int32 }
	e.want(e.do("GET", "/brokers", "", "", nil), 200).decode(t, &brokers)
	if len(brokers.Brokers) != 1 || brokers.Brokers[0] != 1 {
		t.Errorf("brokers %+v", brokers)
	}
	for path, code := range map[string]int{
		"/topics/nope": 40401, "/topics/nope/partitions": 40401, "/topics/a/partitions/2": 40402,
		"/topics/a/partitions/x/offsets": 40402, "/topics/nope/partitions/0/offsets": 40401,
	} {
		if got := e.want(e.do("GET", path, "", "", nil), 404).errorCode(t); got != code {
			t.Errorf("%s: error_code %d, want %d", path, got, code)
		}
	}
	if got := e.want(e.do("GET", "/topics", "", "text/html", nil), 406).errorCode(t); got != 406 {
		t.Errorf("Accept text/html: error_code %d", got)
	}
}

// TestProduceBadInput: every refused request produces nothing.
func TestProduceBadInput(t *testing.T) {
	e := start(t, Config{MaxRequestBytes: 1 << 20})
	e.createTopic("t", 2)
	good := `{"records":[{"value":"` + b64("x") + `"}]}`
	for _, c := range []struct {
		name, path, ct, body string
		status, code         int
	}{
		{"malformed JSON", "/topics/t", binaryType, `{"records":[{"value":`, 400, 400},
		{"not JSON", "/topics/t", binaryType, `hello`, 400, 400},
		{"wrong shape", "/topics/t", binaryType, `{"records":{"value":"eA=="}}`, 422, 422},
		{"bad base64", "/topics/t", binaryType, `{"records":[{"value":"eA=="},{"value":"not base64!"}]}`, 422, 422},
		{"binary not a string", "/topics/t", binaryType, `{"records":[{"value":5}]}`, 422, 422},
		{"no records", "/topics/t", binaryType, `{"records":[]}`, 422, 422},
		{"plain JSON content type", "/topics/t", "application/json", good, 415, 415},
		{"no content type", "/topics/t", "", good, 415, 415},
		{"v1 content type", "/topics/t", "application/vnd.kafka.binary.v1+json", good, 415, 415},
		{"unknown format", "/topics/t", "application/vnd.kafka.thrift.v2+json", good, 415, 415},
		{"protobuf value without a schema", "/topics/t", "application/vnd.kafka.protobuf.v2+json", good, 422, 42202},
		{"avro value without a schema", "/topics/t", "application/vnd.kafka.avro.v2+json", `{"records":[{"value":{"a":1}}]}`, 422, 42202},
		{"avro key without a schema", "/topics/t", "application/vnd.kafka.avro.v2+json", `{"value_schema":"\"string\"","records":[{"key":"k","value":"v"}]}`, 422, 42201},
		{"unknown topic", "/topics/nope", binaryType, good, 404, 40401},
		{"unknown partition", "/topics/t/partitions/7", binaryType, good, 404, 40402},
		{"negative partition", "/topics/t/partitions/-1", binaryType, good, 404, 40402},
		{"record partition out of range", "/topics/t", binaryType, `{"records":[{"value":"eA=="},{"value":"eA==","partition":2}]}`, 404, 40402},
		{"oversized body", "/topics/t", binaryType, `{"records":[{"value":"` + strings.Repeat("A", 2<<20) + `"}]}`, 413, 413},
	} {
		r := e.do("POST", c.path, c.ct, "", c.body)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d with error_code %d", c.name, r.status, r.body, c.status, c.code)
		}
	}
	r := e.do("POST", "/topics/t", binaryType, "application/xml", good)
	if r.status != 406 || r.errorCode(t) != 406 {
		t.Errorf("Accept application/xml: %d %s", r.status, r.body)
	}
	end, err := e.adm.ListEndOffsets(e.ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	end.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Errorf("partition %d has %d records after refused requests", o.Partition, o.Offset)
		}
	})
}
