package connect

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/connector"
)

// connRuntime is a connector the reconciler runs: the connector instance
// and its tasks. Only the reconciler goroutine touches it.
type connRuntime struct {
	name    string
	config  map[string]string
	plugin  *plugin
	conn    connector.Connector
	started bool
	failed  bool // stays failed until a restart or a new config

	taskConfigsDone bool // asked the connector for task configs since it started
	tasks           map[int]taskRunner
	taskGen         int // the desired generation the tasks run
}

// taskRunner is a running source or sink task.
type taskRunner interface {
	setPaused(bool)
	stop()
	failed() bool
}

// reconcile runs the connector when runConn and the tasks owns names,
// as the desired state d says; it stops what this worker no longer runs.
func (rt *connRuntime) reconcile(ctx context.Context, h *herder, d desired, runConn bool, owns func(int) bool) {
	if d.target == targetStopped {
		rt.stopTasks(h, true)
		rt.stopConnector()
		if runConn {
			h.setStatus(rt.name, -1, stateStopped, "")
		}
		return
	}
	if runConn {
		rt.reconcileConnector(ctx, h, d)
	} else {
		// Moved to another worker: that worker reports its status now.
		rt.stopConnector()
		rt.failed = false
	}
	if rt.taskGen != d.generation {
		// New task configs: the tasks this worker runs restart with them.
		rt.stopTasks(h, false)
		rt.taskGen = d.generation
	}
	for i, t := range rt.tasks {
		if i >= len(d.tasks) {
			t.stop()
			delete(rt.tasks, i)
			h.dropStatus(rt.name, i)
		} else if !owns(i) {
			t.stop() // revoked: the next owner writes its status
			delete(rt.tasks, i)
		}
	}
	if rt.plugin == nil {
		return // an unknown class: the connector's owner reports it FAILED
	}
	for i, tc := range d.tasks {
		if owns(i) && rt.tasks[i] == nil {
			rt.tasks[i] = h.startTask(rt, i, tc)
		}
	}
	for _, t := range rt.tasks {
		t.setPaused(d.target == targetPaused)
	}
}

// reconcileConnector runs the connector instance: start it, report its
// state, and write its task configs when they changed.
func (rt *connRuntime) reconcileConnector(ctx context.Context, h *herder, d desired) {
	if rt.failed {
		return
	}
	if !rt.started {
		if err := rt.startConnector(); err != nil {
			rt.failed = true
			h.setStatus(rt.name, -1, stateFailed, trace(err))
			return
		}
	}
	if d.target == targetPaused {
		h.setStatus(rt.name, -1, statePaused, "")
	} else {
		h.setStatus(rt.name, -1, stateRunning, "")
	}
	if rt.taskConfigsDone {
		return
	}
	rt.taskConfigsDone = true
	configs, err := rt.taskConfigs()
	if err != nil {
		rt.failed = true
		h.setStatus(rt.name, -1, stateFailed, trace(err))
		return
	}
	if !equalConfigs(configs, d.tasks) {
		// The commit record, once applied, wakes the reconciler again.
		if err := h.configLog.Write(ctx, taskRecords(rt.name, configs)...); err != nil {
			h.logger.Error("connect: writing task configs", "connector", rt.name, "err", err)
			rt.taskConfigsDone = false
		}
	}
}

func (rt *connRuntime) startConnector() error {
	p, err := findPlugin(rt.config["connector.class"])
	if err != nil {
		return err
	}
	c := p.new()
	if err := c.Start(maps.Clone(rt.config)); err != nil {
		return fmt.Errorf("starting connector %s: %w", rt.name, err)
	}
	rt.plugin, rt.conn, rt.started, rt.taskConfigsDone = p, c, true, false
	return nil
}

func (rt *connRuntime) stopConnector() {
	if rt.started {
		rt.conn.Stop()
		rt.started = false
	}
}

// taskConfigs asks the connector for at most tasks.max configs and adds
// Kafka's task.class key.
func (rt *connRuntime) taskConfigs() ([]map[string]string, error) {
	maxTasks := 1
	if v, ok := rt.config["tasks.max"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("invalid value %s for configuration tasks.max: Value must be at least 1", v)
		}
		maxTasks = n
	}
	configs, err := rt.conn.TaskConfigs(maxTasks)
	if err != nil {
		return nil, err
	}
	if len(configs) > maxTasks {
		configs = configs[:maxTasks]
	}
	for _, c := range configs {
		c["task.class"] = strings.TrimSuffix(rt.plugin.class, "Connector") + "Task"
	}
	return configs, nil
}

// stopTasks stops every task this worker runs of the connector; drop
// also removes their statuses (the tasks are gone, not moved).
func (rt *connRuntime) stopTasks(h *herder, drop bool) {
	for i, t := range rt.tasks {
		t.stop()
		delete(rt.tasks, i)
		if drop {
			h.dropStatus(rt.name, i)
		}
	}
	rt.taskGen = -1
}

// stop stops the connector and its tasks here; the caller drops statuses
// when the connector was deleted.
func (rt *connRuntime) stop(h *herder) {
	rt.stopTasks(h, false)
	rt.stopConnector()
}

// restart restarts the connector and/or its tasks on the reconciler;
// onlyFailed limits it to the failed ones.
// Only what this worker runs restarts; every worker applies the same
// restart record, so together they restart everything asked for.
func (rt *connRuntime) restart(h *herder, d desired, connector, tasks, onlyFailed bool) {
	if connector && (!onlyFailed || rt.failed) {
		h.setStatus(rt.name, -1, stateRestarting, "")
		rt.stopConnector()
		rt.failed = false
	}
	if !tasks {
		return
	}
	for i, t := range rt.tasks {
		if onlyFailed && !t.failed() {
			continue
		}
		t.stop()
		if i < len(d.tasks) {
			h.setStatus(rt.name, i, stateRestarting, "")
			rt.tasks[i] = h.startTask(rt, i, d.tasks[i])
		}
	}
}

func (h *herder) startTask(rt *connRuntime, id int, props map[string]string) taskRunner {
	base := taskSpec{h: h, conn: rt.name, id: id, connConfig: rt.config, props: props}
	if rt.plugin.source {
		return startSource(base, rt.plugin.new().(connector.SourceConnector).NewTask())
	}
	return startSink(base, rt.plugin.new().(connector.SinkConnector).NewTask())
}

func equalConfigs(a, b []map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !maps.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// trace is the text a FAILED status carries.
func trace(err error) string {
	return "org.apache.kafka.connect.errors.ConnectException: " + err.Error()
}
