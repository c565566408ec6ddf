package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/connect"
	"github.com/samsa-io/samsa/internal/servertest"
)

// TestConnectCommands drives a standalone worker with `samsa connect`
// create, list, status, pause, resume, restart and delete.
func TestConnectCommands(t *testing.T) {
	bootstrap := startTestCluster(t)
	dir := t.TempDir()
	cfg, err := connect.ParseWorkerConfig(map[string]string{
		"bootstrap.servers": bootstrap, "listeners": "http://127.0.0.1:0",
		"key.converter": "StringConverter", "value.converter": "StringConverter",
		"offset.storage.file.filename": filepath.Join(dir, "offsets"),
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := connect.Start(ctx, cfg, connect.Options{Logger: servertest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	url := w.URL()

	props := filepath.Join(dir, "gen.properties")
	os.WriteFile(props, []byte("name=gen\nconnector.class=Datagen\ntopic=gen\nmax.records=5\ninterval.ms=0\n"), 0o644)
	if out := mustRun(t, "", "connect", "create", props, "--url", url).stdout; !strings.Contains(out, `"name": "gen"`) {
		t.Fatalf("create: %s", out)
	}
	if r := samsa(t, "", "connect", "create", props, "--url", url); r.code != exitFail || !strings.Contains(r.stderr, "409: Connector gen already exists") {
		t.Fatalf("create twice: %+v", r)
	}
	if out := mustRun(t, "", "connect", "list", "--url", url).stdout; out != "gen\n" {
		t.Fatalf("list: %q", out)
	}
	state := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out := mustRun(t, "", "connect", "status", "gen", "--url", url).stdout
			if strings.Count(out, fmt.Sprintf(`"state": %q`, want)) == 2 { // the connector and its task
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status never %s: %s", want, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	state("RUNNING")
	mustRun(t, "", "connect", "pause", "gen", "--url", url)
	state("PAUSED")
	mustRun(t, "", "connect", "resume", "gen", "--url", url)
	state("RUNNING")
	mustRun(t, "", "connect", "restart", "gen", "--include-tasks", "--url", url)
	state("RUNNING")
	mustRun(t, "", "connect", "delete", "gen", "--url", url)
	if r := samsa(t, "", "connect", "status", "gen", "--url", url); r.code != exitFail || !strings.Contains(r.stderr, "404") {
		t.Fatalf("status after delete: %+v", r)
	}
	if r := samsa(t, "", "connect", "delete"); r.code != exitUsage {
		t.Fatalf("delete without a name: %+v", r)
	}
}
