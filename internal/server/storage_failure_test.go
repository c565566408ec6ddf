package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/tmpfstest"
)

// TestFullDiskAnswersStorageError fills a real (tmpfs) log directory while
// producing. Kafka's behaviour is the reference: the produce that hits the
// full disk answers KAFKA_STORAGE_ERROR (not UNKNOWN_SERVER_ERROR), the
// partition stays offline with that error until restart even once space
// is freed (an IOException takes the log directory offline), the broker
// keeps serving everything else, and after a restart every acknowledged
// record is there and produce works again.
func TestFullDiskAnswersStorageError(t *testing.T) {
	data := tmpfstest.Mount(t, 4<<20)
	// The metadata log lives elsewhere: this test is about partition logs.
	overrides := []string{
		"log.dirs=" + data,
		"metadata.log.dir=" + t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
	}
	cfg, _, err := config.Load("", overrides)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, cfg)
	defer func() { s.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")), kgo.DefaultProduceTopic("full"),
			kgo.RecordRetries(0), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := newClient()
	defer func() { cl.Close() }()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "full"); err != nil {
		t.Fatal(err)
	}
	// A filler leaves about 1 MiB free, which the records then fill.
	filler := filepath.Join(data, "filler")
	if err := os.WriteFile(filler, make([]byte, 3<<20), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Logf("filler: %v (the records fill the rest)", err)
	}

	value := bytes.Repeat([]byte("x"), 32<<10)
	var acked []string
	var produceErr error
	for i := 0; i < 1000 && produceErr == nil; i++ {
		v := fmt.Sprintf("%d:%s", i, value)
		produceErr = cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
		if produceErr == nil {
			acked = append(acked, v)
		}
	}
	if !errors.Is(produceErr, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk after %d acknowledged records: %v, want KAFKA_STORAGE_ERROR", len(acked), produceErr)
	}
	if len(acked) == 0 {
		t.Fatal("no record was acknowledged before the disk filled")
	}
	// Its only log directory failed: the node tells its owner to stop it,
	// as Kafka halts a broker with no log directory left.
	select {
	case <-s.Failed():
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), "every log directory has failed") {
			t.Fatalf("node failure: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the node did not report that its only log directory failed")
	}

	// Space returns, but the partition stays offline until restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to the offline partition after freeing space: %v, want KAFKA_STORAGE_ERROR", err)
	}
	// The broker still serves what does not touch the failed log.
	if _, err := adm.ListTopics(ctx); err != nil {
		t.Fatalf("metadata while a partition is offline: %v", err)
	}
	// DescribeLogDirs says the directory is offline, as Kafka's does.
	dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := dirs[data]; !ok || !errors.Is(d.Err, kerr.KafkaStorageError) || len(d.Topics) != 0 {
		t.Fatalf("DescribeLogDirs of the failed directory: %+v", dirs)
	}
	// and AlterReplicaLogDirs refuses it.
	var move kadm.AlterReplicaLogDirsReq
	move.Add(data, kadm.TopicsSet{"full": {0: {}}})
	moved, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, move)
	if err != nil {
		t.Fatal(err)
	}
	if r := moved["full"][0]; !errors.Is(r.Err, kerr.KafkaStorageError) {
		t.Fatalf("AlterReplicaLogDirs to the failed directory: %+v", moved)
	}

	cl.Close()
	if err := s.Close(); err == nil {
		t.Log("close reported no error for the offline log")
	}
	cfg, _, err = config.Load("", overrides)
	if err != nil {
		t.Fatal(err)
	}
	s = start(t, cfg)
	cl = newClient()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after restart")}).FirstErr(); err != nil {
		t.Fatalf("produce after restart with space: %v", err)
	}
	got := consumeAll(t, s.Addr("PLAINTEXT"), "full", len(acked)+1)
	for i, v := range acked {
		if string(got[i].Value) != v || got[i].Offset != int64(i) {
			t.Fatalf("record %d after restart: offset %d, %d bytes; want the acknowledged record", i, got[i].Offset, len(got[i].Value))
		}
	}
	if last := got[len(acked)]; string(last.Value) != "after restart" {
		t.Fatalf("record after the acknowledged ones: %q", last.Value)
	}
}
