package connect

import (
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/servertest"
)

func units(us ...unit) assignment {
	a := assignment{}
	for _, u := range us {
		a[u] = true
	}
	return a
}

// TestProtocolRoundTrip encodes V1 metadata and assignments and reads
// them back; V0 metadata (an eager Java worker's) decodes without an
// allocation.
func TestProtocolRoundTrip(t *testing.T) {
	held := units(unit{"a", -1}, unit{"a", 0}, unit{"b", 2})
	m, err := decodeMetadata(encodeMetadata(workerMeta{url: "http://w1:8083", configOffset: 42, held: held}))
	if err != nil || m.url != "http://w1:8083" || m.configOffset != 42 || !maps.Equal(m.held, held) {
		t.Fatalf("metadata round trip: %+v, %v", m, err)
	}
	m, err = decodeMetadata(encodeMetadata(workerMeta{url: "u", configOffset: -1}))
	if err != nil || m.held != nil || m.configOffset != -1 {
		t.Fatalf("metadata without allocation: %+v, %v", m, err)
	}
	v0 := putString([]byte{0, 0}, "http://java:8083")
	v0 = append(v0, 0, 0, 0, 0, 0, 0, 0, 7)
	if m, err = decodeMetadata(v0); err != nil || m.url != "http://java:8083" || m.configOffset != 7 || m.held != nil {
		t.Fatalf("V0 metadata: %+v, %v", m, err)
	}
	a := connectAssignment{leader: "m1", leaderURL: "http://w1:8083", configOffset: 9,
		assigned: units(unit{"a", 1}), revoked: units(unit{"b", -1}), delay: 1500}
	got, err := decodeAssignment(a.encode())
	if err != nil || got.leader != "m1" || got.leaderURL != a.leaderURL || got.configOffset != 9 || got.delay != 1500 ||
		!maps.Equal(got.assigned, a.assigned) || !maps.Equal(got.revoked, a.revoked) {
		t.Fatalf("assignment round trip: %+v, %v", got, err)
	}
	if _, err := decodeAssignment(a.encode()[:10]); err == nil {
		t.Fatalf("a truncated assignment decoded")
	}
}

func count(a assignment, connectors bool) int {
	n := 0
	for u := range a {
		if (u.task == connectorTaskID) == connectors {
			n++
		}
	}
	return n
}

// TestAssignorRounds walks the leader's assignor through a group's life:
// spreading new work, balancing for a worker that joins (revoke first,
// assign in the next round), holding a departed worker's units for the
// delay and then spreading them.
func TestAssignorRounds(t *testing.T) {
	now := time.Unix(1000, 0)
	as := assignor{maxDelay: time.Minute, now: func() time.Time { return now }}
	configured := units(unit{"a", -1}, unit{"a", 0}, unit{"a", 1}, unit{"b", -1}, unit{"b", 0}, unit{"b", 1})
	held := map[string]assignment{"m1": {}, "m2": {}}
	round := func(ids ...string) (map[string]*plan, time.Duration) {
		var ms []member
		for _, id := range ids {
			ms = append(ms, member{id: id, meta: workerMeta{url: id, held: held[id]}})
		}
		plans, delay := as.assign(ms, configured)
		for id, p := range plans {
			for u := range p.assigned {
				if p.revoked[u] {
					t.Fatalf("%s: %v assigned and revoked in one round", id, u)
				}
				for other, h := range held {
					if other != id && h[u] {
						t.Fatalf("%v assigned to %s while %s holds it", u, id, other)
					}
				}
			}
			h := maps.Clone(held[id])
			if h == nil {
				h = assignment{}
			}
			maps.DeleteFunc(h, func(u unit, _ bool) bool { return p.revoked[u] })
			maps.Copy(h, p.assigned)
			held[id] = h
		}
		return plans, delay
	}
	if _, delay := round("m1", "m2"); delay != 0 {
		t.Fatalf("delay %v with nothing lost", delay)
	}
	for _, id := range []string{"m1", "m2"} {
		if count(held[id], true) != 1 || count(held[id], false) != 2 {
			t.Fatalf("two workers, 2 connectors and 4 tasks: %s holds %v", id, held[id])
		}
	}

	// m3 joins: one round revokes a task from one of them, the next
	// gives it to m3.
	held["m3"] = assignment{}
	plans, _ := round("m1", "m2", "m3")
	if len(plans["m3"].assigned) != 0 || len(plans["m1"].revoked)+len(plans["m2"].revoked) == 0 {
		t.Fatalf("join round: m3 %v, m1 revoked %v, m2 revoked %v", plans["m3"].assigned, plans["m1"].revoked, plans["m2"].revoked)
	}
	round("m1", "m2", "m3")
	// Connectors and tasks are balanced each on their own, as Kafka.
	for _, id := range []string{"m1", "m2", "m3"} {
		if c, n := count(held[id], true), count(held[id], false); c > 1 || n < 1 || n > 2 {
			t.Fatalf("after balancing %s holds %v", id, held[id])
		}
	}

	// m2 dies: its units wait for the delay, then go to m1 and m3.
	lost := held["m2"]
	delete(held, "m2")
	now = now.Add(time.Second)
	if _, delay := round("m1", "m3"); delay != time.Minute {
		t.Fatalf("lost units: delay %v, want the full minute", delay)
	}
	now = now.Add(40 * time.Second)
	plans, delay := round("m1", "m3")
	if delay != 20*time.Second || len(plans["m1"].assigned)+len(plans["m3"].assigned) != 0 {
		t.Fatalf("within the delay: %v, assigned %v %v", delay, plans["m1"].assigned, plans["m3"].assigned)
	}
	now = now.Add(20 * time.Second)
	if _, delay := round("m1", "m3"); delay != 0 {
		t.Fatalf("after the delay: %v", delay)
	}
	for u := range lost {
		if !held["m1"][u] && !held["m3"][u] {
			t.Fatalf("lost %v not reassigned: m1 %v m3 %v", u, held["m1"], held["m3"])
		}
	}
	if len(held["m1"])+len(held["m3"]) != len(configured) {
		t.Fatalf("m1 %v + m3 %v != every unit", held["m1"], held["m3"])
	}

	// A deleted connector is revoked from whoever runs it.
	delete(configured, unit{"a", -1})
	delete(configured, unit{"a", 0})
	delete(configured, unit{"a", 1})
	plans, _ = round("m1", "m3")
	if len(plans["m1"].revoked)+len(plans["m3"].revoked) != 3 {
		t.Fatalf("deleting a: revoked %v and %v", plans["m1"].revoked, plans["m3"].revoked)
	}
}

// TestTwoWorkersShareWork runs two distributed workers in one group: the
// connectors and tasks are spread over both, writes to the follower reach
// the leader (forwarded), forward=false on the follower is refused with
// 409, and when one worker stops the other runs everything and the sink
// file ends with every line exactly once.
func TestTwoWorkersShareWork(t *testing.T) {
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	extra := map[string]string{"heartbeat.interval.ms": "500", "scheduled.rebalance.max.delay.ms": "1000"}
	w1 := startWorker(t, bootstrap, true, extra)
	w2 := startWorker(t, bootstrap, true, extra)
	waitFor(t, "both workers in one generation with a leader", func() bool {
		g1, g2 := w1.group.joined.Load(), w2.group.joined.Load()
		_, l1 := w1.group.leaderURL()
		_, l2 := w2.group.leaderURL()
		return g1 > 0 && g1 == g2 && l1 != l2
	})
	leader, follower := w1, w2
	if _, l := w2.group.leaderURL(); l {
		leader, follower = w2, w1
	}
	rl, rf := rest{t, leader.URL()}, rest{t, follower.URL()}
	if code, body := rf.call("PUT", "/connectors/x/config?forward=false", map[string]string{"connector.class": "FileStreamSink", "file": "/dev/null", "topics": "x"}); code != 409 {
		t.Fatalf("follower with forward=false: %d %v", code, body)
	}
	rl.must(404, "GET", "/connectors/x", nil)

	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	lines := writeLines(t, in, 0, 30)
	rf.must(201, "PUT", "/connectors/src/config", map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "fo"})
	rf.must(201, "POST", "/connectors", map[string]any{"name": "snk", "config": map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "fo"}})
	waitFile(t, out, lines)

	// Four units over two workers: each runs two, and both report the
	// same owners.
	workerOf := map[string]string{}
	waitFor(t, "the work spread over both workers", func() bool {
		for _, c := range []string{"src", "snk"} {
			st := rl.waitState(c, stateRunning)
			workerOf[c] = st["connector"].(map[string]any)["worker_id"].(string)
			workerOf[c+"-0"] = st["tasks"].([]any)[0].(map[string]any)["worker_id"].(string)
		}
		n := map[string]int{}
		for _, w := range workerOf {
			n[w]++
		}
		return n[w1.herder.workerID] == 2 && n[w2.herder.workerID] == 2
	})
	st := rf.waitState("src", stateRunning)
	if st["tasks"].([]any)[0].(map[string]any)["worker_id"] != workerOf["src-0"] {
		t.Fatalf("the follower reports %v, the leader %v", st, workerOf)
	}

	// Topic tracking (KIP-558): each worker reports the topics either
	// connector used, whichever worker ran it; a reset forgets them.
	for _, r := range []rest{rl, rf} {
		for _, c := range []string{"src", "snk"} {
			waitFor(t, c+" using fo", func() bool {
				got := r.must(200, "GET", "/connectors/"+c+"/topics", nil).(map[string]any)
				ts, _ := got[c].(map[string]any)["topics"].([]any)
				return len(ts) == 1 && ts[0] == "fo"
			})
		}
	}
	rf.must(202, "PUT", "/connectors/snk/topics/reset", nil)
	waitFor(t, "snk's topics reset on the leader", func() bool {
		got := rl.must(200, "GET", "/connectors/snk/topics", nil).(map[string]any)
		return len(got["snk"].(map[string]any)["topics"].([]any)) == 0
	})

	// Log levels: worker scope changes one worker, cluster scope (a config
	// record) every worker.
	if got := rl.must(200, "PUT", "/admin/loggers/org.apache.kafka.connect", map[string]string{"level": "debug"}).([]any); len(got) != 1 || got[0] != "org.apache.kafka.connect" {
		t.Fatalf("worker-scope PUT: %v", got)
	}
	lv := rl.must(200, "GET", "/admin/loggers/org.apache.kafka.connect", nil).(map[string]any)
	if lv["level"] != "DEBUG" || lv["last_modified"] == nil {
		t.Fatalf("GET the logger set: %v", lv)
	}
	if code, body := rf.call("GET", "/admin/loggers/org.apache.kafka.connect", nil); code != 404 || body.(map[string]any)["message"] != "Logger org.apache.kafka.connect not found." {
		t.Fatalf("the other worker: %d %v", code, body)
	}
	if code, body := rl.call("PUT", "/admin/loggers/root", map[string]string{"level": "LOUD"}); code != 404 || body.(map[string]any)["message"] != "invalid log level 'LOUD'." {
		t.Fatalf("invalid level: %d %v", code, body)
	}
	if code, _ := rl.call("PUT", "/admin/loggers/root", map[string]string{}); code != 400 {
		t.Fatalf("no level: %d", code)
	}
	rf.must(204, "PUT", "/admin/loggers/io.samsa?scope=cluster", map[string]string{"level": "WARN"})
	for _, r := range []rest{rl, rf} {
		waitFor(t, "the cluster-scope level on "+r.url, func() bool {
			all := r.must(200, "GET", "/admin/loggers", nil).(map[string]any)
			lv, _ := all["io.samsa"].(map[string]any)
			return lv != nil && lv["level"] == "WARN" && all["root"] != nil
		})
	}

	// Restart through the follower (forwarded; every worker applies the
	// restart record to what it runs).
	body := rf.must(202, "POST", "/connectors/src/restart?includeTasks=true", nil).(map[string]any)
	if body["connector"].(map[string]any)["state"] != stateRestarting {
		t.Fatalf("restart answer: %v", body)
	}
	rl.waitState("src", stateRunning)

	follower.Close()
	lines = append(lines, writeLines(t, in, 30, 40)...)
	waitFor(t, "the leader running everything", func() bool {
		for _, c := range []string{"src", "snk"} {
			st := rl.waitState(c, stateRunning)
			if st["connector"].(map[string]any)["worker_id"] != leader.herder.workerID ||
				st["tasks"].([]any)[0].(map[string]any)["worker_id"] != leader.herder.workerID {
				return false
			}
		}
		return true
	})
	waitFile(t, out, lines)
}
