// Command pageviews counts page views per page and tumbling window, and
// writes each window's final count once the window has closed: it reads
// --input (key = user, value = page, record timestamp = view time) and
// writes to --output key = page@window-start (RFC 3339), value = the count
// as a decimal string. Views up to --grace late still count; later ones
// are dropped.
//
//	pageviews --bootstrap 127.0.0.1:9092 --input page-views --output views-per-minute --window 1m --grace 10s
//
// Windows close by stream time (the largest view time seen), so the last
// windows are written once later views arrive. With --exactly-once each
// window's count appears once for a read_committed reader, crashes or not.
// It stops cleanly on SIGTERM or SIGINT.
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
	"time"

	"github.com/samsa-io/samsa/streams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// Topology is the page-view topology: re-key by page, count per window,
// suppress until the window closes, format.
func Topology(input, output string, window, grace time.Duration) (*streams.Topology, error) {
	b := streams.NewBuilder()
	views := streams.From(b, streams.String(), streams.String(), input)
	byPage := streams.GroupBy(views, func(_, page string) string { return page }, streams.String(), streams.String())
	counts := streams.CountWindows(streams.WindowedBy(byPage, streams.TumblingWindows(window, grace)), "views-store")
	final := streams.SuppressUntilWindowCloses(counts, "views-suppress", streams.Int64()).ToStream()
	streams.Map(final, func(k streams.Windowed[string], n int64) (string, string) {
		return k.Key + "@" + time.UnixMilli(k.Window.Start).UTC().Format(time.RFC3339), strconv.FormatInt(n, 10)
	}).To(output, streams.String(), streams.String())
	return b.Build()
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("pageviews", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "comma-separated host:port list of brokers")
	input := fs.String("input", "page-views", "topic of page views: key user, value page")
	output := fs.String("output", "views-per-window", "topic of final counts per page and window")
	appID := fs.String("application-id", "pageviews", "application.id: consumer group and internal topic prefix")
	window := fs.Duration("window", time.Minute, "window size")
	grace := fs.Duration("grace", 10*time.Second, "how late a view may be and still count")
	eos := fs.Bool("exactly-once", false, "processing.guarantee=exactly_once_v2 instead of at_least_once")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	top, err := Topology(*input, *output, *window, *grace)
	if err != nil {
		fmt.Fprintln(stderr, "pageviews:", err)
		return 2
	}
	guarantee := streams.AtLeastOnce
	if *eos {
		guarantee = streams.ExactlyOnceV2
	}
	app, err := streams.New(top, streams.Config{
		ApplicationID:       *appID,
		Bootstrap:           strings.Split(*bootstrap, ","),
		ProcessingGuarantee: guarantee,
		Logger:              slog.New(slog.NewTextHandler(stderr, nil)),
	})
	if err != nil {
		fmt.Fprintln(stderr, "pageviews:", err)
		return 1
	}
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "pageviews:", err)
		return 1
	}
	return 0
}
