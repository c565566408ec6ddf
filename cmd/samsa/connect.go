package main

// `samsa connect` runs a Kafka Connect worker (standalone or distributed)
// and manages connectors of a running worker over its REST API.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/connect"
)

const connectSynopsis = `samsa connect --config connect-distributed.properties
       samsa connect standalone worker.properties connector.properties...
       samsa connect list|status NAME|create FILE|delete NAME|pause NAME|resume NAME|restart NAME [--url http://host:8083]`

func runConnect(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "standalone":
			return runConnectWorker(args[1:], false, stderr)
		case "distributed":
			return runConnectWorker(args[1:], true, stderr)
		case "list", "status", "create", "delete", "pause", "resume", "restart":
			return runConnectClient(args[0], args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("connect", connectSynopsis, stderr)
	config := fs.String("config", "", "distributed worker `properties` file (Kafka's connect-distributed.properties keys)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if *config == "" {
		return usageError(fs, stderr, "--config is required (or use: samsa connect standalone ...)")
	}
	return runConnectWorker([]string{"--log-level", *logLevel, *config}, true, stderr)
}

// runConnectWorker runs a worker until SIGINT or SIGTERM.
func runConnectWorker(args []string, distributed bool, stderr io.Writer) int {
	mode := map[bool]string{true: "distributed", false: "standalone"}[distributed]
	fs := newFlagSet("connect "+mode, "samsa connect "+mode+" worker.properties [connector.properties...]", stderr)
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) == 0 || (distributed && len(files) != 1) {
		return usageError(fs, stderr, "want one worker properties file%s", map[bool]string{true: "", false: " and connector properties files"}[distributed])
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError(fs, stderr, "invalid --log-level %q", *logLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := connect.LoadWorkerConfig(files[0], distributed)
	if err != nil {
		fmt.Fprintf(stderr, "samsa connect: %v\n", err)
		return exitUsage
	}
	var connectors []map[string]string
	for _, f := range files[1:] {
		text, err := os.ReadFile(f)
		if err == nil {
			var props map[string]string
			if props, err = connect.ReadProperties(string(text)); err == nil {
				connectors = append(connectors, props)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "samsa connect: %s: %v\n", f, err)
			return exitUsage
		}
	}
	ctx, stop := signalContext()
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	w, err := connect.Start(startCtx, cfg, connect.Options{Logger: logger, LogLevel: level, Distributed: distributed, Connectors: connectors})
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "samsa connect: %v\n", err)
		return exitFail
	}
	<-ctx.Done()
	logger.Info("shutting down", "cause", context.Cause(ctx).Error())
	w.Close()
	return exitOK
}

// runConnectClient is one REST call against a running worker.
func runConnectClient(verb string, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("connect "+verb, connectSynopsis, stderr)
	base := fs.String("url", "http://localhost:8083", "the worker's REST `URL`")
	includeTasks := fs.Bool("include-tasks", false, "restart: restart the connector's tasks too")
	onlyFailed := fs.Bool("only-failed", false, "restart: restart only the failed connector and tasks")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if want := map[bool]int{true: 0, false: 1}[verb == "list"]; len(pos) != want {
		return usageError(fs, stderr, "connect %s takes %d argument(s)", verb, want)
	}
	var method, path string
	var body []byte
	switch verb {
	case "list":
		method, path = "GET", "/connectors"
	case "status":
		method, path = "GET", "/connectors/"+url.PathEscape(pos[0])+"/status"
	case "delete":
		method, path = "DELETE", "/connectors/"+url.PathEscape(pos[0])
	case "pause", "resume":
		method, path = "PUT", "/connectors/"+url.PathEscape(pos[0])+"/"+verb
	case "restart":
		method = "POST"
		path = fmt.Sprintf("/connectors/%s/restart?includeTasks=%t&onlyFailed=%t", url.PathEscape(pos[0]), *includeTasks, *onlyFailed)
	case "create":
		text, err := os.ReadFile(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "samsa connect create: %v\n", err)
			return exitUsage
		}
		req, err := connectorRequest(text)
		if err != nil {
			fmt.Fprintf(stderr, "samsa connect create: %s: %v\n", pos[0], err)
			return exitUsage
		}
		method, path, body = "POST", "/connectors", req
	}
	status, out, err := restCall(method, strings.TrimSuffix(*base, "/")+path, body)
	if err != nil {
		fmt.Fprintf(stderr, "samsa connect %s: %v\n", verb, err)
		return exitFail
	}
	if status >= 300 {
		var e struct {
			Message string `json:"message"`
		}
		json.Unmarshal(out, &e)
		fmt.Fprintf(stderr, "samsa connect %s: %d: %s\n", verb, status, e.Message)
		return exitFail
	}
	switch verb {
	case "list":
		var names []string
		json.Unmarshal(out, &names)
		for _, n := range names {
			fmt.Fprintln(stdout, n)
		}
	case "status", "create":
		var pretty bytes.Buffer
		json.Indent(&pretty, out, "", "  ")
		fmt.Fprintln(stdout, pretty.String())
	}
	return exitOK
}

// connectorRequest reads a connector config as Kafka's tools accept it:
// a properties file with a name key, or JSON, either {"name":..,
// "config":{..}} or the config map alone.
func connectorRequest(text []byte) ([]byte, error) {
	var req struct {
		Name   string            `json:"name"`
		Config map[string]string `json:"config"`
	}
	if t := bytes.TrimSpace(text); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &req); err != nil || req.Config == nil {
			var flat map[string]string
			if err := json.Unmarshal(t, &flat); err != nil {
				return nil, err
			}
			req.Name, req.Config = flat["name"], flat
		}
	} else {
		props, err := connect.ReadProperties(string(text))
		if err != nil {
			return nil, err
		}
		req.Name, req.Config = props["name"], props
	}
	if req.Name == "" {
		return nil, fmt.Errorf("no connector name")
	}
	return json.Marshal(req)
}

func restCall(method, u string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	cl := &http.Client{Timeout: 60 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
