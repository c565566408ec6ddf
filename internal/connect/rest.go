package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// restError is an error with the HTTP status Kafka answers it with; the
// body is {"error_code":status,"message":...}.
type restError struct {
	code int
	msg  string
}

func (e *restError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &restError{code, fmt.Sprintf(format, args...)}
}

func notFound(name string) error { return errorf(http.StatusNotFound, "Connector %s not found", name) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		json.NewEncoder(w).Encode(v)
	}
}

func writeError(w http.ResponseWriter, err error) {
	var re *restError
	if !errors.As(err, &re) {
		re = &restError{http.StatusInternalServerError, err.Error()}
	}
	writeJSON(w, re.code, map[string]any{"error_code": re.code, "message": re.msg})
}

// handler wraps a handler that returns (status, body, error).
func handler(f func(r *http.Request) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		code, body, err := f(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if code == http.StatusNoContent {
			w.WriteHeader(code)
			return
		}
		if info, ok := body.(*connectorInfo); ok && code == http.StatusCreated {
			w.Header().Set("Location", "/connectors/"+url.PathEscape(info.Name))
		}
		writeJSON(w, code, body)
	}
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "Request body is not valid JSON: %v", err)
	}
	return nil
}

// routes is the Connect REST API under Kafka's paths.
func (w *Worker) routes() http.Handler {
	mux := http.NewServeMux()
	h := w.herder
	mux.HandleFunc("GET /{$}", handler(func(*http.Request) (int, any, error) {
		return 200, map[string]string{"version": version, "commit": "samsa", "kafka_cluster_id": w.clusterID}, nil
	}))
	mux.HandleFunc("GET /health", handler(func(*http.Request) (int, any, error) {
		return 200, map[string]string{"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}, nil
	}))
	mux.HandleFunc("GET /connectors", handler(w.listConnectors))
	mux.HandleFunc("POST /connectors", w.leaderOnly(handler(w.createConnector)))
	mux.HandleFunc("GET /connectors/{c}", handler(func(r *http.Request) (int, any, error) {
		info, err := w.info(r.PathValue("c"))
		return 200, info, err
	}))
	mux.HandleFunc("GET /connectors/{c}/config", handler(func(r *http.Request) (int, any, error) {
		d, ok := h.snapshot(r.PathValue("c"))
		if !ok {
			return 0, nil, notFound(r.PathValue("c"))
		}
		return 200, d.config, nil
	}))
	mux.HandleFunc("PUT /connectors/{c}/config", w.leaderOnly(handler(w.putConfig)))
	mux.HandleFunc("PATCH /connectors/{c}/config", w.leaderOnly(handler(w.patchConfig)))
	mux.HandleFunc("DELETE /connectors/{c}", w.leaderOnly(handler(func(r *http.Request) (int, any, error) {
		name := r.PathValue("c")
		if _, ok := h.snapshot(name); !ok {
			return 0, nil, notFound(name)
		}
		return 204, nil, h.configLog.Write(r.Context(), kv{key: "target-state-" + name}, connectorRecord(name, nil))
	})))
	mux.HandleFunc("GET /connectors/{c}/status", handler(func(r *http.Request) (int, any, error) {
		st, err := w.status(r.PathValue("c"))
		return 200, st, err
	}))
	mux.HandleFunc("GET /connectors/{c}/tasks", handler(w.tasks))
	mux.HandleFunc("GET /connectors/{c}/tasks/{t}/status", handler(w.taskStatus))
	mux.HandleFunc("POST /connectors/{c}/restart", w.leaderOnly(handler(w.restartConnector)))
	mux.HandleFunc("POST /connectors/{c}/tasks/{t}/restart", w.restartTask)
	for path, target := range map[string]string{"pause": targetPaused, "resume": targetStarted, "stop": targetStopped} {
		hf := handler(func(r *http.Request) (int, any, error) {
			name := r.PathValue("c")
			if _, ok := h.snapshot(name); !ok {
				return 0, nil, errorf(404, "Unknown connector %s", name)
			}
			recs := []kv{targetRecord(name, target)}
			if target == targetStopped {
				// Kafka empties the task configs of a stopped connector.
				recs = append(recs, taskRecords(name, nil)...)
			}
			return 202, nil, h.configLog.Write(r.Context(), recs...)
		})
		if target == targetStopped {
			hf = w.leaderOnly(hf) // Kafka's leader writes stops; any worker pauses and resumes
		}
		mux.HandleFunc("PUT /connectors/{c}/"+path, hf)
	}
	mux.HandleFunc("GET /connectors/{c}/offsets", handler(w.getOffsets))
	mux.HandleFunc("GET /connectors/{c}/topics", handler(func(r *http.Request) (int, any, error) {
		if !w.cfg.TopicTracking {
			return 0, nil, errorf(403, "Topic tracking is disabled.")
		}
		name := r.PathValue("c")
		return 200, map[string]any{name: map[string]any{"topics": h.activeTopics(name)}}, nil
	}))
	mux.HandleFunc("PUT /connectors/{c}/topics/reset", handler(func(r *http.Request) (int, any, error) {
		if !w.cfg.TopicTracking {
			return 0, nil, errorf(403, "Topic tracking is disabled.")
		}
		if !w.cfg.TopicTrackingReset {
			return 0, nil, errorf(403, "Topic tracking reset is disabled.")
		}
		h.resetTopics(r.PathValue("c"))
		return 202, nil, nil
	}))
	mux.HandleFunc("DELETE /connectors/{c}/offsets", w.leaderOnly(handler(func(r *http.Request) (int, any, error) { return w.alterOffsets(r, nil) })))
	mux.HandleFunc("PATCH /connectors/{c}/offsets", w.leaderOnly(handler(func(r *http.Request) (int, any, error) {
		var body struct {
			Offsets []struct {
				Partition map[string]any `json:"partition"`
				Offset    map[string]any `json:"offset"`
			} `json:"offsets"`
		}
		if err := decode(r, &body); err != nil {
			return 0, nil, err
		}
		if body.Offsets == nil {
			return 0, nil, errorf(400, "Connector offsets must be provided as an array of partition/offset pairs")
		}
		var entries []offsetEntry
		for _, o := range body.Offsets {
			var off map[string]any
			if o.Offset != nil {
				off = normalize(o.Offset)
			}
			entries = append(entries, offsetEntry{partition: normalize(o.Partition), offset: off})
		}
		return w.alterOffsets(r, entries)
	})))
	mux.HandleFunc("GET /connector-plugins", handler(func(*http.Request) (int, any, error) {
		var out []map[string]string
		for _, p := range plugins {
			out = append(out, map[string]string{"class": p.class, "type": p.typeName(), "version": version})
		}
		return 200, out, nil
	}))
	mux.HandleFunc("GET /connector-plugins/{p}/config", handler(func(r *http.Request) (int, any, error) {
		p, err := findPlugin(r.PathValue("p"))
		if err != nil {
			return 0, nil, errorf(404, "Unknown plugin %s.", r.PathValue("p"))
		}
		out := []keyInfo{}
		for i, k := range p.new().Config() {
			out = append(out, keyInfoOf(k, i+1))
		}
		return 200, out, nil
	}))
	mux.HandleFunc("PUT /connector-plugins/{p}/config/validate", handler(func(r *http.Request) (int, any, error) {
		var props map[string]string
		if err := decode(r, &props); err != nil {
			return 0, nil, err
		}
		if c := props["connector.class"]; c != "" {
			included, err1 := findPlugin(c)
			requested, err2 := findPlugin(r.PathValue("p"))
			if err1 == nil && err2 == nil && included != requested {
				return 0, nil, errorf(400, "Included connector type %s does not match request type %s", c, r.PathValue("p"))
			}
		}
		if props["connector.class"] == "" {
			props["connector.class"] = r.PathValue("p")
		}
		v, _, err := validateConfig(props)
		if err != nil {
			return 0, nil, err
		}
		return 200, v, nil
	}))
	w.loggerRoutes(mux)
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		writeError(rw, errorf(404, "HTTP 404 Not Found"))
	})
	return mux
}

func (w *Worker) listConnectors(r *http.Request) (int, any, error) {
	names := w.herder.names()
	expand := r.URL.Query()["expand"]
	if len(expand) == 0 {
		if names == nil {
			names = []string{}
		}
		return 200, names, nil
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		m := map[string]any{}
		for _, e := range expand {
			switch e {
			case "status":
				if st, err := w.status(n); err == nil {
					m["status"] = st
				}
			case "info":
				if info, err := w.info(n); err == nil {
					m["info"] = info
				}
			}
		}
		out[n] = m
	}
	return 200, out, nil
}

type taskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

type connectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []taskID          `json:"tasks"`
	Type   string            `json:"type"`
}

func typeOf(config map[string]string) string {
	if p, err := findPlugin(config["connector.class"]); err == nil {
		return p.typeName()
	}
	return "unknown"
}

func (w *Worker) info(name string) (*connectorInfo, error) {
	d, ok := w.herder.snapshot(name)
	if !ok {
		return nil, notFound(name)
	}
	info := &connectorInfo{Name: name, Config: d.config, Tasks: []taskID{}, Type: typeOf(d.config)}
	for i := range d.tasks {
		info.Tasks = append(info.Tasks, taskID{name, i})
	}
	return info, nil
}

type taskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

type connectorState struct {
	Name      string      `json:"name"`
	Connector state       `json:"connector"`
	Tasks     []taskState `json:"tasks"`
	Type      string      `json:"type"`
}

func (w *Worker) status(name string) (*connectorState, error) {
	d, ok := w.herder.snapshot(name)
	if !ok {
		return nil, errorf(404, "No status found for connector %s", name)
	}
	cs, tasks := w.herder.status(name)
	out := &connectorState{Name: name, Connector: cs, Tasks: []taskState{}, Type: typeOf(d.config)}
	for i := range d.tasks {
		t, ok := tasks[i]
		if !ok {
			t = state{State: stateUnassigned, WorkerID: w.herder.workerID}
		}
		out.Tasks = append(out.Tasks, taskState{ID: i, State: t.State, WorkerID: t.WorkerID, Trace: t.Trace})
	}
	return out, nil
}

func (w *Worker) tasks(r *http.Request) (int, any, error) {
	name := r.PathValue("c")
	d, ok := w.herder.snapshot(name)
	if !ok {
		return 0, nil, notFound(name)
	}
	type taskInfo struct {
		ID     taskID            `json:"id"`
		Config map[string]string `json:"config"`
	}
	out := []taskInfo{}
	for i, c := range d.tasks {
		out = append(out, taskInfo{taskID{name, i}, c})
	}
	return 200, out, nil
}

func (w *Worker) taskStatus(r *http.Request) (int, any, error) {
	name := r.PathValue("c")
	st, err := w.status(name)
	id, convErr := strconv.Atoi(r.PathValue("t"))
	if err != nil || convErr != nil || id < 0 || id >= len(st.Tasks) {
		return 0, nil, errorf(404, "No status found for task %s-%s", name, r.PathValue("t"))
	}
	return 200, st.Tasks[id], nil
}

// putConnector validates and writes a connector config: the target state
// first (new connectors only), then the config, as Kafka.
func (w *Worker) putConnector(ctx context.Context, name string, config map[string]string, initial string, allowUpdate bool) (*connectorInfo, bool, error) {
	config = maps.Clone(config)
	if config == nil {
		config = map[string]string{}
	}
	config["name"] = name
	v, _, err := validateConfig(config)
	if err != nil {
		var re *restError
		if errors.As(err, &re) {
			return nil, false, err
		}
		// No class or an unknown one: Kafka 4.4 answers 400.
		return nil, false, errorf(400, "%s", err.Error())
	}
	if v.ErrorCount > 0 {
		return nil, false, errorf(400, "%s", v.errorSummary())
	}
	_, exists := w.herder.snapshot(name)
	if exists && !allowUpdate {
		return nil, false, errorf(409, "Connector %s already exists", name)
	}
	var recs []kv
	if !exists {
		switch initial {
		case "", "RUNNING":
			recs = append(recs, targetRecord(name, targetStarted))
		case "PAUSED":
			recs = append(recs, targetRecord(name, targetPaused))
		case "STOPPED":
			recs = append(recs, targetRecord(name, targetStopped))
		default:
			return nil, false, errorf(400, "Invalid initial state %s; valid states are RUNNING, PAUSED and STOPPED", initial)
		}
	}
	recs = append(recs, connectorRecord(name, config))
	if err := w.herder.configLog.Write(ctx, recs...); err != nil {
		return nil, false, err
	}
	info, err := w.info(name)
	return info, !exists, err
}

func (w *Worker) createConnector(r *http.Request) (int, any, error) {
	var body struct {
		Name         string            `json:"name"`
		Config       map[string]string `json:"config"`
		InitialState string            `json:"initial_state"`
	}
	if err := decode(r, &body); err != nil {
		return 0, nil, err
	}
	name := strings.TrimSpace(body.Name)
	if n, ok := body.Config["name"]; ok && n != name {
		return 0, nil, errorf(400, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", n, name)
	}
	info, _, err := w.putConnector(r.Context(), name, body.Config, body.InitialState, false)
	return 201, info, err
}

func (w *Worker) putConfig(r *http.Request) (int, any, error) {
	name := r.PathValue("c")
	var config map[string]string
	if err := decode(r, &config); err != nil {
		return 0, nil, err
	}
	if n, ok := config["name"]; ok && n != name {
		return 0, nil, errorf(400, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", n, name)
	}
	info, created, err := w.putConnector(r.Context(), name, config, "", true)
	if created {
		return 201, info, err
	}
	return 200, info, err
}

func (w *Worker) patchConfig(r *http.Request) (int, any, error) {
	name := r.PathValue("c")
	d, ok := w.herder.snapshot(name)
	if !ok {
		return 0, nil, notFound(name)
	}
	var patch map[string]*string
	if err := decode(r, &patch); err != nil {
		return 0, nil, err
	}
	for k, v := range patch {
		if v == nil {
			delete(d.config, k)
		} else {
			d.config[k] = *v
		}
	}
	info, _, err := w.putConnector(r.Context(), name, d.config, "", true)
	return 200, info, err
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(400, "Invalid value %s for query parameter %s", v, name)
	}
	return b, nil
}

// restartConnector writes a restart request to the config log; every
// worker restarts what it runs of the connector (Kafka's
// restart-connector-<name> record). The flags answer 202 with the planned
// states, as Kafka.
func (w *Worker) restartConnector(r *http.Request) (int, any, error) {
	name := r.PathValue("c")
	includeTasks, err := boolParam(r, "includeTasks")
	if err != nil {
		return 0, nil, err
	}
	onlyFailed, err := boolParam(r, "onlyFailed")
	if err != nil {
		return 0, nil, err
	}
	if _, ok := w.herder.snapshot(name); !ok {
		return 0, nil, errorf(404, "Unknown connector: %s", name)
	}
	st, err := w.status(name)
	if err != nil {
		return 0, nil, err
	}
	if err := w.herder.configLog.Write(r.Context(), restartRecord(name, restartRequest{includeTasks, onlyFailed})); err != nil {
		return 0, nil, err
	}
	if !includeTasks && !onlyFailed {
		return 204, nil, nil
	}
	if !onlyFailed || st.Connector.State == stateFailed {
		st.Connector.State, st.Connector.Trace = stateRestarting, ""
	}
	for i, t := range st.Tasks {
		if includeTasks && (!onlyFailed || t.State == stateFailed) {
			st.Tasks[i].State, st.Tasks[i].Trace = stateRestarting, ""
		}
	}
	return 202, st, nil
}

// restartTask restarts a task this worker runs; otherwise the leader
// forwards the request to the task's worker, and a follower to the
// leader, as Kafka.
func (w *Worker) restartTask(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("c")
	d, ok := w.herder.snapshot(name)
	if !ok {
		writeError(rw, errorf(404, "Unknown connector: %s", name))
		return
	}
	id, err := strconv.Atoi(r.PathValue("t"))
	if err != nil || id < 0 || id >= len(d.tasks) {
		writeError(rw, errorf(404, "Unknown task: %s-%s", name, r.PathValue("t")))
		return
	}
	h := w.herder
	if !h.owns(unit{name, id}) && w.group != nil {
		leaderURL, leader := w.group.leaderURL()
		target := leaderURL
		if leader {
			target = w.group.ownerURL(unit{name, id})
		}
		w.forwardTo(rw, r, target)
		return
	}
	err = h.do(r.Context(), func() {
		rt := h.runtimes[name]
		if rt == nil {
			return
		}
		if t := rt.tasks[id]; t != nil {
			t.stop()
			h.setStatus(name, id, stateRestarting, "")
			rt.tasks[id] = h.startTask(rt, id, d.tasks[id])
			rt.tasks[id].setPaused(d.target == targetPaused)
		}
	})
	if err != nil {
		writeError(rw, err)
		return
	}
	rw.WriteHeader(http.StatusNoContent)
}

type offsetJSON struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

func (w *Worker) getOffsets(r *http.Request) (int, any, error) {
	name := r.PathValue("c")
	d, ok := w.herder.snapshot(name)
	if !ok {
		return 0, nil, notFound(name)
	}
	out := []offsetJSON{}
	if typeOf(d.config) == "source" {
		for _, e := range w.herder.offsets.list(name) {
			out = append(out, offsetJSON{e.partition, e.offset})
		}
		return 200, map[string]any{"offsets": out}, nil
	}
	adm := kadm.NewClient(w.admin)
	resp, err := adm.FetchOffsets(r.Context(), "connect-"+name)
	if err != nil {
		return 0, nil, err
	}
	for _, o := range resp.Sorted() {
		out = append(out, offsetJSON{
			Partition: map[string]any{"kafka_topic": o.Topic, "kafka_partition": o.Partition},
			Offset:    map[string]any{"kafka_offset": o.At},
		})
	}
	return 200, map[string]any{"offsets": out}, nil
}

// alterOffsets resets (entries nil) or alters a stopped connector's
// offsets.
func (w *Worker) alterOffsets(r *http.Request, entries []offsetEntry) (int, any, error) {
	name := r.PathValue("c")
	d, ok := w.herder.snapshot(name)
	if !ok {
		return 0, nil, notFound(name)
	}
	if d.target != targetStopped || len(d.tasks) != 0 {
		return 0, nil, errorf(400, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	reset := entries == nil
	msg := "The offsets for this connector have been altered successfully"
	if reset {
		msg = "The offsets for this connector have been reset successfully"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if typeOf(d.config) == "source" {
		if reset {
			for _, e := range w.herder.offsets.list(name) {
				entries = append(entries, offsetEntry{partition: e.partition})
			}
		}
		if err := w.herder.offsets.put(ctx, name, entries); err != nil {
			return 0, nil, err
		}
		return 200, map[string]string{"message": msg}, nil
	}
	adm := kadm.NewClient(w.admin)
	group := "connect-" + name
	if reset {
		fetched, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return 0, nil, err
		}
		ts := kadm.TopicsSet{}
		for _, o := range fetched.Sorted() {
			ts.Add(o.Topic, o.Partition)
		}
		if len(ts) > 0 {
			resp, err := adm.DeleteOffsets(ctx, group, ts)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return 0, nil, err
			}
		}
		return 200, map[string]string{"message": msg}, nil
	}
	offs := kadm.Offsets{}
	for _, e := range entries {
		topic, _ := e.partition["kafka_topic"].(string)
		part, ok1 := e.partition["kafka_partition"].(int64)
		off, ok2 := e.offset["kafka_offset"].(int64)
		if topic == "" || !ok1 || !ok2 {
			return 0, nil, errorf(400, "Partitions must be given as {\"kafka_topic\": string, \"kafka_partition\": int} and offsets as {\"kafka_offset\": long}")
		}
		offs.Add(kadm.Offset{Topic: topic, Partition: int32(part), At: off, LeaderEpoch: -1})
	}
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return 0, nil, err
	}
	return 200, map[string]string{"message": msg}, nil
}
