package broker

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func loggerReq(validateOnly bool, name string, op kmsg.IncrementalAlterConfigOp, value string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, &value
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return req
}

func TestBrokerLoggerLevels(t *testing.T) {
	var lv slog.LevelVar
	b := New(Config{NodeID: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: &lv}))})
	alter := func(req *kmsg.IncrementalAlterConfigsRequest) (int16, string) {
		t.Helper()
		resp, err := handleIncrementalAlterConfigs(context.Background(), b, nil, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg
	}
	set := kmsg.IncrementalAlterConfigOpSet

	// Not wired: refused, and the level reported is the logger's real one.
	if code, _ := alter(loggerReq(false, "root", set, "DEBUG")); code != kerr.InvalidRequest.Code {
		t.Fatalf("unwired: code %d", code)
	}
	if got := levelName(b.currentLogLevel()); got != "INFO" {
		t.Fatalf("unwired level %s, want INFO", got)
	}

	b.SetLogLevel(&lv)
	if code, _ := alter(loggerReq(true, "root", set, "debug")); code != 0 || lv.Level() != slog.LevelInfo {
		t.Fatalf("validate_only: code %d level %v", code, lv.Level())
	}
	if code, _ := alter(loggerReq(false, "root", set, "debug")); code != 0 || lv.Level() != slog.LevelDebug {
		t.Fatalf("set DEBUG: code %d level %v", code, lv.Level())
	}
	if got := levelName(b.currentLogLevel()); got != "DEBUG" {
		t.Fatalf("described level %s", got)
	}
	for _, tc := range []struct {
		req  *kmsg.IncrementalAlterConfigsRequest
		code int16
		msg  string
	}{
		{loggerReq(false, "root", set, "LOUD"), kerr.InvalidConfig.Code,
			"Cannot set the log level of root to LOUD as it is not a supported log level. Valid log4j levels are ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"},
		{loggerReq(false, "kafka", set, "INFO"), kerr.InvalidConfig.Code, "Logger kafka does not exist!"},
		{loggerReq(false, "root", kmsg.IncrementalAlterConfigOpDelete, ""), kerr.InvalidRequest.Code,
			"Removing the log level of the root logger is not allowed"},
		{loggerReq(false, "root", kmsg.IncrementalAlterConfigOpAppend, "x"), kerr.InvalidRequest.Code,
			"Operation APPEND is not supported for BROKER_LOGGER"},
	} {
		if code, msg := alter(tc.req); code != tc.code || msg != tc.msg {
			t.Errorf("code %d %q, want %d %q", code, msg, tc.code, tc.msg)
		}
	}
	if lv.Level() != slog.LevelDebug {
		t.Fatalf("failed changes moved the level to %v", lv.Level())
	}
	for _, l := range logLevels {
		if got := levelName(l.level); got != l.name {
			t.Errorf("level %s reads back as %s", l.name, got)
		}
	}
}
