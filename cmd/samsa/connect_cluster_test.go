package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// connectProc is a `samsa connect` worker child process.
type connectProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	done   chan error
}

var connectListenRE = regexp.MustCompile(`REST API listening.* listener=(http://\S+)`)

func startConnectProc(t *testing.T, dir, name string, props map[string]string) *connectProc {
	t.Helper()
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	path := filepath.Join(dir, name+".properties")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "connect", "--config", path)
	cmd.Env = append(os.Environ(), "SAMSA_RUN_MAIN=1")
	p := &connectProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait(); pw.Close() }()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.stderr.Write([]byte(sc.Text() + "\n"))
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("worker %s log:\n%s", name, p.stderr.String())
		}
	})
	p.url = waitFor(t, connectListenRE, p.stderr.String)
	return p
}

// connectREST calls a worker's REST API; status and decoded JSON.
func connectREST(t *testing.T, method, url string, body any) (int, any) {
	t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, in)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out any
	json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// taskWorkers is, for every connector's status, the worker of the
// connector and of each task when all are RUNNING; nil otherwise.
func taskWorkers(t *testing.T, url string, connectors []string) map[string]string {
	out := map[string]string{}
	for _, c := range connectors {
		code, body := connectREST(t, "GET", url+"/connectors/"+c+"/status", nil)
		st, _ := body.(map[string]any)
		if code != 200 || st == nil {
			return nil
		}
		conn := st["connector"].(map[string]any)
		tasks, _ := st["tasks"].([]any)
		if conn["state"] != "RUNNING" || len(tasks) == 0 {
			return nil
		}
		out[c] = conn["worker_id"].(string)
		for _, tk := range tasks {
			tm := tk.(map[string]any)
			if tm["state"] != "RUNNING" {
				return nil
			}
			out[fmt.Sprintf("%s-%v", c, tm["id"])] = tm["worker_id"].(string)
		}
	}
	return out
}

func appendLines(t *testing.T, path, prefix string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := from; i < to; i++ {
		fmt.Fprintf(w, "%s %d\n", prefix, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// checkAtLeastOnce checks a sink file against the n lines "prefix 0" ..
// "prefix n-1": every line is there, first occurrences are in input
// order, and every other line is a repeat of one delivered before (at
// least once redelivers a suffix it already wrote). It returns how many
// duplicates the file holds.
func checkAtLeastOnce(t *testing.T, path, prefix string, n int) int {
	t.Helper()
	got := readLines(path)
	seen := map[string]bool{}
	next, dups := 0, 0
	for i, l := range got {
		if seen[l] {
			dups++
			continue
		}
		if want := fmt.Sprintf("%s %d", prefix, next); l != want {
			t.Fatalf("%s line %d: %q, want %q (first deliveries out of order, or a line not written)", path, i+1, l, want)
		}
		seen[l] = true
		next++
	}
	if next != n {
		t.Fatalf("%s holds %d distinct lines of %d", path, next, n)
	}
	return dups
}

// TestConnectThreeWorkersKill is issue 18's "Done when" test: three
// `samsa connect` worker processes in one group run two FileStream source
// → topic → FileStream sink pipelines, their connectors and tasks spread
// over all three. One worker (not the first, which leads the group) that
// runs a task is killed with SIGKILL mid-run; after the session timeout
// and scheduled.rebalance.max.delay.ms its work moves to the two others,
// and both sink files end with every input line, first deliveries in
// order, duplicates only as at-least-once redelivery.
func TestConnectThreeWorkersKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three worker processes")
	}
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	dir := t.TempDir()

	// One-partition topics keep each pipeline's order end to end.
	adm, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(adm).CreateTopics(ctx, 1, 1, nil, "lines-a", "lines-b"); err != nil {
		t.Fatal(err)
	}

	props := map[string]string{
		"bootstrap.servers":                 bootstrap,
		"listeners":                         "http://127.0.0.1:0",
		"group.id":                          "connect-kill",
		"config.storage.topic":              "kill-configs",
		"offset.storage.topic":              "kill-offsets",
		"status.storage.topic":              "kill-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.storage.partitions":         "3",
		"status.storage.partitions":         "3",
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms":          "300",
		"session.timeout.ms":                "6000",
		"heartbeat.interval.ms":             "1000",
		"scheduled.rebalance.max.delay.ms":  "3000",
		"consumer.session.timeout.ms":       "6000",
		"consumer.heartbeat.interval.ms":    "1000",
	}
	var workers []*connectProc
	for i := range 3 {
		w := startConnectProc(t, dir, fmt.Sprintf("w%d", i+1), props)
		workers = append(workers, w)
		if i == 0 {
			// The first member to join leads; wait for it before the others.
			eventually(t, "w1 in the group", func() bool { return strings.Contains(w.stderr.String(), "joined the group") })
		}
	}
	url := workers[0].url

	const n = 4000
	connectors := []string{"src-a", "snk-a", "src-b", "snk-b"}
	in := map[string]string{"a": filepath.Join(dir, "in-a.txt"), "b": filepath.Join(dir, "in-b.txt")}
	out := map[string]string{"a": filepath.Join(dir, "out-a.txt"), "b": filepath.Join(dir, "out-b.txt")}
	for _, p := range []string{"a", "b"} {
		appendLines(t, in[p], "line-"+p, 0, 500)
		// Create through different workers: followers forward to the leader.
		for i, c := range []struct {
			name   string
			config map[string]string
		}{
			{"src-" + p, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": in[p], "topic": "lines-" + p, "batch.size": "100"}},
			{"snk-" + p, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": out[p], "topics": "lines-" + p}},
		} {
			w := workers[(i+1)%3]
			if code, body := connectREST(t, "POST", w.url+"/connectors", map[string]any{"name": c.name, "config": c.config}); code != 201 {
				t.Fatalf("POST /connectors %s on %s: %d %v", c.name, w.url, code, body)
			}
		}
	}

	// The 8 units (4 connectors, 4 tasks) spread over all three workers.
	var owners map[string]string
	eventually(t, "every connector and task RUNNING, tasks on all three workers", func() bool {
		owners = taskWorkers(t, url, connectors)
		byWorker := map[string]int{}
		for unit, w := range owners {
			if strings.HasSuffix(unit, "-0") { // a task; connectors end in -a, -b
				byWorker[w]++
			}
		}
		return owners != nil && len(byWorker) == 3
	})
	t.Logf("owners before the kill: %v", owners)

	// The rest of the lines arrive while the worker dies: 20 lines per
	// file every 20 ms.
	written := make(chan struct{})
	go func() {
		defer close(written)
		for from := 500; from < n; from += 20 {
			for _, p := range []string{"a", "b"} {
				appendLines(t, in[p], "line-"+p, from, from+20)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { <-written }()
	eventually(t, "2000 lines in both sink files", func() bool {
		return len(readLines(out["a"])) >= 2000 && len(readLines(out["b"])) >= 2000
	})
	var victim *connectProc
	for _, w := range workers[1:] {
		id := strings.TrimPrefix(w.url, "http://")
		for unit, o := range owners {
			if o == id && strings.HasSuffix(unit, "-0") && victim == nil {
				victim = w
			}
		}
	}
	if victim == nil {
		t.Fatalf("neither w2 nor w3 runs a task: %v", owners)
	}
	victimID := strings.TrimPrefix(victim.url, "http://")
	if err := victim.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-victim.done
	t.Logf("killed %s with %d and %d lines in the sink files", victimID, len(readLines(out["a"])), len(readLines(out["b"])))

	// The victim's units move to the survivors.
	eventually(t, "the killed worker's connectors and tasks RUNNING elsewhere", func() bool {
		owners = taskWorkers(t, url, connectors)
		if owners == nil {
			return false
		}
		for _, o := range owners {
			if o == victimID {
				return false
			}
		}
		return true
	})
	t.Logf("owners after the kill of %s: %v", victimID, owners)

	for _, p := range []string{"a", "b"} {
		eventually(t, fmt.Sprintf("%d distinct lines in %s", n, out[p]), func() bool {
			distinct := map[string]bool{}
			for _, l := range readLines(out[p]) {
				distinct[l] = true
			}
			return len(distinct) >= n
		})
		dups := checkAtLeastOnce(t, out[p], "line-"+p, n)
		t.Logf("%s: %d lines, %d duplicates", out[p], n, dups)
	}
}
