package connect

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestStandaloneErrorsValidateAndResume runs a standalone worker: config
// validation errors per field, a poison record failing a strict sink and
// going to the dead letter queue of a tolerant one, and a source that
// resumes from its offsets file after the worker restarts.
func TestStandaloneErrorsValidateAndResume(t *testing.T) {
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	lines := writeLines(t, in, 0, 20)
	worker := map[string]string{"offset.storage.file.filename": filepath.Join(dir, "offsets.json")}
	src := map[string]string{"name": "src", "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"file": in, "topic": "standalone-lines"}
	w := startWorker(t, bootstrap, false, worker, src)
	r := rest{t, w.URL()}

	// Validation answers per field, as Kafka's validate endpoint.
	v := r.must(200, "PUT", "/connector-plugins/FileStreamSinkConnector/config/validate", map[string]string{
		"connector.class": "FileStreamSink", "tasks.max": "0", "transforms": "x", "transforms.x.type": "Nope"}).(map[string]any)
	errs := map[string]string{}
	for _, c := range v["configs"].([]any) {
		val := c.(map[string]any)["value"].(map[string]any)
		if e := val["errors"].([]any); len(e) > 0 {
			errs[val["name"].(string)] = e[0].(string)
		}
	}
	want := map[string]string{
		"name":              `Missing required configuration "name" which has no default value.`,
		"tasks.max":         "Invalid value 0 for configuration tasks.max: Value must be at least 1",
		"topics":            "Must configure one of topics or topics.regex",
		"topics.regex":      "Must configure one of topics or topics.regex",
		"transforms.x.type": "Invalid value Nope for configuration type: Class Nope could not be found.",
	}
	if v["error_count"] != float64(len(want)) || len(errs) != len(want) || v["name"] != "org.apache.kafka.connect.file.FileStreamSinkConnector" {
		t.Fatalf("validate: %d errors %v (want %v)", int(v["error_count"].(float64)), errs, want)
	}
	for k, e := range want {
		if errs[k] != e {
			t.Errorf("validate %s: %q, want %q", k, errs[k], e)
		}
	}
	code, e := r.call("POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "FileStreamSink", "topics": "x", "tasks.max": "-1"}})
	if msg, _ := e.(map[string]any)["message"].(string); code != 400 || !strings.HasPrefix(msg, "Connector configuration is invalid and contains the following 1 error(s):\ntasks.max: ") {
		t.Fatalf("invalid create: %d %v", code, e)
	}
	// Kafka 4.4's ConnectDistributed answers an unknown class with 400.
	code, e = r.call("POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "com.example.Missing"}})
	if code != 400 || !strings.Contains(e.(map[string]any)["message"].(string), "Failed to find any class that implements Connector") {
		t.Fatalf("unknown class: %d %v", code, e)
	}

	// A poison record: the strict sink fails with a trace, the tolerant one
	// writes the good records and sends the bad one to its DLQ.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, val := range []string{`{"a":1}`, `not json`, `{"a":2,"b":[true]}`} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "poison", Value: []byte(val)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	jsonSink := func(name string, extra map[string]string) map[string]string {
		c := map[string]string{"connector.class": "FileStreamSink", "topics": "poison", "file": filepath.Join(dir, name+".txt"),
			"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	r.must(201, "PUT", "/connectors/strict/config", jsonSink("strict", nil))
	waitFor(t, "strict task FAILED", func() bool {
		code, out := r.call("GET", "/connectors/strict/tasks/0/status", nil)
		return code == 200 && out.(map[string]any)["state"] == stateFailed
	})
	ts := r.must(200, "GET", "/connectors/strict/tasks/0/status", nil).(map[string]any)
	if tr, _ := ts["trace"].(string); !strings.Contains(tr, "Tolerance exceeded") || !strings.Contains(tr, "poison-0 at offset 1") {
		t.Fatalf("failed task's trace: %v", ts)
	}
	r.must(201, "PUT", "/connectors/tolerant/config", jsonSink("tolerant", map[string]string{
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "poison-dlq",
		"errors.deadletterqueue.context.headers.enable": "true"}))
	waitFile(t, filepath.Join(dir, "tolerant.txt"), []string{"{a=1}", "{a=2, b=[true]}"})
	dlq := consume(t, bootstrap, "poison-dlq", 1)
	headers := map[string]string{}
	for _, h := range dlq[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(dlq[0].Value) != "not json" || headers["__connect.errors.topic"] != "poison" || headers["__connect.errors.offset"] != "1" ||
		headers["__connect.errors.stage"] != "VALUE_CONVERTER" || headers["__connect.errors.connector.name"] != "tolerant" {
		t.Fatalf("DLQ record %q headers %v", dlq[0].Value, headers)
	}
	if code, _ := r.call("GET", "/health", nil); code != 200 {
		t.Fatalf("health after a failed task: %d", code)
	}

	// Restarting the failed task with onlyFailed brings it back to FAILED on
	// the same record, leaving the running connector alone.
	out := r.must(202, "POST", "/connectors/strict/restart?includeTasks=true&onlyFailed=true", nil).(map[string]any)
	if out["connector"].(map[string]any)["state"] != stateRunning {
		t.Fatalf("restart onlyFailed: %v", out)
	}

	// The standalone source resumes from its offsets file.
	consume(t, bootstrap, "standalone-lines", 20)
	w.Close()
	lines = append(lines, writeLines(t, in, 20, 30)...)
	startWorker(t, bootstrap, false, worker, src)
	recs := consume(t, bootstrap, "standalone-lines", 30)
	var got []string
	for _, rec := range recs {
		got = append(got, string(rec.Value))
	}
	if strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("after the restart the topic holds %d records, want the %d lines once each:\n%q", len(got), len(lines), got)
	}
}
