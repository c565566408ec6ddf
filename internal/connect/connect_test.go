package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// rest calls the worker's REST API and decodes the JSON answer.
type rest struct {
	t   *testing.T
	url string
}

func (r rest) call(method, path string, body any) (int, any) {
	r.t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.url+path, in)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			r.t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

// must calls and checks the status code.
func (r rest) must(want int, method, path string, body any) any {
	r.t.Helper()
	code, out := r.call(method, path, body)
	if code != want {
		r.t.Fatalf("%s %s: status %d (want %d): %v", method, path, code, want, out)
	}
	return out
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r rest) waitState(conn string, want string) map[string]any {
	r.t.Helper()
	var st map[string]any
	waitFor(r.t, conn+" "+want, func() bool {
		code, out := r.call("GET", "/connectors/"+conn+"/status", nil)
		st, _ = out.(map[string]any)
		if code != 200 || st["connector"].(map[string]any)["state"] != want {
			return false
		}
		tasks := st["tasks"].([]any)
		for _, tk := range tasks {
			if tk.(map[string]any)["state"] != want {
				return false
			}
		}
		return len(tasks) > 0 || want == stateStopped
	})
	return st
}

func startWorker(t *testing.T, bootstrap string, distributed bool, extra map[string]string, connectors ...map[string]string) *Worker {
	t.Helper()
	props := map[string]string{
		"bootstrap.servers":                 bootstrap,
		"listeners":                         "http://127.0.0.1:0",
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms":          "200",
		"group.id":                          "connect-cluster",
		"config.storage.topic":              "connect-configs",
		"offset.storage.topic":              "connect-offsets",
		"status.storage.topic":              "connect-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, err := ParseWorkerConfig(props, distributed)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := Start(ctx, cfg, Options{Logger: servertest.Logger(), Distributed: distributed, Connectors: connectors})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func writeLines(t *testing.T, path string, from, to int) []string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for i := from; i < to; i++ {
		l := fmt.Sprintf("line %d", i)
		lines = append(lines, l)
		fmt.Fprintln(f, l)
	}
	return lines
}

func fileLines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func waitFile(t *testing.T, path string, want []string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d lines in %s", len(want), path), func() bool { return len(fileLines(path)) >= len(want) })
	if got := fileLines(path); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s holds %d lines, want exactly the %d input lines in order:\n%q", path, len(got), len(want), got)
	}
}

// consume reads n records of topic from its start.
func consume(t *testing.T, bootstrap, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// TestDistributedFileStreamPipeline drives a distributed worker over its
// REST API: a FileStream source into a topic, a sink back into a file,
// pause/resume, restart, offsets, stop, delete, and the records the worker
// left in the config and offset topics.
func TestDistributedFileStreamPipeline(t *testing.T) {
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	w := startWorker(t, bootstrap, true, nil)
	r := rest{t, w.URL()}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	lines := writeLines(t, in, 0, 50)

	root := r.must(200, "GET", "/", nil).(map[string]any)
	if root["kafka_cluster_id"] == "" || root["version"] == nil {
		t.Fatalf("GET /: %v", root)
	}
	src := map[string]any{"name": "src", "config": map[string]string{
		"connector.class": "FileStreamSource", "file": in, "topic": "lines", "tasks.max": "1"}}
	info := r.must(201, "POST", "/connectors", src).(map[string]any)
	if info["name"] != "src" || info["type"] != "source" || info["config"].(map[string]any)["file"] != in {
		t.Fatalf("created: %v", info)
	}
	if code, dup := r.call("POST", "/connectors", src); code != 409 || dup.(map[string]any)["message"] != "Connector src already exists" {
		t.Fatalf("second create: %d %v", code, dup)
	}
	recs := consume(t, bootstrap, "lines", 50)
	for i, rec := range recs {
		if string(rec.Value) != lines[i] || rec.Key != nil {
			t.Fatalf("record %d: key %q value %q, want %q", i, rec.Key, rec.Value, lines[i])
		}
	}

	r.must(201, "PUT", "/connectors/snk/config", map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": out, "topics": "lines"})
	waitFile(t, out, lines)
	st := r.waitState("src", stateRunning)
	if st["type"] != "source" || st["tasks"].([]any)[0].(map[string]any)["worker_id"] == "" {
		t.Fatalf("status: %v", st)
	}
	names := r.must(200, "GET", "/connectors", nil).([]any)
	if len(names) != 2 || names[0] != "snk" || names[1] != "src" {
		t.Fatalf("GET /connectors: %v", names)
	}
	expanded := r.must(200, "GET", "/connectors?expand=status&expand=info", nil).(map[string]any)
	if expanded["snk"].(map[string]any)["info"].(map[string]any)["type"] != "sink" {
		t.Fatalf("expand: %v", expanded)
	}

	r.must(202, "PUT", "/connectors/src/pause", nil)
	r.waitState("src", statePaused)
	lines = append(lines, writeLines(t, in, 50, 60)...)
	r.must(202, "PUT", "/connectors/src/resume", nil)
	r.waitState("src", stateRunning)
	waitFile(t, out, lines)

	size := func() float64 { fi, _ := os.Stat(in); return float64(fi.Size()) }
	waitFor(t, "the source offset at the end of the file", func() bool {
		o := r.must(200, "GET", "/connectors/src/offsets", nil).(map[string]any)["offsets"].([]any)
		return len(o) == 1 && o[0].(map[string]any)["partition"].(map[string]any)["filename"] == in &&
			o[0].(map[string]any)["offset"].(map[string]any)["position"] == size()
	})
	restarted := r.must(202, "POST", "/connectors/src/restart?includeTasks=true", nil).(map[string]any)
	if restarted["name"] != "src" {
		t.Fatalf("restart: %v", restarted)
	}
	r.waitState("src", stateRunning)
	r.must(204, "POST", "/connectors/src/tasks/0/restart", nil)
	lines = append(lines, writeLines(t, in, 60, 70)...)
	waitFile(t, out, lines) // exactly: the restarted task resumed at the stored offset

	// Offsets change only when stopped; reset, then the source reads the file again.
	if code, e := r.call("DELETE", "/connectors/src/offsets", nil); code != 400 || !strings.Contains(e.(map[string]any)["message"].(string), "STOPPED") {
		t.Fatalf("reset while running: %d %v", code, e)
	}
	r.must(202, "PUT", "/connectors/src/stop", nil)
	waitFor(t, "src STOPPED", func() bool {
		st := r.must(200, "GET", "/connectors/src/status", nil).(map[string]any)
		return st["connector"].(map[string]any)["state"] == stateStopped && len(st["tasks"].([]any)) == 0
	})
	msg := r.must(200, "DELETE", "/connectors/src/offsets", nil).(map[string]any)
	if msg["message"] != "The offsets for this connector have been reset successfully" {
		t.Fatalf("reset: %v", msg)
	}
	if o := r.must(200, "GET", "/connectors/src/offsets", nil).(map[string]any)["offsets"].([]any); len(o) != 0 {
		t.Fatalf("offsets after reset: %v", o)
	}
	sinkOffsets := r.must(200, "GET", "/connectors/snk/offsets", nil).(map[string]any)["offsets"].([]any)
	if len(sinkOffsets) != 1 || sinkOffsets[0].(map[string]any)["offset"].(map[string]any)["kafka_offset"] != float64(70) {
		t.Fatalf("sink offsets: %v", sinkOffsets)
	}

	r.must(204, "DELETE", "/connectors/src", nil)
	code, e := r.call("GET", "/connectors/src", nil)
	if code != 404 || e.(map[string]any)["message"] != "Connector src not found" || e.(map[string]any)["error_code"] != float64(404) {
		t.Fatalf("deleted connector: %d %v", code, e)
	}

	// The config and offset topics hold Kafka's keys and JSON.
	byKey := map[string]string{}
	for _, rec := range consume(t, bootstrap, "connect-configs", 1) {
		byKey[string(rec.Key)] = string(rec.Value)
	}
	waitFor(t, "config records", func() bool {
		for _, rec := range consume(t, bootstrap, "connect-configs", 8) {
			byKey[string(rec.Key)] = string(rec.Value)
		}
		return byKey["commit-snk"] != ""
	})
	var conf struct {
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal([]byte(byKey["connector-snk"]), &conf); err != nil || conf.Properties["topics"] != "lines" || conf.Properties["name"] != "snk" {
		t.Fatalf("connector-snk: %q", byKey["connector-snk"])
	}
	if byKey["commit-snk"] != `{"tasks":1}` || !strings.Contains(byKey["task-snk-0"], `"properties":{`) {
		t.Fatalf("task records: %q %q", byKey["commit-snk"], byKey["task-snk-0"])
	}
	wantKey := fmt.Sprintf(`["src",{"filename":%q}]`, in)
	found := false
	for _, rec := range consume(t, bootstrap, "connect-offsets", 1) {
		found = found || string(rec.Key) == wantKey
	}
	if !found {
		t.Fatalf("no offset record with key %s", wantKey)
	}
}
