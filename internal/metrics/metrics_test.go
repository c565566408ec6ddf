package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/server"
	"github.com/samsa-io/samsa/internal/servertest"
)

// scrape is one answer of /metrics, parsed.
type scrape map[string]*dto.MetricFamily

func getScrape(t *testing.T, addr string) (scrape, []byte) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v\n%s", resp.StatusCode, err, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams, body
}

// value is the value of the series of name with exactly labels (name
// value pairs), -1 when there is none.
func (s scrape) value(name string, labels ...string) float64 {
	f, ok := s[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// at0 is value with a missing series read as 0, for counters not
// counted yet.
func (s scrape) at0(name string, labels ...string) float64 {
	return max(s.value(name, labels...), 0)
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// varintSize is the size of a zigzag varint, as record fields are written.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// batchSize is the size of an uncompressed v2 batch of one record with
// key and value and no headers: the 61-byte batch header, then the
// record's length, attributes, timestamp and offset deltas (0), key,
// value and header count.
func batchSize(key, value []byte) int {
	body := 1 + 1 + 1 + varintSize(int64(len(key))) + len(key) + varintSize(int64(len(value))) + len(value) + 1
	return 61 + varintSize(int64(body)) + body
}

func TestBrokerTopicMetricsMoveByWhatWasProducedAndFetched(t *testing.T) {
	srv := servertest.Start(t, "http.listeners=http://127.0.0.1:0", "group.initial.rebalance.delay.ms=0")
	addr := srv.HTTPAddr()
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("/readyz of a started node: %d %q", code, body)
	}
	if code, body := httpGet(t, "http://"+addr+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "metered"
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	before, _ := getScrape(t, addr)

	// Ten records, each its own produce request and batch.
	const n = 10
	wantBytes := 0
	for i := range n {
		key, value := []byte(fmt.Sprintf("k%d", i)), []byte(strings.Repeat("v", 40+i))
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: key, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		wantBytes += batchSize(key, value)
	}
	// And read them back with a group that commits.
	cons, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.ConsumeTopics(topic), kgo.ConsumerGroup("metered-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()

	after, body := getScrape(t, addr)
	delta := func(name string, labels ...string) float64 {
		return after.at0(name, labels...) - before.at0(name, labels...)
	}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"kafka_server_brokertopicmetrics_messagesin_total", n},
		{"kafka_server_brokertopicmetrics_bytesin_total", float64(wantBytes)},
		{"kafka_server_brokertopicmetrics_bytesout_total", float64(wantBytes)},
		{"kafka_server_brokertopicmetrics_totalproducerequests_total", n},
		{"kafka_server_brokertopicmetrics_failedproducerequests_total", 0},
		{"kafka_server_brokertopicmetrics_failedfetchrequests_total", 0},
	} {
		if d := delta(c.name, "topic", topic); d != c.want {
			t.Errorf("%s{topic=%q} moved by %v, want %v", c.name, topic, d, c.want)
		}
		if d := delta(c.name, "topic", ""); d < c.want {
			t.Errorf("%s{topic=\"\"} (all topics) moved by %v, want at least %v", c.name, d, c.want)
		}
	}
	if d := delta("kafka_server_brokertopicmetrics_totalfetchrequests_total", "topic", topic); d < 1 {
		t.Errorf("totalfetchrequests of %s moved by %v, want at least 1", topic, d)
	}
	if d := delta("kafka_network_requestmetrics_totaltimems", "request", "Produce"); d != n {
		t.Errorf("totaltimems_count{request=Produce} moved by %v, want %d (one produce request a record)", d, n)
	}
	var produces float64
	for _, m := range after["kafka_network_requestmetrics_requests_total"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "request" && l.GetValue() == "Produce" {
				produces += m.Counter.GetValue()
			}
		}
	}
	for _, m := range before["kafka_network_requestmetrics_requests_total"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "request" && l.GetValue() == "Produce" {
				produces -= m.Counter.GetValue()
			}
		}
	}
	if produces != n {
		t.Errorf("requests_total{request=Produce} moved by %v, want %d", produces, n)
	}
	if d := delta("kafka_network_requestmetrics_totaltimems", "request", "Fetch"); d < 1 {
		t.Errorf("totaltimems_count{request=Fetch} moved by %v, want at least 1", d)
	}
	part := []string{"topic", topic, "partition", "0"}
	if v := after.value("kafka_log_log_logendoffset", part...); v != n {
		t.Errorf("kafka_log_log_logendoffset = %v, want %d", v, n)
	}
	if v := after.value("kafka_log_log_size", part...); v != float64(wantBytes) {
		t.Errorf("kafka_log_log_size = %v, want %d (the batches as produced)", v, wantBytes)
	}
	if v := after.value("kafka_log_log_numlogsegments", part...); v != 1 {
		t.Errorf("kafka_log_log_numlogsegments = %v, want 1", v)
	}
	if v := after.value("kafka_server_replicamanager_leadercount"); v < 1 {
		t.Errorf("leadercount = %v, want at least 1", v)
	}
	if v := after.value("kafka_server_replicamanager_underreplicatedpartitions"); v != 0 {
		t.Errorf("underreplicatedpartitions = %v on a single node, want 0", v)
	}
	if v := after.value("kafka_controller_kafkacontroller_activecontrollercount"); v != 1 {
		t.Errorf("activecontrollercount = %v on the only controller, want 1", v)
	}
	if v := after.value("kafka_controller_kafkacontroller_globaltopiccount"); v < 1 {
		t.Errorf("globaltopiccount = %v, want at least 1", v)
	}
	if v := after.value("kafka_server_raftmetrics_current_leader"); v != 1 {
		t.Errorf("kafka_server_raftmetrics_current_leader = %v on the only voter (node 1), want 1", v)
	}
	if v := after.value("kafka_server_brokermetadatametrics_last_applied_record_offset"); v < 1 {
		t.Errorf("last_applied_record_offset = %v, want the offset of the topic's records at least", v)
	}
	group := []string{"consumergroup", "metered-group", "topic", topic, "partition", "0"}
	if v := after.value("kafka_consumergroup_current_offset", group...); v != n {
		t.Errorf("kafka_consumergroup_current_offset = %v, want %d", v, n)
	}
	if v := after.value("kafka_consumergroup_lag", group...); v != 0 {
		t.Errorf("kafka_consumergroup_lag = %v after consuming everything, want 0", v)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := getScrape(t, addr); s.value("kafka_consumergroup_lag", group...) != 3 {
		t.Errorf("kafka_consumergroup_lag = %v after 3 more records, want 3", s.value("kafka_consumergroup_lag", group...))
	}
	for _, fam := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := after[fam]; !ok {
			t.Errorf("no %s in /metrics", fam)
		}
	}
	promtoolCheck(t, body)
}

// promtoolCheck runs `promtool check metrics` on a scrape: it must find
// no problem. Without promtool the check is skipped, unless
// SAMSA_REQUIRE_PROMTOOL=1 (CI) requires it.
func promtoolCheck(t *testing.T, body []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SAMSA_REQUIRE_PROMTOOL") == "1" {
			t.Fatal("promtool not found, and SAMSA_REQUIRE_PROMTOOL=1 (install Debian's prometheus package)")
		}
		t.Log("promtool not found: `promtool check metrics` skipped (Debian's prometheus package has it)")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// captured records the listener addresses a node logs.
type captured struct {
	slog.Handler
	mu    *sync.Mutex
	addrs *[]string
}

func (c captured) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "listener" && strings.HasPrefix(a.Value.String(), "http://") {
			c.mu.Lock()
			*c.addrs = append(*c.addrs, strings.TrimPrefix(a.Value.String(), "http://"))
			c.mu.Unlock()
		}
		return true
	})
	return c.Handler.Handle(ctx, r)
}

func (c captured) WithAttrs(as []slog.Attr) slog.Handler {
	return captured{c.Handler.WithAttrs(as), c.mu, c.addrs}
}

// A voter of three whose peers never come has no quorum leader: /readyz
// says 503 and why, while /healthz says the process is up.
func TestReadyzIs503UntilTheQuorumHasALeader(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.Load("", []string{
		"log.dirs=" + filepath.Join(dir, "data"),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		// Peers 2 and 3 are addresses nobody listens on.
		"controller.quorum.voters=1@127.0.0.1:0,2@127.0.0.1:1,3@127.0.0.1:1",
		"http.listeners=http://127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClusterID = "MkU3OEVBNTcwNTJENDM2Qg"
	var mu sync.Mutex
	var addrs []string
	logger := slog.New(captured{servertest.Logger().Handler(), &mu, &addrs})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		s, err := server.StartContext(ctx, cfg, logger, nil)
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	defer func() {
		cancel()
		<-done
	}()
	var addr string
	for addr == "" {
		select {
		case err := <-done:
			t.Fatalf("start ended before serving /readyz: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		mu.Lock()
		if len(addrs) > 0 {
			addr = addrs[0]
		}
		mu.Unlock()
	}
	if code, body := httpGet(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while starting: %d %q", code, body)
	}
	// Every answer is 503 with a reason; once the raft node is open the
	// reason is the missing leader, and stays so.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGet(t, "http://"+addr+"/readyz")
		if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: ") {
			t.Fatalf("/readyz without a quorum: %d %q, want 503 and a reason", code, body)
		}
		if body == "not ready: the metadata quorum has no leader\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still says %q", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
