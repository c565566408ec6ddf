package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// samsa cluster info on such a cluster names the controller-only node
// that leads the quorum as the active controller.
//
// Closing a cluster of controller-only and broker-only nodes (samsa dev
// cluster --controllers 1 --brokers 2, then Ctrl-C) stops the brokers
// while the quorum still runs: each broker's controlled shutdown is
// granted, rather than waiting in vain for a controller that has already
// gone and stopping without it.
func TestDevClusterCloseGrantsEveryControlledShutdown(t *testing.T) {
	dir := t.TempDir()
	c, err := devcluster.Start(devcluster.Config{Controllers: 1, Brokers: 2, Dir: dir, Binary: binary, Properties: fastFailover})
	if err != nil {
		dumpLogs(t, dir, 3)
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	// Both brokers lead partitions, so their controlled shutdowns have
	// leaderships to move.
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 4, 2, nil, "close-order"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both brokers lead a partition", func() (bool, string) {
		parts, _, err := describe(ctx, adm, "close-order")
		if err != nil {
			return false, err.Error()
		}
		leaders := map[int32]bool{}
		for _, p := range parts {
			leaders[p.Leader] = true
		}
		return leaders[2] && leaders[3], "leaders so far"
	})
	// samsa cluster info names the active controller, the quorum's
	// leader, which is not a broker here (Metadata's controller id is).
	out, err := exec.Command(binary, "cluster", "info", "--format", "json", "--bootstrap", c.Bootstrap()[0]).Output()
	if err != nil {
		t.Fatalf("samsa cluster info: %v", err)
	}
	var info struct {
		ActiveController int32   `json:"active_controller"`
		Voters           []int32 `json:"voters"`
		Brokers          []struct{ ID int32 }
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("samsa cluster info: %v\n%s", err, out)
	}
	if info.ActiveController != 1 || !slices.Equal(info.Voters, []int32{1}) || len(info.Brokers) != 2 || info.Brokers[0].ID != 2 || info.Brokers[1].ID != 3 {
		t.Errorf("samsa cluster info: %s", out)
	}
	cl.Close()
	c.Close()
	closed = true
	for _, n := range c.Nodes[1:] {
		b, err := os.ReadFile(n.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		log := string(b)
		if !strings.Contains(log, `msg="controlled shutdown complete"`) || strings.Contains(log, "controlled shutdown incomplete") {
			t.Errorf("broker %d's controlled shutdown was not granted; its log ends:\n%s", n.ID, tail(log, 10))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
