package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestWordCountProgram builds the program, runs it against a broker, reads
// the counts back and stops it with SIGTERM: it must exit 0.
func TestWordCountProgram(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "wordcount")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := servertest.Addr(servertest.Start(t))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, topic := range []string{"in", "out"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	lines := []string{"all streams lead to kafka", "hello kafka streams", "join kafka summit"}
	for _, l := range lines {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte(l)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{}
	for _, l := range lines {
		for _, w := range strings.Fields(l) {
			want[w]++
		}
	}

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--bootstrap", addr, "--input", "in", "--output", "out", "--application-id", "wc-demo")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()

	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]int64{}
	for !equal(got, want) {
		select {
		case err := <-exited:
			t.Fatalf("wordcount exited early: %v\n%s", err, stderr.String())
		default:
		}
		if ctx.Err() != nil {
			t.Fatalf("counts: got %v, want %v\n%s", got, want, stderr.String())
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Fatalf("value %q is not a decimal count", r.Value)
			}
			got[string(r.Key)] = n
		})
		pcancel()
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit 60s after SIGTERM\n%s", stderr.String())
	}
}

func equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
