package connect

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// loggers serves Kafka's /admin/loggers on a Go worker. The worker logs
// through one slog logger: the level of "root" is that logger's level
// (when the caller passed its LevelVar); levels set for other namespaces
// are remembered and reported as Kafka does, but a Go worker has no
// per-class loggers for them to change.
type loggers struct {
	level *slog.LevelVar // nil: the root level cannot change

	mu  sync.Mutex
	set map[string]loggerLevel
}

type loggerLevel struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

// log4jLevels maps Kafka's (log4j's) level names to slog's.
var log4jLevels = map[string]slog.Level{
	"ALL": slog.LevelDebug - 4, "TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4, "OFF": slog.LevelError + 8,
}

func newLoggers(level *slog.LevelVar) *loggers {
	return &loggers{level: level, set: map[string]loggerLevel{}}
}

func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "TRACE"
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	default:
		return "ERROR"
	}
}

func (l *loggers) all() map[string]loggerLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]loggerLevel{}
	for k, v := range l.set {
		out[k] = v
	}
	if _, ok := out["root"]; !ok {
		root := loggerLevel{Level: "INFO"}
		if l.level != nil {
			root.Level = levelName(l.level.Level())
		}
		out["root"] = root
	}
	return out
}

// setLevel sets a namespace's level; it returns the loggers it changed.
func (l *loggers) setLevel(namespace, level string) []string {
	level = strings.ToUpper(level)
	now := time.Now().UnixMilli()
	l.mu.Lock()
	l.set[namespace] = loggerLevel{Level: level, LastModified: &now}
	l.mu.Unlock()
	if namespace == "root" && l.level != nil {
		l.level.Set(log4jLevels[level])
	}
	return []string{namespace}
}

// applyClusterLevel applies a logger-cluster-<namespace> config record.
func (l *loggers) applyClusterLevel(namespace string, value []byte) {
	var v struct {
		Level string `json:"level"`
	}
	if value == nil || json.Unmarshal(value, &v) != nil {
		return
	}
	if _, ok := log4jLevels[strings.ToUpper(v.Level)]; ok {
		l.setLevel(namespace, v.Level)
	}
}

func (w *Worker) loggerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /admin/loggers", handler(func(*http.Request) (int, any, error) {
		return 200, w.herder.loggers.all(), nil
	}))
	mux.HandleFunc("GET /admin/loggers/{logger}", handler(func(r *http.Request) (int, any, error) {
		name := r.PathValue("logger")
		if lv, ok := w.herder.loggers.all()[name]; ok {
			return 200, lv, nil
		}
		return 0, nil, errorf(404, "Logger %s not found.", name)
	}))
	mux.HandleFunc("PUT /admin/loggers/{logger}", handler(func(r *http.Request) (int, any, error) {
		var body map[string]string
		if err := decode(r, &body); err != nil {
			return 0, nil, err
		}
		level, ok := body["level"]
		if !ok {
			return 0, nil, errorf(400, "Desired 'level' parameter was not specified in request.")
		}
		if _, ok := log4jLevels[strings.ToUpper(level)]; !ok {
			return 0, nil, errorf(404, "invalid log level '%s'.", level)
		}
		name := r.PathValue("logger")
		if strings.EqualFold(r.URL.Query().Get("scope"), "cluster") {
			// Every worker applies the config record (Kafka's format).
			b, _ := json.Marshal(map[string]string{"level": level})
			return 204, nil, w.herder.configLog.Write(r.Context(), kv{key: "logger-cluster-" + name, value: b})
		}
		return 200, w.herder.loggers.setLevel(name, level), nil
	}))
}
