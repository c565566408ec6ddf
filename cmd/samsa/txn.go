package main

// `samsa txn`: list and describe transactions, in the spirit of
// kafka-transactions.sh. Each transactional id lives on the broker leading
// its partition of __transaction_state; the admin client asks every
// coordinator and merges the answers.

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

const txnUsage = `usage: samsa txn <list|describe> [flags]

  list                 list transactional ids with their producer and state
  describe ID…         show a transaction's state, producer, timeout and partitions

Run "samsa txn <subcommand> -h" for the flags of each.
`

func runTxn(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("txn", txnUsage, map[string]subcommand{
		"list":     txnList,
		"describe": txnDescribe,
	}, args, stdout, stderr)
}

// txnStates are the transaction states Kafka reports.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func txnList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("txn list", "samsa txn list [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	stateFlag := fs.String("state", "", "only list transactions in these comma-separated `states` (e.g. Ongoing)")
	pidFlag := fs.String("producer-id", "", "only list transactions of these comma-separated producer `ids`")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	states, err := parseStates(*stateFlag, "transaction", txnStates)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	var pids []int64
	for part := range strings.SplitSeq(*pidFlag, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		pid, err := strconv.ParseInt(part, 10, 64)
		if err != nil || pid < 0 {
			return usageError(fs, stderr, "invalid producer id %q: want a non-negative integer", part)
		}
		pids = append(pids, pid)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	txns, err := adm.ListTransactions(ctx, pids, states)
	if err != nil {
		return fail(stderr, fmt.Errorf("list transactions: %w", err))
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tSTATE")
	for _, t := range txns.Sorted() {
		// Filter here too: the filters are only as good as the broker.
		if len(states) > 0 && !slices.Contains(states, t.State) || len(pids) > 0 && !slices.Contains(pids, t.ProducerID) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.TxnID, t.Coordinator, t.ProducerID, t.State)
	}
	tw.Flush()
	return exitOK
}

func txnDescribe(args []string, stdout, stderr io.Writer) int {
	return describeEach("txn describe", "samsa txn describe TRANSACTIONAL-ID... [flags]", "want at least one transactional id", args, stdout, stderr, describeTxn)
}

// describeTxn prints one transaction as "key: value" lines, then the
// partitions of the ongoing transaction, one per line.
func describeTxn(adm *kadm.Client, cf *clientFlags, id string, w io.Writer) error {
	ctx, cancel := cf.ctx()
	defer cancel()
	described, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		return fmt.Errorf("describe transaction %q: %w", id, err)
	}
	d, ok := described[id]
	switch {
	case !ok || errors.Is(d.Err, kerr.TransactionalIDNotFound):
		return fmt.Errorf("transactional id %q does not exist", id)
	case d.Err != nil:
		return fmt.Errorf("describe transaction %q: %w", id, d.Err)
	}
	start := "-"
	if d.StartTimestamp >= 0 {
		start = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339Nano)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "Transactional id:\t%s\n", d.TxnID)
	fmt.Fprintf(tw, "Coordinator:\t%d\n", d.Coordinator)
	fmt.Fprintf(tw, "State:\t%s\n", d.State)
	fmt.Fprintf(tw, "Producer id:\t%d\n", d.ProducerID)
	fmt.Fprintf(tw, "Producer epoch:\t%d\n", d.ProducerEpoch)
	fmt.Fprintf(tw, "Timeout:\t%dms\n", d.TimeoutMillis)
	fmt.Fprintf(tw, "Started:\t%s\n", start)
	tw.Flush()
	var parts []string
	for _, tp := range d.Topics.Sorted() {
		for _, p := range tp.Partitions {
			parts = append(parts, fmt.Sprintf("%s:%d", tp.Topic, p))
		}
	}
	fmt.Fprintf(w, "Partitions: %s\n", dash(strings.Join(parts, " ")))
	return nil
}
