package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestJBODAlterReplicaLogDirsWhileProducing: with two log.dirs, kadm moves
// both partitions of a topic to the other directory (AlterReplicaLogDirs)
// while an idempotent acks=all producer keeps writing. DescribeLogDirs
// ends with each partition in its new directory; the old directories are
// gone from disk; and every acknowledged record is read back in order,
// offsets as acknowledged, before and after a restart.
func TestJBODAlterReplicaLogDirsWhileProducing(t *testing.T) {
	ctx := testContext(t)
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	props := []string{"log.dirs=" + dirA + "," + dirB}
	srv := servertest.StartIn(t, dirA, props...)
	addr := servertest.Addr(srv)
	adm := newKadm(t, addr)
	topic := topicName("franz", "jbod-move")
	segment := "1048576" // several segments to copy
	franzCreate(t, ctx, adm, topic, 2, map[string]*string{"segment.bytes": &segment})

	before := logDirsOf(t, ctx, adm, topic)
	if len(before) != 2 {
		t.Fatalf("DescribeLogDirs before the move: %v", before)
	}

	// The producer: acks=all (franz-go's default), idempotent, 40-record
	// batches alternating between the partitions.
	prod := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var mu sync.Mutex
	acked := map[int32][]ackedRecord{}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked[0]) + len(acked[1])
	}
	stop := make(chan struct{})
	prodDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				prodDone <- nil
				return
			default:
			}
			var recs []*kgo.Record
			for j := range 40 {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2),
					Value: fmt.Appendf(nil, "%08d-%03d-%s", i, j, strings.Repeat("v", 1000))})
			}
			for _, r := range prod.ProduceSync(ctx, recs...) {
				if r.Err != nil {
					prodDone <- fmt.Errorf("produce: %w", r.Err)
					return
				}
				mu.Lock()
				acked[r.Record.Partition] = append(acked[r.Record.Partition], ackedRecord{r.Record.Offset, string(r.Record.Value)})
				mu.Unlock()
			}
		}
	}()
	waitFor(t, ctx, "the producer to write 4000 records", func() bool { return count() >= 4000 })

	// A partition with no replica here is REPLICA_NOT_AVAILABLE (and a
	// directory not in log.dirs LOG_DIR_NOT_FOUND: robust_test.go).
	var none kadm.AlterReplicaLogDirsReq
	none.Add(dirB, kadm.TopicsSet{topic + "-absent": {0: {}}})
	noneResps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, none)
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	answered := 0
	noneResps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		answered++
		if !errors.Is(r.Err, kerr.ReplicaNotAvailable) {
			t.Errorf("AlterReplicaLogDirs of %s-%d: %v, want REPLICA_NOT_AVAILABLE", r.Topic, r.Partition, r.Err)
		}
	})
	if answered != 1 {
		t.Errorf("AlterReplicaLogDirs answered for %d partitions, want 1", answered)
	}

	target := map[int32]string{}
	var req kadm.AlterReplicaLogDirsReq
	for p, dir := range before {
		target[p] = dirA
		if sameDir(dir, dirA) {
			target[p] = dirB
		}
		req.Add(target[p], kadm.TopicsSet{topic: {p: {}}})
	}
	resps, err := adm.AlterAllReplicaLogDirs(ctx, req)
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	n := 0
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		n++
		if r.Err != nil {
			t.Errorf("AlterReplicaLogDirs %s-%d to %s: %v", r.Topic, r.Partition, r.Dir, r.Err)
		}
	})
	if n != 2 {
		t.Fatalf("AlterReplicaLogDirs answered for %d partitions, want 2", n)
	}
	waitFor(t, ctx, "both partitions in their new log directories", func() bool {
		now := logDirsOf(t, ctx, adm, topic)
		return len(now) == 2 && sameDir(now[0], target[0]) && sameDir(now[1], target[1])
	})
	moved := count()
	waitFor(t, ctx, "1000 more records after the move", func() bool { return count() >= moved+1000 })
	close(stop)
	if err := <-prodDone; err != nil {
		t.Fatal(err)
	}

	for p, dir := range before {
		old, now := filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p)), filepath.Join(target[p], fmt.Sprintf("%s-%d", topic, p))
		if _, err := os.Stat(now); err != nil {
			t.Errorf("partition %d: %v", p, err)
		}
		waitFor(t, ctx, "the old log directory of partition "+fmt.Sprint(p)+" to be removed", func() bool {
			_, err := os.Stat(old)
			return os.IsNotExist(err) && len(leftovers(t, dir, topic)) == 0
		})
	}
	checkAcked(t, ctx, addr, topic, acked)

	srv.Close()
	srv = servertest.StartIn(t, dirA, props...)
	addr = servertest.Addr(srv)
	if now := logDirsOf(t, ctx, newKadm(t, addr), topic); !sameDir(now[0], target[0]) || !sameDir(now[1], target[1]) {
		t.Errorf("after restart DescribeLogDirs says %v, want %v", now, target)
	}
	checkAcked(t, ctx, addr, topic, acked)
}

type ackedRecord struct {
	offset int64
	value  string
}

// logDirsOf is the log directory of each partition of topic, from
// DescribeLogDirs; a partition with a future replica is left out until
// the move ends.
func logDirsOf(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[int32]string {
	t.Helper()
	all, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatalf("DescribeLogDirs: %v", err)
	}
	out, moving := map[int32]string{}, map[int32]bool{}
	for _, dirs := range all {
		dirs.EachPartition(func(d kadm.DescribedLogDirPartition) {
			if d.IsFuture {
				moving[d.Partition] = true
			} else {
				out[d.Partition] = d.Dir
			}
		})
	}
	for p := range moving {
		delete(out, p)
	}
	return out
}

func sameDir(a, b string) bool { return filepath.Clean(a) == filepath.Clean(b) }

// leftovers are the future or deleted directories of topic in dir.
func leftovers(t *testing.T, dir, topic string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), topic) && (strings.HasSuffix(e.Name(), "-future") || strings.HasSuffix(e.Name(), "-delete")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitFor polls cond until it holds or the test's context ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkAcked reads each partition from its start and wants exactly the
// acknowledged records, at the offsets they were acknowledged with.
func checkAcked(t *testing.T, ctx context.Context, addr, topic string, acked map[int32][]ackedRecord) {
	t.Helper()
	starts := map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}
	cl := newKgo(t, addr, kgo.ConsumePartitions(starts))
	got := map[int32][]ackedRecord{}
	for len(got[0]) < len(acked[0]) || len(got[1]) < len(acked[1]) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d and %d records of %d and %d: %v", len(got[0]), len(got[1]), len(acked[0]), len(acked[1]), ctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], ackedRecord{r.Offset, string(r.Value)})
		})
	}
	cl.Close()
	for p, want := range acked {
		if len(got[p]) != len(want) {
			t.Fatalf("partition %d: read %d records, %d acknowledged", p, len(got[p]), len(want))
		}
		for i := range want {
			if got[p][i] != want[i] {
				t.Fatalf("partition %d record %d: read offset %d %.12q, acknowledged offset %d %.12q",
					p, i, got[p][i].offset, got[p][i].value, want[i].offset, want[i].value)
			}
		}
	}
}

// TestJBODMoveSurvivesKill: a node moving both partitions of a topic to
// its other log directory is killed (SIGKILL) right after
// AlterReplicaLogDirs answers, wherever the copy or the swap is. After a
// restart the move completes (resumed, or finished by recovery), and every
// record acknowledged before the kill is read back at its offset.
func TestJBODMoveSurvivesKill(t *testing.T) {
	ctx := testContext(t)
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
	props := "log.dirs=" + dirA + "," + dirB
	addr, kill := startKillable(t, dirA, props)
	adm := newKadm(t, addr)
	topic := topicName("franz", "jbod-kill")
	franzCreate(t, ctx, adm, topic, 2, nil)
	prod := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	acked := map[int32][]ackedRecord{}
	for i := range 30 {
		var recs []*kgo.Record
		for j := range 50 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2),
				Value: fmt.Appendf(nil, "%04d-%02d-%s", i, j, strings.Repeat("k", 500))})
		}
		for _, r := range prod.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				t.Fatalf("produce: %v", r.Err)
			}
			acked[r.Record.Partition] = append(acked[r.Record.Partition], ackedRecord{r.Record.Offset, string(r.Record.Value)})
		}
	}
	prod.Close()
	before := logDirsOf(t, ctx, adm, topic)
	target := map[int32]string{}
	var req kadm.AlterReplicaLogDirsReq
	for p, dir := range before {
		target[p] = dirA
		if sameDir(dir, dirA) {
			target[p] = dirB
		}
		req.Add(target[p], kadm.TopicsSet{topic: {p: {}}})
	}
	resps, err := adm.AlterAllReplicaLogDirs(ctx, req)
	if err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	kill()

	addr, _ = startKillable(t, dirA, props)
	adm = newKadm(t, addr)
	waitFor(t, ctx, "both partitions in their new log directories after the restart", func() bool {
		now := logDirsOf(t, ctx, adm, topic)
		return len(now) == 2 && sameDir(now[0], target[0]) && sameDir(now[1], target[1])
	})
	checkAcked(t, ctx, addr, topic, acked)
}
