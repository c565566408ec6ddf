package streams_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/streams"
)

// Word count: split lines into words, count each word, write the running
// counts as decimal strings. The count needs all records of a word in one
// task, so GroupBy repartitions through wordcount-counts-store-repartition;
// the counts live in the store counts-store, logged to
// wordcount-counts-store-changelog.
func Example() {
	b := streams.NewBuilder()
	lines := streams.From(b, streams.String(), streams.String(), "lines")
	words := streams.FlatMapValues(lines, func(_, line string) []string {
		return strings.Fields(strings.ToLower(line))
	})
	byWord := streams.GroupBy(words, func(_, w string) string { return w }, streams.String(), streams.String())
	counts := streams.Count(byWord, "counts-store")
	streams.MapValues(counts.ToStream(), func(_ string, n int64) string { return strconv.FormatInt(n, 10) }).
		To("word-counts", streams.String(), streams.String())

	top, err := b.Build()
	if err != nil {
		panic(err)
	}
	fmt.Print(top)
	// Output:
	// Sub-topology: 0
	//   Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
	//     --> [KSTREAM-FLATMAPVALUES-0000000001]
	//   Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
	//     --> [KSTREAM-KEY-SELECT-0000000002]
	//   Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
	//     --> [KSTREAM-SINK-0000000003]
	//   Sink: KSTREAM-SINK-0000000003 (topic: counts-store-repartition)
	// Sub-topology: 1
	//   Source: KSTREAM-SOURCE-0000000004 (topics: [counts-store-repartition])
	//     --> [KSTREAM-AGGREGATE-0000000005]
	//   Processor: KSTREAM-AGGREGATE-0000000005 (stores: [counts-store])
	//     --> [KSTREAM-MAPVALUES-0000000006]
	//   Processor: KSTREAM-MAPVALUES-0000000006 (stores: [])
	//     --> [KSTREAM-SINK-0000000007]
	//   Sink: KSTREAM-SINK-0000000007 (topic: word-counts)
}

// Running a topology: one App per process; start several with the same
// application id to share the partitions. Run returns after SIGTERM, once
// it has committed what it processed.
func ExampleApp_Run() {
	b := streams.NewBuilder()
	streams.From(b, streams.String(), streams.String(), "in").
		Filter(func(_, v string) bool { return v != "" }).
		To("out", streams.String(), streams.String())
	top, err := b.Build()
	if err != nil {
		panic(err)
	}
	app, err := streams.New(top, streams.Config{ApplicationID: "filter-app", Bootstrap: []string{"127.0.0.1:9092"}})
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// Page views per user and minute, with 10 s of grace for late views, one
// final count per window (suppressed until the window closes), under
// exactly-once: a read_committed reader of views-per-minute sees each
// window's count once.
func ExampleCountWindows() {
	b := streams.NewBuilder()
	views := streams.From(b, streams.String(), streams.String(), "page-views") // key: user
	perMinute := streams.WindowedBy(streams.GroupByKey(views, streams.String(), streams.String()),
		streams.TumblingWindows(time.Minute, 10*time.Second))
	counts := streams.CountWindows(perMinute, "views-per-minute-store")
	streams.SuppressUntilWindowCloses(counts, "views-per-minute-suppress", streams.Int64()).
		ToStream().To("views-per-minute", streams.TimeWindowedSerde(streams.String(), time.Minute), streams.Int64())
	top, err := b.Build()
	if err != nil {
		panic(err)
	}
	_, err = streams.New(top, streams.Config{ApplicationID: "page-views", Bootstrap: []string{"127.0.0.1:9092"},
		ProcessingGuarantee: streams.ExactlyOnceV2})
	fmt.Println(err)
	// Output: <nil>
}
