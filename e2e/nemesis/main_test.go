package nemesis

import (
	"os"
	"testing"

	"github.com/samsa-io/samsa/e2e/clustertest"
)

// binary is the samsa executable built once for all tests.
var binary string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		// Nothing to build for: the fault tests skip, and the schedule
		// test needs no binary.
		os.Exit(m.Run())
	}
	os.Exit(clustertest.Main(m, "samsa-nemesis", &binary))
}

// fastFailover makes a lost broker's session expire in seconds, so a run
// spends its time on failovers rather than waiting (as e2e/cluster).
var fastFailover = []string{
	"broker.session.timeout.ms=3000",
	"broker.heartbeat.interval.ms=300",
	"replica.lag.time.max.ms=5000",
	"replica.fetch.wait.max.ms=200",
	"offsets.topic.replication.factor=3",
	"offsets.topic.num.partitions=6",
	"transaction.state.log.replication.factor=3",
	"transaction.state.log.min.isr=2",
	"transaction.state.log.num.partitions=6",
	"group.initial.rebalance.delay.ms=0",
}

// dumpLogs prints the end of every node's log.
func dumpLogs(t *testing.T, dir string, n int) { clustertest.DumpLogs(t, dir, n, 60) }
