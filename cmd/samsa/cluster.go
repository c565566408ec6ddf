package main

// `samsa cluster`: the cluster as a whole — its brokers and active
// controller, and new cluster ids for formatting nodes.

import (
	"crypto/rand"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/samsa-io/samsa/internal/metadata"
)

const clusterUsage = `usage: samsa cluster <info|new-id> [flags]

  info      show the cluster id, the active controller and the brokers
  new-id    print a new random cluster id (for samsa server --cluster-id)

Run "samsa cluster <subcommand> -h" for the flags of each.
`

func runCluster(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("cluster", clusterUsage, map[string]subcommand{
		"info":   clusterInfo,
		"new-id": clusterNewID,
	}, args, stdout, stderr)
}

func clusterNewID(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cluster new-id", "samsa cluster new-id", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "new-id takes no arguments")
	}
	id, err := metadata.RandomUuid(rand.Reader)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintln(stdout, id.String())
	return exitOK
}

func clusterInfo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cluster info", "samsa cluster info [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "info takes no arguments")
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "cluster id: %s\ncontroller: %d\n\n", md.Cluster, md.Controller)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tHOST\tPORT\tRACK")
	for _, b := range md.Brokers {
		rack := "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", b.NodeID, b.Host, b.Port, rack)
	}
	tw.Flush()
	return exitOK
}
