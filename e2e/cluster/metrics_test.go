package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// gauge scrapes one unlabelled gauge or counter from a node's /metrics.
func gauge(url, name string) (float64, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	f, ok := fams[name]
	if !ok || len(f.Metric) != 1 {
		return 0, fmt.Errorf("no single series of %s", name)
	}
	m := f.Metric[0]
	if m.Counter != nil {
		return m.Counter.GetValue(), nil
	}
	return m.Gauge.GetValue(), nil
}

// TestUnderReplicatedPartitionsRisesWhenAFollowerDies: on a cluster of
// three processes serving /metrics, the leader of a partition of three
// replicas (min.insync.replicas=3) reports it under-replicated and under
// its min ISR once a follower is killed with SIGKILL, and counts the ISR
// shrink; its /readyz stays 200.
func TestUnderReplicatedPartitionsRisesWhenAFollowerDies(t *testing.T) {
	const topic = "watched"
	ports := loopbackPorts(t, 3)
	c := startClusterWith(t, devcluster.Config{Nodes: 3, NodeProperties: func(id int32) []string {
		return []string{fmt.Sprintf("http.listeners=http://127.0.0.1:%d", ports[id-1])}
	}})
	url := func(id int32) string { return fmt.Sprintf("http://127.0.0.1:%d", ports[id-1]) }
	adm := kadm.NewClient(client(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	minISR := "3"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	p := waitFullISR(t, adm, topic, 30*time.Second)[0]
	leader := url(p.Leader)
	// The internal topics (replication factor 3 here) may still be
	// filling their ISRs: wait until the leader has nothing under-replicated.
	waitFor(t, 30*time.Second, "no under-replicated partition on the leader", func() (bool, string) {
		v, err := gauge(leader, "kafka_server_replicamanager_underreplicatedpartitions")
		return err == nil && v == 0, fmt.Sprint(v, err)
	})
	shrinks, err := gauge(leader, "kafka_server_replicamanager_isrshrinks_total")
	if err != nil {
		t.Fatal(err)
	}
	var victim int32 = -1
	for _, id := range p.Replicas {
		if id != p.Leader {
			victim = id
		}
	}
	c.Node(victim).Kill()
	t.Logf("killed follower %d of %s; leader %d", victim, topic, p.Leader)
	for _, name := range []string{"kafka_server_replicamanager_underreplicatedpartitions", "kafka_server_replicamanager_underminisrpartitioncount"} {
		waitFor(t, 60*time.Second, name+" rises on the leader", func() (bool, string) {
			v, err := gauge(leader, name)
			return err == nil && v >= 1, fmt.Sprint(v, err)
		})
	}
	if v, err := gauge(leader, "kafka_server_replicamanager_isrshrinks_total"); err != nil || v <= shrinks {
		t.Errorf("isrshrinks_total on the leader: %v (%v), was %v", v, err, shrinks)
	}
	resp, err := http.Get(leader + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("leader's /readyz with a follower down: %d, want 200", resp.StatusCode)
	}
}
