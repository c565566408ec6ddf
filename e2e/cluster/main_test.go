// Package cluster tests Samsa as a cluster of separate processes on
// loopback: nodes are killed with SIGKILL, paused with SIGSTOP and
// restarted while real clients produce and consume, and the tests check
// what users check — that acknowledged records survive, in order, once.
package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/e2e/clustertest"
	"github.com/samsa-io/samsa/internal/devcluster"
)

// binary is the samsa executable built once for all tests.
var binary string

func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m, "samsa-cluster-test", &binary))
}

// fastFailover makes a killed broker's session expire in seconds rather
// than Kafka's 9, so the tests spend their time on failovers, not waiting.
var fastFailover = []string{
	"broker.session.timeout.ms=3000",
	"broker.heartbeat.interval.ms=300",
	"replica.lag.time.max.ms=5000",
	"replica.fetch.wait.max.ms=200",
	"offsets.topic.replication.factor=3",
	"transaction.state.log.replication.factor=3",
	"transaction.state.log.min.isr=2",
	"group.initial.rebalance.delay.ms=0",
}

// startCluster starts n nodes and stops them when the test ends, printing
// the end of every node's log if the test failed.
func startCluster(t *testing.T, n int, props ...string) *devcluster.Cluster {
	t.Helper()
	return startClusterWith(t, devcluster.Config{Nodes: n, Properties: props})
}

// startClusterWith is startCluster for a configuration of its own: Dir,
// Binary and the fastFailover properties are filled in.
func startClusterWith(t *testing.T, cfg devcluster.Config) *devcluster.Cluster {
	t.Helper()
	dir := t.TempDir()
	n := cfg.Nodes
	cfg.Dir, cfg.Binary = dir, binary
	cfg.Properties = append(append([]string{}, fastFailover...), cfg.Properties...)
	c, err := devcluster.Start(cfg)
	if err != nil {
		dumpLogs(t, dir, n)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			dumpLogs(t, dir, n)
		}
	})
	return c
}

func dumpLogs(t *testing.T, dir string, n int) { clustertest.DumpLogs(t, dir, n, 40) }

// client is a client of the cluster. Its metadata cache lives 100 ms
// rather than franz-go's 5 s: kadm answers Metadata (describe,
// waitFullISR) from that cache, and a test must see leaders and ISRs
// change as they do, not seconds late.
func client(t *testing.T, c *devcluster.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// partitionInfo is one partition's leadership as metadata reports it.
type partitionInfo struct {
	Leader   int32
	Replicas []int32
	ISR      []int32
}

// describe returns the partitions of a topic and the active controller
// from a metadata answer at most 100 ms old (client).
func describe(ctx context.Context, adm *kadm.Client, topic string) (map[int32]partitionInfo, int32, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, -1, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, -1, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	out := map[int32]partitionInfo{}
	for _, p := range td.Partitions {
		out[p.Partition] = partitionInfo{Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
	}
	return out, md.Controller, nil
}

// waitFor polls cond every 100 ms until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v (last state: %s)", what, timeout, last)
}

// waitFullISR waits until every partition of topic has a leader and all
// its replicas in the ISR.
func waitFullISR(t *testing.T, adm *kadm.Client, topic string, timeout time.Duration) map[int32]partitionInfo {
	t.Helper()
	var parts map[int32]partitionInfo
	waitFor(t, timeout, "every replica of "+topic+" in sync", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, _, err := describe(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		for _, pi := range p {
			if pi.Leader < 0 || len(pi.ISR) != len(pi.Replicas) {
				return false, fmt.Sprintf("%+v", p)
			}
		}
		parts = p
		return len(p) > 0, fmt.Sprintf("%+v", p)
	})
	return parts
}
