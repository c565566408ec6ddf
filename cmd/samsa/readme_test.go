package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeExample is the README's example block: the first ```sh block
// after the "## Using it" heading, one command a line.
func readmeExample(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Using it\n")
	if !ok {
		t.Fatal(`README.md has no "## Using it" section`)
	}
	_, rest, ok = strings.Cut(rest, "\n```sh\n")
	if !ok {
		t.Fatal(`README.md's "Using it" section has no sh block`)
	}
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatal("README.md's example block does not end")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// The README's example block runs top to bottom as written, each line
// by sh as a user pastes it, against a fresh node: every command exits 0.
// `samsa` on the PATH is this test binary running the CLI, pointed at
// the node (the block relies on the default --bootstrap, which a test
// cannot take). A command that reads stdin (user create's password) gets
// a line.
func TestReadmeExample(t *testing.T) {
	lines := readmeExample(t)
	if len(lines) < 10 || !strings.HasPrefix(lines[0], "samsa topic create orders") {
		t.Fatalf("example block not found where expected: %q", lines)
	}
	b := startTestCluster(t)
	bin := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nSAMSA_RUN_MAIN=1 exec %q \"$@\" --bootstrap %s\n", os.Args[0], b)
	if err := os.WriteFile(filepath.Join(bin, "samsa"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SAMSA_USER_PASSWORD=")
	outputs := map[string]string{}
	for i, line := range lines {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Env, cmd.Dir = env, t.TempDir()
		cmd.Stdin = strings.NewReader("readme-password\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("README example line %d fails (%v):\n  %s\n%s", i+1, err, line, out.String())
		}
		outputs[strings.Join(strings.Fields(line)[:3], " ")] = out.String()
	}
	// What the block promises, besides exiting 0.
	if got := outputs["samsa consume orders"]; !strings.Contains(got, "k1\thello") || !strings.Contains(got, "k2\tworld") {
		t.Errorf("consume printed:\n%s", got)
	}
	if got := outputs["samsa topic trim"]; !strings.Contains(got, "low watermark 1") {
		t.Errorf("trim printed:\n%s", got)
	}
	if got := outputs["samsa user list"]; !strings.Contains(got, "alice") {
		t.Errorf("user list printed:\n%s", got)
	}
	r := mustRun(t, "", "topic", "list", "--bootstrap", b)
	if strings.Contains(r.stdout, "orders") {
		t.Errorf("orders still listed after the block deleted it:\n%s", r.stdout)
	}
}
