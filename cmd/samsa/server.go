package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/server"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runServer(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("samsa server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "Kafka-style properties `file` (default: embedded single-node defaults)")
	var overrides stringList
	fs.Var(&overrides, "override", "set one config `key=value` (repeatable); wins over --config")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	clusterID := fs.String("cluster-id", "", "cluster `id` to format fresh data directories with; every node of a multi-node cluster needs the same one")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: samsa server [--config FILE] [--override key=value ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "samsa server: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "samsa server: invalid --log-level %q\n", *logLevel)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, warnings, err := config.Load(*configPath, overrides)
	if err != nil {
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		return 1
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	cfg.ClusterID = *clusterID
	// Catch signals before serving, so one that arrives during start-up
	// still shuts down cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	srv, err := server.Start(cfg, logger, level)
	if err != nil {
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		return 1
	}
	s := <-sig
	logger.Info("shutting down", "signal", s.String())
	signal.Stop(sig)
	if err := srv.Close(); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}
