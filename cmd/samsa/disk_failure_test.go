package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/tmpfstest"
)

// A node whose only log directory fails stops, as Kafka halts such a
// broker, with a message naming the cause and exit status 1 — after a
// controlled shutdown rather than a halt. Its acknowledged records are
// there after a restart with space.
func TestAllLogDirsFailedStopsTheNode(t *testing.T) {
	data := tmpfstest.Mount(t, 4<<20)
	meta := t.TempDir()
	srv := startServerProc(t, data, "--override", "metadata.log.dir="+meta)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.DefaultProduceTopic("fill"),
		kgo.RecordRetries(0), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Created first: without retries, a produce that auto-creates the
	// topic fails (Kafka answers UNKNOWN_TOPIC_OR_PARTITION until it
	// exists, and so does Samsa).
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "fill"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	value := bytes.Repeat([]byte("x"), 64<<10)
	acked := 0
	var produceErr error
	for i := 0; i < 200 && produceErr == nil; i++ {
		if produceErr = cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); produceErr == nil {
			acked++
		}
	}
	// The answer is KAFKA_STORAGE_ERROR (internal/server's full-disk test
	// checks it); here the node may be gone before the client reads it.
	if produceErr == nil || acked == 0 {
		t.Fatalf("filling the disk: %d acknowledged, then %v", acked, produceErr)
	}
	cl.Close()

	select {
	case err := <-srv.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit: %v, want status 1\n%s", err, srv.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("node still running 30 s after its only log directory failed:\n%s", srv.stderr.String())
	}
	if log := srv.stderr.String(); !strings.Contains(log, "every log directory has failed") {
		t.Fatalf("no message naming the cause:\n%s", log)
	}

	// With space again (the tmpfs is remounted bigger), a restart serves
	// every acknowledged record.
	if out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", 64<<20), data).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	srv = startServerProc(t, data, "--override", "metadata.log.dir="+meta)
	got := consumeFrom(t, srv.addr, "fill")
	if len(got) < acked {
		t.Fatalf("%d records after restart, %d were acknowledged", len(got), acked)
	}
	for i, r := range got[:acked] {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, value) {
			t.Fatalf("record %d after restart: offset %d, %d bytes", i, r.Offset, len(r.Value))
		}
	}
}
