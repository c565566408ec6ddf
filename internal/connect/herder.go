package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/connector"
)

// Target states, as the config topic stores them.
const (
	targetStarted = "STARTED"
	targetPaused  = "PAUSED"
	targetStopped = "STOPPED"
)

// Runtime states, as the status topic and REST API report them.
const (
	stateUnassigned = "UNASSIGNED"
	stateRunning    = "RUNNING"
	statePaused     = "PAUSED"
	stateStopped    = "STOPPED"
	stateFailed     = "FAILED"
	stateRestarting = "RESTARTING"
)

// desired is one connector's state as the config log says it.
type desired struct {
	config     map[string]string
	target     string
	tasks      []map[string]string // the committed task configs
	pending    map[int]map[string]string
	generation int // bumps at each commit-<name>: tasks restart
}

type state struct {
	State    string `json:"state"`
	Trace    string `json:"trace,omitempty"`
	WorkerID string `json:"worker_id"`
}

type connStatus struct {
	connector state
	tasks     map[int]state
}

// herder keeps the desired state (from the config log) and the observed
// statuses; the reconciler goroutine acts on the difference.
type herder struct {
	cfg       *WorkerConfig
	logger    *slog.Logger
	clientOpt []kgo.Opt
	workerID  string
	configLog logStore
	offsets   *offsetStore
	statusLog *kafkaLog // nil in standalone mode
	loggers   *loggers

	kick     chan struct{}
	requests chan func()
	runtimes map[string]*connRuntime // the reconciler goroutine's own

	mu struct {
		sync.Mutex
		conns    map[string]*desired
		status   map[string]*connStatus
		all      bool       // runs every connector and task (standalone mode)
		assigned assignment // what the group assigned this worker (distributed mode)
		restarts map[string]restartRequest
		topics   map[string]map[string]bool // connector -> topics it used (status-topic-* records)
		replayed bool                       // the config log was read to its end once: restart records count from now
	}
	// unitsChanged is signalled when a connector is added or removed or
	// its task count changes: the group leader then rebalances.
	unitsChanged chan struct{}
}

// unit is one piece of work a worker is assigned: a connector (task -1)
// or one of its tasks, as Connect's group assignments name them.
type unit struct {
	conn string
	task int
}

// assignment is the set of units a worker runs.
type assignment map[unit]bool

// setAssignment makes the worker run exactly the given units (all:
// every connector and task, standalone mode); it returns once units no
// longer assigned have stopped.
func (h *herder) setAssignment(ctx context.Context, all bool, a assignment) {
	h.mu.Lock()
	h.mu.all, h.mu.assigned = all, maps.Clone(a)
	h.mu.Unlock()
	h.do(ctx, func() { h.reconcile(ctx) })
}

// owns says whether this worker runs u.
func (h *herder) owns(u unit) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.all || h.mu.assigned[u]
}

// units are the connectors and tasks the config log configures, as the
// group leader assigns them.
func (h *herder) units() assignment {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := assignment{}
	for name, d := range h.mu.conns {
		if d.config == nil {
			continue
		}
		out[unit{name, -1}] = true
		for i := range d.tasks {
			out[unit{name, i}] = true
		}
	}
	return out
}

// configOffset is the offset of the last config record read (-1: none),
// which Connect's group metadata carries.
func (h *herder) configOffset() int64 {
	if l, ok := h.configLog.(*kafkaLog); ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.next[0] - 1
	}
	return -1
}

// applyStatus applies a status-topic record, so every worker reports the
// states of tasks that others run.
func (h *herder) applyStatus(r kv) {
	conn, task := "", -1
	if rest, ok := strings.CutPrefix(r.key, "status-topic-"); ok {
		i := strings.LastIndex(rest, topicSeparator)
		if i < 0 {
			return
		}
		h.setTopic(rest[i+len(topicSeparator):], rest[:i], r.value != nil)
		return
	}
	if rest, ok := strings.CutPrefix(r.key, "status-connector-"); ok {
		conn = rest
	} else if rest, ok := strings.CutPrefix(r.key, "status-task-"); ok {
		i := strings.LastIndexByte(rest, '-')
		n, err := strconv.Atoi(rest[i+1:])
		if i < 0 || err != nil {
			return
		}
		conn, task = rest[:i], n
	} else {
		return
	}
	var v struct {
		State    string  `json:"state"`
		Trace    *string `json:"trace"`
		WorkerID string  `json:"worker_id"`
	}
	if r.value != nil && json.Unmarshal(r.value, &v) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.mu.status[conn]
	if r.value == nil {
		if cs != nil && task < 0 {
			delete(h.mu.status, conn)
		} else if cs != nil {
			delete(cs.tasks, task)
		}
		return
	}
	if cs == nil {
		cs = &connStatus{tasks: map[int]state{}}
		h.mu.status[conn] = cs
	}
	st := state{State: v.State, WorkerID: v.WorkerID}
	if v.Trace != nil {
		st.Trace = *v.Trace
	}
	if task < 0 {
		cs.connector = st
	} else {
		cs.tasks[task] = st
	}
}

func newHerder(cfg *WorkerConfig, logger *slog.Logger, opts []kgo.Opt) *herder {
	h := &herder{cfg: cfg, logger: logger, clientOpt: opts,
		kick: make(chan struct{}, 1), requests: make(chan func()), runtimes: map[string]*connRuntime{}}
	h.mu.conns = map[string]*desired{}
	h.mu.status = map[string]*connStatus{}
	h.mu.restarts = map[string]restartRequest{}
	h.mu.topics = map[string]map[string]bool{}
	h.loggers = newLoggers(nil)
	h.unitsChanged = make(chan struct{}, 1)
	return h
}

func (h *herder) wake() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// applyConfig applies one config-topic record; it is the only way the
// desired state changes.
func (h *herder) applyConfig(r kv) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.wake()
	before := h.unitCountLocked()
	defer func() {
		if h.unitCountLocked() != before {
			select {
			case h.unitsChanged <- struct{}{}:
			default:
			}
		}
	}()
	var v struct {
		Properties   map[string]string `json:"properties"`
		Tasks        *int              `json:"tasks"`
		State        string            `json:"state"`
		StateV2      string            `json:"state.v2"`
		IncludeTasks bool              `json:"include-tasks"`
		OnlyFailed   bool              `json:"only-failed"`
	}
	if r.value != nil {
		if err := json.Unmarshal(r.value, &v); err != nil {
			h.logger.Warn("connect: skipping an unreadable config record", "key", r.key, "err", err)
			return
		}
	}
	get := func(name string) *desired {
		d := h.mu.conns[name]
		if d == nil {
			d = &desired{target: targetStarted, pending: map[int]map[string]string{}}
			h.mu.conns[name] = d
		}
		return d
	}
	switch {
	case strings.HasPrefix(r.key, "connector-"):
		name := strings.TrimPrefix(r.key, "connector-")
		if r.value == nil {
			delete(h.mu.conns, name)
			return
		}
		get(name).config = v.Properties
	case strings.HasPrefix(r.key, "task-"):
		rest := strings.TrimPrefix(r.key, "task-")
		i := strings.LastIndexByte(rest, '-')
		n, err := strconv.Atoi(rest[i+1:])
		if i < 0 || err != nil || r.value == nil {
			return
		}
		get(rest[:i]).pending[n] = v.Properties
	case strings.HasPrefix(r.key, "commit-"):
		d := get(strings.TrimPrefix(r.key, "commit-"))
		if v.Tasks == nil {
			return
		}
		tasks := make([]map[string]string, *v.Tasks)
		for i := range tasks {
			if tasks[i] = d.pending[i]; tasks[i] == nil {
				h.logger.Warn("connect: a task commit without its task configs", "key", r.key)
				return
			}
		}
		d.tasks, d.pending = tasks, map[int]map[string]string{}
		d.generation++
	case strings.HasPrefix(r.key, "logger-cluster-"):
		h.loggers.applyClusterLevel(strings.TrimPrefix(r.key, "logger-cluster-"), r.value)
		return
	case strings.HasPrefix(r.key, "restart-connector-"):
		// Only requests written while we run count, as Kafka: an old
		// restart record must not restart anything at start-up.
		if r.value != nil && h.mu.replayed {
			name := strings.TrimPrefix(r.key, "restart-connector-")
			h.mu.restarts[name] = restartRequest{includeTasks: v.IncludeTasks, onlyFailed: v.OnlyFailed}
		}
	case strings.HasPrefix(r.key, "target-state-"):
		name := strings.TrimPrefix(r.key, "target-state-")
		if r.value == nil {
			return
		}
		d := get(name)
		if v.StateV2 != "" {
			d.target = v.StateV2
		} else if v.State != "" {
			d.target = v.State
		}
	}
	// Records of a connector not (yet) configured are kept: Kafka writes
	// the target state before the connector config.
}

// unitCountLocked is a fingerprint of the configured units: connectors
// and their task counts.
func (h *herder) unitCountLocked() string {
	var b strings.Builder
	for _, name := range connector.SortedKeys(h.mu.conns) {
		if d := h.mu.conns[name]; d.config != nil {
			fmt.Fprintf(&b, "%s:%d,", name, len(d.tasks))
		}
	}
	return b.String()
}

// restartRequest is a restart-connector-<name> record of the config log.
type restartRequest struct{ includeTasks, onlyFailed bool }

func restartRecord(name string, req restartRequest) kv {
	b, _ := json.Marshal(map[string]bool{"include-tasks": req.includeTasks, "only-failed": req.onlyFailed})
	return kv{key: "restart-connector-" + name, value: b}
}

// snapshot returns a copy of one connector's desired state.
func (h *herder) snapshot(name string) (desired, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.mu.conns[name]
	if !ok || d.config == nil {
		return desired{}, false
	}
	c := *d
	c.config = maps.Clone(d.config)
	c.tasks = append([]map[string]string(nil), d.tasks...)
	return c, true
}

func (h *herder) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, n := range connector.SortedKeys(h.mu.conns) {
		if h.mu.conns[n].config != nil {
			out = append(out, n)
		}
	}
	return out
}

// topicSeparator splits a status-topic-<topic>:connector-<name> key.
const topicSeparator = ":connector-"

func (h *herder) setTopic(conn, topic string, active bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !active {
		delete(h.mu.topics[conn], topic)
		return
	}
	if h.mu.topics[conn] == nil {
		h.mu.topics[conn] = map[string]bool{}
	}
	h.mu.topics[conn][topic] = true
}

// recordTopic notes that a task used a topic (Kafka's topic tracking,
// KIP-558): the first time, a status-topic record says so.
func (h *herder) recordTopic(conn string, task int, topic string) {
	if !h.cfg.TopicTracking {
		return
	}
	h.mu.Lock()
	known := h.mu.topics[conn][topic]
	h.mu.Unlock()
	if known {
		return
	}
	h.setTopic(conn, topic, true)
	if h.statusLog != nil {
		v, _ := json.Marshal(map[string]any{"topic": map[string]any{"name": topic, "connector": conn, "task": task,
			"discoverTimestamp": time.Now().UnixMilli()}})
		h.statusLog.send("status-topic-"+topic+topicSeparator+conn, v)
	}
}

// activeTopics lists the topics a connector used, sorted.
func (h *herder) activeTopics(conn string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := connector.SortedKeys(h.mu.topics[conn])
	if out == nil {
		out = []string{}
	}
	return out
}

// resetTopics forgets the topics a connector used (tombstones).
func (h *herder) resetTopics(conn string) {
	for _, topic := range h.activeTopics(conn) {
		h.setTopic(conn, topic, false)
		if h.statusLog != nil {
			h.statusLog.send("status-topic-"+topic+topicSeparator+conn, nil)
		}
	}
}

// setStatus records a connector's (task < 0) or task's state and writes it
// to the status topic.
func (h *herder) setStatus(conn string, task int, st, trace string) {
	s := state{State: st, Trace: trace, WorkerID: h.workerID}
	h.mu.Lock()
	cs := h.mu.status[conn]
	if cs == nil {
		cs = &connStatus{tasks: map[int]state{}}
		h.mu.status[conn] = cs
	}
	key := "status-connector-" + conn
	old, had := cs.connector, cs.connector.State != ""
	if task < 0 {
		cs.connector = s
	} else {
		old, had = cs.tasks[task]
		cs.tasks[task] = s
		key = fmt.Sprintf("status-task-%s-%d", conn, task)
	}
	h.mu.Unlock()
	if had && old == s {
		return // the reconciler repeats states; the topic needs changes only
	}
	h.writeStatus(key, &s)
}

func (h *herder) dropStatus(conn string, task int) {
	h.mu.Lock()
	key := "status-connector-" + conn
	if cs := h.mu.status[conn]; cs != nil {
		if task < 0 {
			delete(h.mu.status, conn)
		} else {
			delete(cs.tasks, task)
			key = fmt.Sprintf("status-task-%s-%d", conn, task)
		}
	}
	h.mu.Unlock()
	h.writeStatus(key, nil)
}

func (h *herder) writeStatus(key string, s *state) {
	if h.statusLog == nil {
		return
	}
	var value []byte
	if s != nil {
		var trace *string
		if s.Trace != "" {
			trace = &s.Trace
		}
		value, _ = json.Marshal(map[string]any{"state": s.State, "trace": trace, "worker_id": s.WorkerID, "generation": 0})
	}
	h.statusLog.send(key, value)
}

func (h *herder) status(conn string) (state, map[int]state) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.mu.status[conn]
	if cs == nil {
		return state{State: stateUnassigned, WorkerID: h.workerID}, nil
	}
	return cs.connector, maps.Clone(cs.tasks)
}

// connectorRecord, taskRecords and targetRecord build config-topic
// records in Kafka's format.
func connectorRecord(name string, props map[string]string) kv {
	if props == nil {
		return kv{key: "connector-" + name}
	}
	b, _ := json.Marshal(map[string]any{"properties": props})
	return kv{key: "connector-" + name, value: b}
}

func taskRecords(name string, tasks []map[string]string) []kv {
	var out []kv
	for i, t := range tasks {
		b, _ := json.Marshal(map[string]any{"properties": t})
		out = append(out, kv{key: fmt.Sprintf("task-%s-%d", name, i), value: b})
	}
	b, _ := json.Marshal(map[string]any{"tasks": len(tasks)})
	return append(out, kv{key: "commit-" + name, value: b})
}

func targetRecord(name, target string) kv {
	v1 := target
	if target == targetStopped {
		v1 = targetPaused // the v1 field has no STOPPED; old workers pause
	}
	b, _ := json.Marshal(map[string]string{"state": v1, "state.v2": target})
	return kv{key: "target-state-" + name, value: b}
}

// run is the reconciler: it alone starts and stops connectors and tasks.
func (h *herder) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			for name, rt := range h.runtimes {
				rt.stop(h)
				delete(h.runtimes, name)
			}
			return
		case <-h.kick:
		case f := <-h.requests:
			f()
		}
		h.reconcile(ctx)
	}
}

// do runs f on the reconciler goroutine and waits for it.
func (h *herder) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case h.requests <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *herder) reconcile(ctx context.Context) {
	h.mu.Lock()
	all, assigned, restarts := h.mu.all, maps.Clone(h.mu.assigned), h.mu.restarts
	h.mu.restarts = map[string]restartRequest{}
	h.mu.Unlock()
	owns := func(u unit) bool { return all || assigned[u] }
	seen := map[string]bool{}
	for _, name := range h.names() {
		d, _ := h.snapshot(name)
		runConn := owns(unit{name, -1})
		anyTask := false
		for i := range d.tasks {
			anyTask = anyTask || owns(unit{name, i})
		}
		rt := h.runtimes[name]
		if !runConn && !anyTask && rt == nil {
			continue
		}
		seen[name] = true
		if rt != nil && !maps.Equal(rt.config, d.config) {
			rt.stop(h)
			rt = nil
		}
		if rt == nil {
			rt = &connRuntime{name: name, config: d.config, tasks: map[int]taskRunner{}, taskGen: -1}
			rt.plugin, _ = findPlugin(d.config["connector.class"])
			h.runtimes[name] = rt
		}
		if req, ok := restarts[name]; ok {
			rt.restart(h, d, runConn, req.includeTasks, req.onlyFailed)
		}
		rt.reconcile(ctx, h, d, runConn, func(i int) bool { return owns(unit{name, i}) })
	}
	for name, rt := range h.runtimes {
		if seen[name] {
			continue
		}
		_, configured := h.snapshot(name)
		if !configured { // deleted, not only moved to another worker
			rt.stopTasks(h, true)
		}
		rt.stop(h)
		delete(h.runtimes, name)
		if !configured {
			h.dropStatus(name, -1)
			h.resetTopics(name) // Kafka forgets a deleted connector's topics
		}
	}
}
