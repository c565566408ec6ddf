package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/devcluster"
)

// stockProperties is the server.properties Apache Kafka 4.x ships for a
// single KRaft node (config/server.properties), byte for byte.
const stockProperties = "../config/testdata/server.properties"

// freePort returns a loopback port nobody listens on right now. The stock
// file names fixed ports (9092, 9093); the test moves them so that it never
// clashes with a real Kafka on the machine.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := devcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// TestStockServerProperties: the stock Kafka file starts a Samsa node with
// only its data directory and ports changed, and a client can create a
// topic, produce and consume on it.
func TestStockServerProperties(t *testing.T) {
	text, err := os.ReadFile(stockProperties)
	if err != nil {
		t.Fatal(err)
	}
	// The overrides replace exactly the lines a user would have to change
	// to run next to another broker; make sure they exist in the file, so
	// the test notices if the fixture stops being the stock file.
	for _, key := range []string{"log.dirs", "listeners", "advertised.listeners", "controller.quorum.bootstrap.servers", "process.roles", "node.id"} {
		if !strings.Contains(string(text), "\n"+key+"=") {
			t.Fatalf("%s has no %s line: not the stock file", stockProperties, key)
		}
	}
	port, ctrlPort := freePort(t), freePort(t)
	cfg, warnings, err := config.Load(stockProperties, []string{
		"log.dirs=" + t.TempDir(),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrlPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrlPort),
		fmt.Sprintf("controller.quorum.bootstrap.servers=127.0.0.1:%d", ctrlPort),
	})
	if err != nil {
		t.Fatalf("config.Load(stock server.properties): %v", err)
	}
	for _, w := range warnings {
		// Warnings are allowed (e.g. tuning keys Samsa ignores), but they
		// must not be about the lines Samsa needs.
		t.Logf("warning: %s", w)
		for _, key := range []string{"process.roles", "node.id", "listeners", "log.dirs", "controller.listener.names"} {
			if strings.HasPrefix(w, key+":") || strings.Contains(w, " "+key+" ") {
				t.Errorf("warning about a key Samsa must understand: %s", w)
			}
		}
	}
	if cfg.NodeID != 1 {
		t.Fatalf("node.id %d, want 1 from the file", cfg.NodeID)
	}
	if cfg.SocketRequestMaxBytes != 104857600 {
		t.Fatalf("socket.request.max.bytes %d, want 104857600 from the file", cfg.SocketRequestMaxBytes)
	}

	s := start(t, cfg)
	defer s.Close()
	addr := s.Addr("PLAINTEXT")
	if want := fmt.Sprintf("127.0.0.1:%d", port); addr != want {
		t.Fatalf("serving on %s, want %s", addr, want)
	}
	// The data directory was formatted like kafka-storage.sh format does.
	if _, err := os.Stat(filepath.Join(cfg.LogDirs[0], "meta.properties")); err != nil {
		t.Fatalf("meta.properties: %v", err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, 2, 1, nil, "stock")
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v / %v", err, created.Err)
	}
	// The broker advertises the overridden address, not localhost:9092.
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 1 || md.Brokers[0].Host != "127.0.0.1" || md.Brokers[0].Port != int32(port) {
		t.Fatalf("brokers %+v, want node 1 at 127.0.0.1:%d", md.Brokers, port)
	}
	produce(t, cl, "stock", 10, 0)
	got := consumeAll(t, addr, "stock", 10)
	if len(got) != 10 {
		t.Fatalf("consumed %d records, want 10", len(got))
	}
	// produce leaves partitioning to kgo's default partitioner, so the
	// records spread over both partitions: check each partition holds a
	// gapless run from offset 0 in produce order, and that all 10 arrived.
	next := map[int32]int64{}
	lastKey := map[int32]int{}
	seen := map[string]bool{}
	for _, r := range got {
		var k int
		if _, err := fmt.Sscanf(string(r.Key), "k%d", &k); err != nil || string(r.Value) != fmt.Sprintf("v%d", k) {
			t.Fatalf("record p%d@%d: %q=%q", r.Partition, r.Offset, r.Key, r.Value)
		}
		if r.Offset != next[r.Partition] {
			t.Fatalf("p%d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		if prev, ok := lastKey[r.Partition]; ok && k <= prev {
			t.Fatalf("p%d: k%d after k%d, out of produce order", r.Partition, k, prev)
		}
		next[r.Partition]++
		lastKey[r.Partition] = k
		seen[string(r.Key)] = true
	}
	if len(seen) != 10 || next[0]+next[1] != 10 {
		t.Fatalf("distinct keys %d, partition ends %v; want 10 records", len(seen), next)
	}
}

// TestInvalidPropertyNamesKey: a bad value in a properties file stops
// start-up with an error that names the key, so the user knows which line
// to fix.
func TestInvalidPropertyNamesKey(t *testing.T) {
	for _, tc := range []struct{ key, line string }{
		{"num.partitions", "num.partitions=three"},
		{"log.retention.hours", "log.retention.hours=1.5days"},
		{"socket.request.max.bytes", "socket.request.max.bytes=0"},
		{"node.id", "node.id=-x"},
	} {
		text, err := os.ReadFile(stockProperties)
		if err != nil {
			t.Fatal(err)
		}
		// Replace the key's line in the stock file where it has one, so
		// the bad value is the only change.
		lines := strings.Split(string(text), "\n")
		replaced := false
		for i, l := range lines {
			if strings.HasPrefix(l, tc.key+"=") {
				lines[i], replaced = tc.line, true
			}
		}
		if !replaced {
			lines = append(lines, tc.line)
		}
		path := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err = config.Load(path, []string{"log.dirs=" + t.TempDir()})
		if err == nil {
			t.Errorf("%s: config.Load accepted it", tc.line)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error %q does not name %s", tc.line, err, tc.key)
		}
	}
}
