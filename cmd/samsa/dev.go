package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/samsa-io/samsa/internal/devcluster"
)

// runDev runs `samsa dev cluster`: several combined nodes on loopback, each
// its own process, until interrupted.
func runDev(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	const synopsis = "samsa dev cluster [--brokers N] [--controllers C] [--dir DIR] [--port P] [--override key=value ...]"
	if len(args) > 0 && (isHelpFlag(args[0]) || args[0] == "help") {
		fmt.Fprintf(stdout, "usage: %s\n\nRun \"samsa dev cluster -h\" for its flags.\n", synopsis)
		return exitOK
	}
	if len(args) == 0 || args[0] != "cluster" {
		fmt.Fprintf(stderr, "usage: %s\n", synopsis)
		return exitUsage
	}
	fs := newFlagSet("dev cluster", synopsis, stderr)
	brokers := fs.Int("brokers", 3, "number of brokers: combined broker+controller nodes, or broker-only ones with --controllers")
	controllers := fs.Int("controllers", 0, "run this many controller-only nodes (the quorum) and --brokers broker-only nodes instead of combined nodes")
	dir := fs.String("dir", "./data/dev-cluster", "directory for the nodes' data, configs and logs; reuse it to restart the same cluster")
	port := fs.Int("port", 9092, "client port of the first broker; the i-th broker listens on port+i-1, the i-th controller on port+100+i-1 (0: free ports)")
	var overrides stringList
	fs.Var(&overrides, "override", "set one server property `key=value` on every node (repeatable)")
	if code, ok := parseFlagsOnly(fs, args[1:], stderr); !ok {
		return code
	}
	if *brokers < 1 {
		return usageError(fs, stderr, "--brokers must be at least 1")
	}
	if *controllers < 0 {
		return usageError(fs, stderr, "--controllers must not be negative")
	}
	props := []string{
		fmt.Sprintf("default.replication.factor=%d", min(*brokers, 3)),
		fmt.Sprintf("offsets.topic.replication.factor=%d", min(*brokers, 3)),
		fmt.Sprintf("transaction.state.log.replication.factor=%d", min(*brokers, 3)),
		fmt.Sprintf("transaction.state.log.min.isr=%d", min(*brokers, 2)),
	}
	props = append(props, overrides...)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintf(stderr, "starting %d brokers (%d controller-only nodes) in %s ...\n", *brokers, *controllers, *dir)
	cfg := devcluster.Config{Nodes: *brokers, Dir: *dir, BasePort: *port, Properties: props}
	if *controllers > 0 {
		cfg.Controllers, cfg.Brokers = *controllers, *brokers
	}
	c, err := devcluster.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "samsa dev cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "cluster %s is up\n", c.ClusterID)
	for _, n := range c.Nodes {
		fmt.Fprintf(stdout, "  node %d (%s): client %s, controller %s, log %s\n", n.ID, n.Roles, dash(n.ClientAddr), dash(n.ControllerAddr), n.LogPath)
	}
	fmt.Fprintf(stdout, "bootstrap servers: %s\n", strings.Join(c.Bootstrap(), ","))
	<-sig
	fmt.Fprintln(stderr, "stopping the cluster ...")
	c.Close()
	return 0
}
