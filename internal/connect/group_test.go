package connect

import (
	"path/filepath"
	"testing"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestTwoWorkersFailover runs two distributed workers in one group: only
// the leader runs the pipeline, the other reports its statuses from the
// status topic; when the leader stops, the other takes the pipeline over
// and the sink file ends with every line exactly once.
func TestTwoWorkersFailover(t *testing.T) {
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	w1 := startWorker(t, bootstrap, true, nil)
	w2 := startWorker(t, bootstrap, true, nil)
	r1, r2 := rest{t, w1.URL()}, rest{t, w2.URL()}
	// Let both join first: a rebalance stops and restarts everything (the
	// eager protocol), which this test does not look at.
	waitFor(t, "both workers in one generation", func() bool {
		g1, g2 := w1.group.joined.Load(), w2.group.joined.Load()
		return g1 > 0 && g1 == g2 && w1.herder.isActive() != w2.herder.isActive()
	})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	lines := writeLines(t, in, 0, 30)
	r2.must(201, "PUT", "/connectors/src/config", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "fo"})
	r1.must(201, "PUT", "/connectors/snk/config", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "fo"})
	waitFile(t, out, lines)

	// Both workers report the same worker running everything.
	st1, st2 := r1.waitState("src", stateRunning), r2.waitState("src", stateRunning)
	runner := st1["tasks"].([]any)[0].(map[string]any)["worker_id"]
	if st2["tasks"].([]any)[0].(map[string]any)["worker_id"] != runner || st1["connector"].(map[string]any)["worker_id"] != runner {
		t.Fatalf("statuses disagree: %v / %v", st1, st2)
	}
	leader, survivor, rs := w1, w2, r2
	if runner != w1.herder.workerID {
		leader, survivor, rs = w2, w1, r1
	}
	if survivor.herder.isActive() {
		t.Fatalf("the follower runs connectors")
	}
	leader.Close()
	lines = append(lines, writeLines(t, in, 30, 40)...)
	waitFile(t, out, lines)
	waitFor(t, "the survivor running src", func() bool {
		st := rs.waitState("src", stateRunning)
		return st["tasks"].([]any)[0].(map[string]any)["worker_id"] == survivor.herder.workerID
	})
}
