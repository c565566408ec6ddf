package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// --format json on the listing commands prints what the text table
// shows, as JSON a script can read; an unknown format is a usage error.
func TestListingsAsJSON(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "orders", "--partitions", "3", "--bootstrap", b)
	mustRun(t, "", "topic", "create", "audit", "--partitions", "1", "--bootstrap", b)
	produceTo(t, b, "orders", 0, 2, time.Now())
	joinAndConsume(t, b, "billing-g", "orders", 2)

	var topics []struct {
		Name              string `json:"name"`
		ID                string `json:"id"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
		Internal          bool   `json:"internal"`
	}
	decode(t, mustRun(t, "", "topic", "list", "--format", "json", "--bootstrap", b).stdout, &topics)
	if len(topics) != 2 || topics[0].Name != "audit" || topics[0].Partitions != 1 || topics[1].Name != "orders" ||
		topics[1].Partitions != 3 || topics[1].ReplicationFactor != 1 || topics[1].Internal || len(topics[1].ID) != 22 {
		t.Errorf("topic list --format json: %+v", topics)
	}
	decode(t, mustRun(t, "", "topic", "list", "--internal", "--format", "json", "--bootstrap", b).stdout, &topics)
	if len(topics) != 3 || topics[0].Name != "__consumer_offsets" || !topics[0].Internal {
		t.Errorf("topic list --internal --format json: %+v", topics)
	}

	var groups []struct {
		Group, State string
		ProtocolType string `json:"protocol_type"`
		Coordinator  int32
	}
	decode(t, mustRun(t, "", "group", "list", "--format", "json", "--bootstrap", b).stdout, &groups)
	if len(groups) != 1 || groups[0].Group != "billing-g" || groups[0].State != "Stable" || groups[0].ProtocolType != "consumer" || groups[0].Coordinator != 1 {
		t.Errorf("group list --format json: %+v", groups)
	}
	decode(t, mustRun(t, "", "group", "list", "--state", "Empty", "--format", "json", "--bootstrap", b).stdout, &groups)
	if len(groups) != 0 {
		t.Errorf("group list --state Empty --format json: %+v, want []", groups)
	}

	var info struct {
		ClusterID        string  `json:"cluster_id"`
		ActiveController int32   `json:"active_controller"`
		Voters           []int32 `json:"voters"`
		Brokers          []struct {
			ID   int32
			Host string
			Port int32
		}
	}
	decode(t, mustRun(t, "", "cluster", "info", "--format", "json", "--bootstrap", b).stdout, &info)
	if len(info.ClusterID) != 22 || info.ActiveController != 1 || len(info.Voters) != 1 || len(info.Brokers) != 1 ||
		info.Brokers[0].ID != 1 || info.Brokers[0].Host+":"+itoa(info.Brokers[0].Port) != b {
		t.Errorf("cluster info --format json: %+v (bootstrap %s)", info, b)
	}
	text := mustRun(t, "", "cluster", "info", "--bootstrap", b).stdout
	if !strings.Contains(text, "\nactive controller: 1 (quorum leader, epoch ") || !strings.HasPrefix(text, "cluster id:        "+info.ClusterID+"\n") {
		t.Errorf("cluster info:\n%s", text)
	}

	for _, args := range [][]string{{"topic", "list"}, {"group", "list"}, {"cluster", "info"}} {
		r := samsa(t, "", append(args, "--format", "yaml", "--bootstrap", b)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `invalid --format "yaml": want text or json`) || r.stdout != "" {
			t.Errorf("%s --format yaml: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
