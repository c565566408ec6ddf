// Command samsa runs a Samsa node (`samsa server`) and the command-line tools
// that talk to a running cluster: topic, produce, consume, group, txn,
// config, acl, user, quota and the bench load generators.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
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
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		if !helpRequested(args[1:]) {
			return c.run(args[1:], stdin, stdout, stderr)
		}
		// Asked for help, the usage goes to stdout, as a pager or grep
		// expects.
		code := c.run(args[1:], stdin, stdout, stdout)
		if code == exitUsage && isHelpFlag(args[1]) {
			// A command whose flag parsing answers -h with the usage
			// exit code (samsa server -h).
			code = exitOK
		}
		return code
	}
	fmt.Fprintf(stderr, "samsa: unknown command %q\n", args[0])
	if near := nearestCommand(args[0]); near != "" {
		fmt.Fprintf(stderr, "Did you mean %q?\n", near)
	}
	fmt.Fprintln(stderr, "Run 'samsa --help' for the list of commands.")
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: samsa <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.usage)
	}
	fmt.Fprintln(w, "\nRun 'samsa <command> -h' for a command's subcommands and flags, 'samsa --version' for the version.")
}

func isHelpFlag(a string) bool {
	return a == "-h" || a == "-help" || a == "--help"
}

// helpRequested reports whether a help flag comes before a "--" (after
// it, "-h" is an argument).
func helpRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelpFlag(a) {
			return true
		}
	}
	return false
}

// version is what samsa --version prints: the module version, the
// commit and its time as the go command stamped them into the binary,
// and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "samsa (unknown version)"
	}
	v := "samsa " + bi.Main.Version
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" commit %.12s (%s%s)", rev, at, dirty)
	}
	return v + " " + bi.GoVersion
}

// nearestCommand is the command a mistyped name most likely meant: one
// it is a prefix of or that is a prefix of it, else the one within two
// edits; "" if none.
func nearestCommand(name string) string {
	best, bestDist := "", 3
	for _, c := range commands() {
		if strings.HasPrefix(c.name, name) || strings.HasPrefix(name, c.name) {
			return c.name
		}
		if d := editDistance(name, c.name); d < bestDist {
			best, bestDist = c.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
