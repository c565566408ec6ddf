package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/server"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runServer(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("samsa server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "Kafka-style properties `file` (default: embedded single-node defaults)")
	var overrides stringList
	fs.Var(&overrides, "override", "set one config `key=value` (repeatable); wins over --config")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	clusterID := fs.String("cluster-id", "", "cluster `id` to format fresh data directories with; every node of a multi-node cluster needs the same one")
	var addScram stringList
	fs.Var(&addScram, "add-scram", "SCRAM credential to write when the metadata log is new (repeatable), as kafka-storage format --add-scram: 'SCRAM-SHA-256=[name=alice,password=alice-secret]'")
	releaseVersion := fs.String("release-version", "", "Kafka `release` (3.3 to 4.4) whose feature levels a new metadata log starts at, as kafka-storage format --release-version (default: Samsa's newest)")
	var features stringList
	fs.Var(&features, "feature", "feature level `name=level` a new metadata log starts at (repeatable; wins over --release-version), as kafka-storage format --feature")
	standalone := fs.Bool("standalone", false, "format a new metadata log with this controller as the only voter of a dynamic quorum (controller.quorum.bootstrap.servers), as kafka-storage format --standalone")
	initialControllers := fs.String("initial-controllers", "", "format a new metadata log of a dynamic quorum with these `voters` (id@host:port:directory-id,...; this node's directory id becomes its metadata directory's), as kafka-storage format --initial-controllers")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the node to `file` until it stops (go tool pprof reads it)")
	noInitialControllers := fs.Bool("no-initial-controllers", false, "format a new metadata log with no voters: this controller joins the quorum of controller.quorum.bootstrap.servers once added with kafka-metadata-quorum add-controller, as kafka-storage format --no-initial-controllers")
	fs.Usage = serverUsage(fs, stderr)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		// -h anywhere: usage on stdout and exit 0, as every command answers.
		fs.SetOutput(stdout)
		fs.Usage = serverUsage(fs, stdout)
		fs.Usage()
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "samsa server: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "samsa server: --cpuprofile: %v\n", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "samsa server: invalid --log-level %q\n", *logLevel)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	// Without a config file the node serves /metrics, /healthz and
	// /readyz on the default endpoint unless told otherwise.
	httpDefault := *configPath == "" && !slices.ContainsFunc(overrides, func(o string) bool {
		return strings.HasPrefix(strings.TrimSpace(o), "http.listeners")
	})
	if httpDefault {
		overrides = append(overrides, "http.listeners="+config.DefaultHTTPListener)
	}
	cfg, warnings, err := config.Load(*configPath, overrides)
	if err != nil {
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		return 1
	}
	cfg.HTTPDefault = httpDefault
	for _, w := range warnings {
		logger.Warn(w)
	}
	cfg.ClusterID = *clusterID
	for i, a := range addScram {
		// The argument holds a password: the message does not repeat it.
		if _, err := security.ParseScramArg(a, rand.Reader); err != nil {
			fmt.Fprintf(stderr, "samsa server: --add-scram #%d: %v\n", i+1, err)
			return 2
		}
	}
	cfg.AddScram = addScram
	if _, err := metadata.InitialFeatures(*releaseVersion, features); err != nil {
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		return 2
	}
	cfg.ReleaseVersion, cfg.Features = *releaseVersion, features
	cfg.Quorum = config.QuorumFormat{Standalone: *standalone, NoInitialControllers: *noInitialControllers}
	if *initialControllers != "" {
		if cfg.Quorum.InitialControllers, err = config.ParseInitialControllers(*initialControllers); err != nil {
			fmt.Fprintf(stderr, "samsa server: %v\n", err)
			return 2
		}
	}
	// Signals are caught before anything can block: one that arrives
	// during start-up (log recovery, waiting for the other voters or for
	// this broker to be unfenced) cancels it, and the node exits cleanly.
	ctx, stop := signalContext()
	defer stop()
	srv, err := server.StartContext(ctx, cfg, logger, level)
	if err != nil {
		if ctx.Err() != nil {
			logger.Info("start-up interrupted; stopped", "cause", context.Cause(ctx).Error())
			return 0
		}
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		return 1
	}
	fromDefaults := *configPath == "" && !slices.ContainsFunc(overrides, func(o string) bool {
		return strings.HasPrefix(strings.TrimSpace(o), "schema.registry.listeners")
	})
	stopRegistry, err := startServerRegistry(cfg, srv, fromDefaults, logger)
	if err != nil {
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		srv.Close()
		return 1
	}
	proxyFromDefaults := *configPath == "" && !slices.ContainsFunc(overrides, func(o string) bool {
		return strings.HasPrefix(strings.TrimSpace(o), "rest.proxy.listeners")
	})
	stopRestProxy, err := startServerRestProxy(cfg, srv, proxyFromDefaults, logger)
	if err != nil {
		fmt.Fprintf(stderr, "samsa server: %v\n", err)
		stopRegistry()
		srv.Close()
		return 1
	}
	stopConsole := startServerConsole(cfg, srv, logger)
	code := 0
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "cause", context.Cause(ctx).Error())
	case <-srv.Failed():
		// Every log directory failed: stop as Kafka halts such a broker,
		// but with a controlled shutdown first.
		fmt.Fprintf(stderr, "samsa server: %v\n", srv.Err())
		code = 1
	}
	stopConsole()
	stopRestProxy()
	stopRegistry()
	if err := srv.Close(); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	logger.Info("stopped")
	return code
}

// serverUsage prints the usage of `samsa server` to w.
func serverUsage(fs *flag.FlagSet, w io.Writer) func() {
	return func() {
		fmt.Fprintln(w, "usage: samsa server [--config FILE] [--override key=value ...] [--add-scram 'SCRAM-SHA-256=[name=U,password=P]' ...] [--release-version R] [--feature name=level ...] [--standalone | --initial-controllers id@host:port:dir,... | --no-initial-controllers]")
		fs.PrintDefaults()
	}
}

// signalContext is canceled, with the signal as its cause, by the first
// SIGTERM or SIGINT. stop releases the signals and joins the goroutine.
func signalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-sig:
			cancel(fmt.Errorf("signal %s", s))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		cancel(context.Canceled)
		<-done
	}
}
