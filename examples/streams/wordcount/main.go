// Command wordcount is the Kafka Streams word-count demo on the streams
// library: it reads text lines from --input and writes, for each word
// (lower-cased, split on white space), its running count to --output, with
// key = word and value = the count as a decimal string. Counts live in the
// store "counts-store" (changelog <application-id>-counts-store-changelog),
// so a restarted instance continues where the last one committed; run more
// instances with the same --application-id to share the work.
//
//	wordcount --bootstrap 127.0.0.1:9092 --input lines --output counts --application-id wordcount
//
// With --exactly-once it runs under processing.guarantee=exactly_once_v2:
// a read_committed reader of --output sees every word's counts exactly
// once, in order, even when instances crash. It stops cleanly on SIGTERM or
// SIGINT, committing what it processed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/samsa-io/samsa/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// Topology is the word-count topology.
func Topology(input, output string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	lines := streams.From(b, streams.String(), streams.String(), input)
	words := streams.FlatMapValues(lines, func(_, line string) []string {
		return strings.Fields(strings.ToLower(line))
	})
	grouped := streams.GroupBy(words, func(_, word string) string { return word }, streams.String(), streams.String())
	counts := streams.Count(grouped, "counts-store").ToStream()
	streams.MapValues(counts, func(_ string, n int64) string { return strconv.FormatInt(n, 10) }).
		To(output, streams.String(), streams.String())
	return b.Build()
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("wordcount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "comma-separated host:port list of brokers")
	input := fs.String("input", "streams-plaintext-input", "topic of text lines")
	output := fs.String("output", "streams-wordcount-output", "topic of word counts")
	appID := fs.String("application-id", "streams-wordcount", "application.id: consumer group and internal topic prefix")
	eos := fs.Bool("exactly-once", false, "processing.guarantee=exactly_once_v2 instead of at_least_once")
	commit := fs.Duration("commit-interval", 0, "commit.interval.ms under at_least_once; 0 means Kafka Streams' default, 30s (--exactly-once commits each poll's records in a transaction)")
	session := fs.Duration("session-timeout", 0, "session.timeout.ms: how soon the group gives a crashed instance's work to others; 0 means 45s")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	guarantee := streams.AtLeastOnce
	if *eos {
		guarantee = streams.ExactlyOnceV2
	}
	top, err := Topology(*input, *output)
	if err != nil {
		fmt.Fprintln(stderr, "wordcount:", err)
		return 1
	}
	app, err := streams.New(top, streams.Config{
		ApplicationID:       *appID,
		Bootstrap:           strings.Split(*bootstrap, ","),
		ProcessingGuarantee: guarantee,
		CommitInterval:      *commit,
		SessionTimeout:      *session,
		Logger:              slog.New(slog.NewTextHandler(stderr, nil)),
	})
	if err != nil {
		fmt.Fprintln(stderr, "wordcount:", err)
		return 1
	}
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "wordcount:", err)
		return 1
	}
	return 0
}
