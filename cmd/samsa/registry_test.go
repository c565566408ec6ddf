package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

var registryRE = regexp.MustCompile(`schema registry listening" listener=(\S+)`)

// TestRegistryCommands serves the Schema Registry from `samsa server`
// (schema.registry.listeners) and from `samsa registry` on the same
// cluster, one after the other, and checks through franz-go's sr client
// that the second sees what the first stored.
func TestRegistryCommands(t *testing.T) {
	srv := startServerProc(t, t.TempDir(), "--override", "schema.registry.listeners=http://127.0.0.1:0")
	url := waitFor(t, registryRE, srv.stderr.String)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first write waits for the leader election (the group's 3 s
	// initial rebalance delay): more than sr's 5 s default timeout
	// allows on a loaded machine.
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	const schema = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	id, err := cl.RegisterSchema(ctx, "r-value", sr.Schema{Schema: schema}, -1, -1)
	if err != nil {
		t.Fatalf("register through samsa server: %v", err)
	}

	// samsa schema, in-process, against the same registry.
	const v2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0}]}`
	const bad = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"c","type":"int"}]}`
	if out := mustRun(t, "", "schema", "register", "r-value", "--schema", v2, "--registry", url).stdout; strings.TrimSpace(out) == strconv.Itoa(id) {
		t.Errorf("schema register: id %s, want a new one", out)
	}
	if out := mustRun(t, "", "schema", "list", "--registry", url).stdout; out != "r-value\n" {
		t.Errorf("schema list: %q", out)
	}
	if out := mustRun(t, "", "schema", "list", "r-value", "--registry", url).stdout; out != "1\n2\n" {
		t.Errorf("schema list r-value: %q", out)
	}
	if out := mustRun(t, "", "schema", "get", "r-value", "--version", "1", "--registry", url).stdout; out != schema+"\n" {
		t.Errorf("schema get: %q", out)
	}
	r := samsa(t, "", "schema", "compat", "r-value", "--schema", bad, "--registry", url)
	if r.code != exitFail || !strings.HasPrefix(r.stdout, "incompatible") || !strings.Contains(r.stdout, "'c'") {
		t.Errorf("schema compat: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if out := mustRun(t, "", "schema", "compat", "r-value", "--schema", v2, "--version", "1", "--registry", url).stdout; out != "compatible\n" {
		t.Errorf("schema compat --version 1: %q", out)
	}
	if r := samsa(t, "", "schema", "get", "nobody", "--registry", url); r.code != exitFail || !strings.Contains(r.stderr, "Subject 'nobody' not found") {
		t.Errorf("schema get of an unknown subject: exit %d, %q", r.code, r.stderr)
	}
	// A Protobuf schema importing another, the import given with --ref.
	mustRun(t, "", "schema", "register", "geo.proto", "--type", "protobuf", "--schema", "syntax = \"proto3\"; package geo; message Point { double x = 1; }", "--registry", url)
	main := "syntax = \"proto3\"; import \"geo.proto\"; message Place { geo.Point at = 1; }"
	if r := samsa(t, "", "schema", "register", "place-value", "--type", "protobuf", "--schema", main, "--registry", url); r.code == 0 {
		t.Errorf("a Protobuf import without its reference registered: %q", r.stdout)
	}
	mustRun(t, "", "schema", "register", "place-value", "--type", "protobuf", "--schema", main, "--ref", "geo.proto=geo.proto:1", "--registry", url)
	if got, err := cl.SchemaByVersion(ctx, "place-value", 1); err != nil || got.Type != sr.TypeProtobuf || len(got.References) != 1 || got.References[0].Subject != "geo.proto" {
		t.Errorf("place-value: %+v, %v", got, err)
	}
	// JSON Schema: dropping a property from a closed content model is
	// not backward compatible.
	const j1 = `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`
	const jBad = `{"type":"object","additionalProperties":false}`
	mustRun(t, "", "schema", "register", "j-value", "--type", "JSON", "--schema", j1, "--registry", url)
	r = samsa(t, "", "schema", "compat", "j-value", "--type", "JSON", "--schema", jBad, "--registry", url)
	if r.code != exitFail || !strings.Contains(r.stdout, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL") || !strings.Contains(r.stdout, "#/properties/a") {
		t.Errorf("schema compat --type JSON: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}

	// --context: ids of their own, subjects qualified with the context.
	if out := mustRun(t, "", "schema", "register", "r-value", "--schema", `"string"`, "--context", ".staging", "--registry", url).stdout; out != "1\n" {
		t.Errorf("schema register --context .staging: id %q, want 1 (the context's first)", out)
	}
	if out := mustRun(t, "", "schema", "get", "--id", "1", "--context", ".staging", "--registry", url).stdout; out != `"string"`+"\n" {
		t.Errorf("schema get --id 1 --context .staging: %q", out)
	}
	if out := mustRun(t, "", "schema", "get", "--id", strconv.Itoa(id), "--registry", url).stdout; out != schema+"\n" {
		t.Errorf("schema get --id %d in the default context: %q", id, out)
	}
	if out := mustRun(t, "", "schema", "list", "--context", ".staging", "--registry", url).stdout; out != ":.staging:r-value\n" {
		t.Errorf("schema list --context .staging: %q", out)
	}

	cmd := exec.Command(os.Args[0], "registry", "--bootstrap", srv.addr, "--listen", "http://127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SAMSA_RUN_MAIN=1")
	out := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	cl2, err := sr.NewClient(sr.URLs(waitFor(t, registryRE, out.String)), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl2.SchemaByID(ctx, id)
	if err != nil || got.Schema != schema {
		t.Fatalf("samsa registry: schema %d = %+v, %v", id, got, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("samsa registry exit: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("samsa registry did not stop on SIGTERM:\n%s", out.String())
	}
}

// waitFor waits until re matches the output and returns its first group.
func waitFor(t *testing.T, re *regexp.Regexp, output func() string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(output()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %q in:\n%s", re, output())
	return ""
}
