package main

// Shared plumbing for the client subcommands (topic, produce, consume): flag
// parsing that accepts flags after positional arguments, the common
// --bootstrap/--timeout flags, the franz-go client, and turning errors into
// the one-line messages and exit codes users see.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exit codes shared by every client subcommand.
const (
	exitOK    = 0
	exitFail  = 1 // the cluster refused or could not be reached
	exitUsage = 2 // the command line itself is wrong
)

// clientFlags are the connection flags every client subcommand takes:
// where the cluster is, how long to wait, and how to authenticate and
// encrypt (security.go).
type clientFlags struct {
	bootstrap string
	timeout   time.Duration
	security  securityFlags
}

func (cf *clientFlags) register(fs *flag.FlagSet) { cf.registerFlags(fs, true) }

// registerNoLoginAliases is register for commands whose own --user or
// --password flag names something else; they log in with --sasl-user and
// --sasl-password.
func (cf *clientFlags) registerNoLoginAliases(fs *flag.FlagSet) { cf.registerFlags(fs, false) }

func (cf *clientFlags) registerFlags(fs *flag.FlagSet, loginAliases bool) {
	fs.StringVar(&cf.bootstrap, "bootstrap", "127.0.0.1:9092",
		"comma-separated `host:port` list of brokers to bootstrap from")
	fs.DurationVar(&cf.timeout, "timeout", 10*time.Second,
		"give up if the cluster does not answer within this `duration`")
	cf.security.register(fs, loginAliases)
}

// clientOpts are the options every client of a subcommand starts from:
// seeds, client id, dial timeout, TLS and SASL.
func (cf *clientFlags) clientOpts() ([]kgo.Opt, error) {
	seeds := cf.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap is empty")
	}
	sc, err := cf.security.resolve()
	if err != nil {
		return nil, err
	}
	sec, err := sc.opts(cf.timeout)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("samsa-cli"),
	}
	if !sc.useTLS { // the TLS dialer has the timeout itself
		opts = append(opts, kgo.DialTimeout(cf.timeout))
	}
	return append(opts, sec...), nil
}

func (cf *clientFlags) seeds() []string {
	var out []string
	for s := range strings.SplitSeq(cf.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// connect builds a client and checks that some seed broker answers a
// metadata request, so that an unreachable cluster gives one clear error
// instead of a client that silently retries until some later deadline.
func (cf *clientFlags) connect(extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := cf.clientOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cannot reach %s: no answer within %v", cf.bootstrap, cf.timeout)
		}
		if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
			// The broker answered, but refused this client (SASL).
			return nil, fmt.Errorf("cannot log in to %s: %v", cf.bootstrap, err)
		}
		return nil, fmt.Errorf("cannot reach %s: %v", cf.bootstrap, err)
	}
	return cl, nil
}

// ctx returns a context bounded by --timeout for one admin round trip.
func (cf *clientFlags) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cf.timeout)
}

// admin connects and wraps the client for admin requests.
func (cf *clientFlags) admin() (*kadm.Client, error) {
	cl, err := cf.connect()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(cf.timeout.Milliseconds()))
	return adm, nil
}

// newFlagSet returns a FlagSet that reports to stderr and returns errors
// rather than exiting, so commands run in-process (and in tests).
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags that may appear before, between or after the
// positional arguments (`topic create NAME --partitions 3`), which the flag
// package alone does not allow. A "--" ends flag parsing. It returns the
// positional arguments, or an exit code when parsing must stop: 0 for -h,
// 2 for a bad flag (the flag package has already printed the usage).
// parseFlagsOnly is parseArgs for a command that takes no positional
// argument: one is a usage error. It returns the exit code when the
// command must stop.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code, false
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "unexpected argument %q", pos[0]), false
	}
	return 0, true
}

func parseArgs(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(fs, a) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK, false
		}
		return nil, exitUsage, false
	}
	return positional, 0, true
}

// takesValue reports whether the flag argument a ("-x", "--x") names a known
// non-boolean flag given without "=value", so the next argument is its value.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

// usageError prints a one-line complaint and the usage, and returns exit 2.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "samsa %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitUsage
}

// fail prints err as the single "samsa: ..." line and returns exit 1.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "samsa: %v\n", err)
	return exitFail
}

// topicError turns a per-topic broker error into a sentence that names the
// topic, using the broker's own message when it sent one.
func topicError(topic string, err error, brokerMsg string) error {
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return fmt.Errorf("topic %q does not exist", topic)
	case errors.Is(err, kerr.TopicAlreadyExists):
		return fmt.Errorf("topic %q already exists", topic)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		msg := ke.Description
		if brokerMsg != "" {
			msg = brokerMsg
		}
		return fmt.Errorf("topic %q: %s (%s)", topic, strings.TrimSuffix(msg, "."), ke.Message)
	}
	return fmt.Errorf("topic %q: %w", topic, err)
}

// kvList is a repeatable key=value flag (--config, --header).
type kvList struct {
	keys, values []string
}

func (l *kvList) String() string {
	var parts []string
	for i := range l.keys {
		parts = append(parts, l.keys[i]+"="+l.values[i])
	}
	return strings.Join(parts, ",")
}

func (l *kvList) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	l.keys = append(l.keys, k)
	l.values = append(l.values, v)
	return nil
}

// describeEach is the shape of every "describe NAME..." command: flags,
// at least one name, one admin client, and one block of output per name,
// separated by blank lines. The first failure ends the command.
func describeEach(cmd, synopsis, want string, args []string, stdout, stderr io.Writer,
	describe func(adm *kadm.Client, cf *clientFlags, name string, w io.Writer) error) int {
	fs := newFlagSet(cmd, synopsis, stderr)
	var cf clientFlags
	cf.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "%s", want)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	for i, name := range pos {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := describe(adm, &cf, name, stdout); err != nil {
			return fail(stderr, err)
		}
	}
	return exitOK
}

// subcommand is one action of a command with subcommands (topic create, ...).
type subcommand func(args []string, stdout, stderr io.Writer) int

// dispatch runs the subcommand args[0] of cmd. A help request prints the
// usage on stdout and exits 0; no or an unknown subcommand prints it on
// stderr and exits 2.
func dispatch(cmd, usage string, subs map[string]subcommand, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if isHelpFlag(args[0]) || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	sub, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "samsa %s: unknown subcommand %q\n", cmd, args[0])
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	return sub(args[1:], stdout, stderr)
}

// parseStates turns a comma-separated --state value into the canonical
// names of known, matching case-insensitively as Kafka's tools do; what
// names the kind of state in errors ("group", "transaction").
func parseStates(value, what string, known []string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, part) })
		if i < 0 {
			return nil, fmt.Errorf("unknown %s state %q: want one of %s", what, part, strings.Join(known, ", "))
		}
		out = append(out, known[i])
	}
	return out, nil
}

// kafkaErr turns a Kafka error code into the line users read: Kafka's
// error name, then the broker's message (brokerMsg, or the one kadm
// carried) or, without one, the code's description, and for the errors
// a setting causes, what to change.
func kafkaErr(err error, brokerMsg string) error {
	var em *kadm.ErrAndMessage
	if errors.As(err, &em) && brokerMsg == "" {
		brokerMsg = em.ErrMessage
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	msg := strings.TrimSuffix(brokerMsg, ".")
	if msg == "" {
		msg = strings.TrimSuffix(ke.Description, ".")
	}
	out := fmt.Sprintf("%s: %s", ke.Message, msg)
	switch ke {
	case kerr.SecurityDisabled:
		out += " (the brokers have no authorizer: set authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer" +
			" and super.users in their server.properties and restart them)"
	case kerr.ClusterAuthorizationFailed:
		out += " (the principal needs an ACL on the cluster resource, or to be one of the brokers' super.users)"
	}
	return errors.New(out)
}
