package main

import (
	"strings"
	"testing"
)

func TestConfigSetGetDelete(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "events", "--bootstrap", b)

	r := mustRun(t, "", "config", "set", "topic", "events", "retention.ms=60000", "cleanup.policy=compact", "--bootstrap", b)
	if want := "Completed updating config for topic events.\n"; r.stdout != want {
		t.Errorf("set stdout %q, want %q", r.stdout, want)
	}
	r = mustRun(t, "", "config", "get", "topic", "events", "--bootstrap", b)
	want := "Dynamic configs for topic events are:\n" +
		"  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}\n" +
		"  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000, DEFAULT_CONFIG:log.retention.hours=168}\n"
	if r.stdout != want {
		t.Errorf("get stdout\n%s\nwant\n%s", r.stdout, want)
	}

	mustRun(t, "", "config", "delete", "topic", "events", "retention.ms", "--bootstrap", b)
	r = mustRun(t, "", "config", "get", "topic", "events", "--all", "--bootstrap", b)
	if !strings.HasPrefix(r.stdout, "All configs for topic events are:\n") ||
		!strings.Contains(r.stdout, "\n  retention.ms=604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}\n") ||
		!strings.Contains(r.stdout, "\n  cleanup.policy=compact ") {
		t.Errorf("get --all after delete:\n%s", r.stdout)
	}

	// Invalid keys are refused with the broker's message naming the key.
	r = samsa(t, "", "config", "set", "topic", "events", "retention.msec=5", "--bootstrap", b)
	if r.code != exitFail || !strings.Contains(r.stderr, "retention.msec") || !strings.Contains(r.stderr, "INVALID_CONFIG") {
		t.Errorf("bad key: exit %d stderr %q", r.code, r.stderr)
	}
	r = samsa(t, "", "config", "get", "topic", "nope", "--bootstrap", b)
	if r.code != exitFail || r.stderr != "samsa: topic \"nope\" does not exist\n" {
		t.Errorf("missing topic: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestConfigBroker(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "config", "set", "broker", "--default", "log.retention.ms=3600000", "--bootstrap", b)
	mustRun(t, "", "config", "set", "broker", "1", "message.max.bytes=2000000", "--bootstrap", b)

	r := mustRun(t, "", "config", "get", "broker", "--default", "--bootstrap", b)
	want := "Default configs for brokers in the cluster are:\n" +
		"  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}\n"
	if r.stdout != want {
		t.Errorf("get --default\n%s\nwant\n%s", r.stdout, want)
	}
	r = mustRun(t, "", "config", "get", "broker", "1", "--bootstrap", b)
	want = "Dynamic configs for broker 1 are:\n" +
		"  message.max.bytes=2000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}\n"
	if r.stdout != want {
		t.Errorf("get broker 1\n%s\nwant\n%s", r.stdout, want)
	}

	r = samsa(t, "", "config", "set", "broker", "1", "num.partitions=3", "--bootstrap", b)
	if r.code != exitFail || r.stderr != "samsa: alter configs of broker 1: Cannot update these configs dynamically: [num.partitions] (INVALID_REQUEST)\n" {
		t.Errorf("read-only key: exit %d stderr %q", r.code, r.stderr)
	}
	// A listener is bound and registered at start-up: setting one is
	// refused rather than stored and never applied.
	r = samsa(t, "", "config", "set", "broker", "1", "listeners=PLAINTEXT://127.0.0.1:1234", "--bootstrap", b)
	if r.code != exitFail || r.stdout != "" || !strings.Contains(r.stderr, "Cannot update these configs dynamically: [listeners]") ||
		!strings.Contains(r.stderr, "restart") || !strings.HasSuffix(r.stderr, "(INVALID_REQUEST)\n") {
		t.Errorf("listeners: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = mustRun(t, "", "config", "set", "broker", "1", "log.segment.bytes=2097152", "--dry-run", "--bootstrap", b)
	if r.stdout != "Validated config change for broker 1.\n" {
		t.Errorf("dry run stdout %q", r.stdout)
	}
	r = mustRun(t, "", "config", "get", "broker", "1", "--bootstrap", b)
	if strings.Contains(r.stdout, "log.segment.bytes") {
		t.Errorf("--dry-run changed the config:\n%s", r.stdout)
	}

	for _, args := range [][]string{
		{"config", "get"},
		{"config", "get", "group", "g"},
		{"config", "get", "broker", "x"},
		{"config", "set", "topic", "t"},
		{"config", "set", "topic", "t", "novalue"},
		{"config", "get", "topic", "t", "--default"},
	} {
		if r := samsa(t, "", append(args, "--bootstrap", b)...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitUsage)
		}
	}
}

func TestTopicTrim(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "logs", "--bootstrap", b)
	mustRun(t, "a\nb\nc\nd\n", "produce", "logs", "--bootstrap", b)

	r := samsa(t, "", "topic", "trim", "logs", "--partition", "0", "--offset", "9", "--bootstrap", b)
	if r.code != exitFail || !strings.Contains(r.stderr, "OFFSET_OUT_OF_RANGE") {
		t.Errorf("trim past the end: exit %d stderr %q", r.code, r.stderr)
	}
	if r := samsa(t, "", "topic", "trim", "logs", "--offset", "1", "--bootstrap", b); r.code != exitUsage {
		t.Errorf("trim without --partition: exit %d", r.code)
	}

	r = samsa(t, "", "topic", "trim", "logs", "--partition", "0", "--before-offset", "2", "--bootstrap", b)
	if r.code != 0 || r.stdout != "trimmed logs-0: low watermark 2\n" {
		t.Fatalf("trim: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = mustRun(t, "", "topic", "describe", "logs", "--bootstrap", b)
	rows := fields(r.stdout)
	if got, want := rows[len(rows)-1], []string{"0", "1", "0", "[1]", "[1]", "2", "4"}; !equalRows([][]string{got}, [][]string{want}) {
		t.Errorf("partition row after trim %q, want %q", got, want)
	}
}
