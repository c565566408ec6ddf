// Command samsa runs a Samsa node (`samsa server`) and the command-line tools
// that talk to a running cluster: topic, produce, consume, group, txn,
// config, acl, user, quota and the bench load generators.
package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand: run parses its own flags from args and returns
// the process exit code.
type command struct {
	name  string
	usage string
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"server", "start a Samsa node", runServer},
		{"registry", "run the Schema Registry alone, as a client of a cluster", runRegistry},
		{"rest-proxy", "run the REST Proxy (Confluent's v2 and v3 HTTP API) alone, as a client of a cluster", runRestProxy},
		{"connect", "run a Kafka Connect worker (standalone or distributed); list, create, pause connectors", runConnect},
		{"schema", "register, get, list, delete schemas and check compatibility (Schema Registry)", runSchema},
		{"dev", "run a local multi-node cluster for development (dev cluster)", runDev},
		{"cluster", "show the cluster's brokers and controller; make cluster ids", runCluster},
		{"topic", "create, list, describe and delete topics", runTopic},
		{"produce", "produce lines from stdin to a topic", runProduce},
		{"consume", "print records of a topic", runConsume},
		{"group", "list, describe, delete consumer groups and reset their offsets", runGroup},
		{"share-group", "list, describe, delete share groups (KIP-932) and reset their start offsets", runShareGroup},
		{"streams-group", "list and describe Kafka Streams applications' streams groups", runStreamsGroup},
		{"txn", "list and describe transactions", runTxn},
		{"config", "show and change dynamic topic and broker configs", runConfig},
		{"acl", "create, list and delete ACLs", runACL},
		{"user", "create, list and delete SCRAM users", runUser},
		{"quota", "set, list and delete client quotas", runQuota},
		{"feature", "describe, upgrade and downgrade the cluster's feature levels", runFeature},
		{"bench", "measure produce and consume throughput and latency", runBench},
		{"bench-groups", "measure offset commits, rebalances and many groups' offsets", runBenchGroups},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		return 2
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "samsa: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: samsa <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.usage)
	}
}
