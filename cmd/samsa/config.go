package main

// `samsa config`: show and change dynamic topic and broker configs through
// IncrementalAlterConfigs, in the spirit of kafka-configs.sh. `get` prints
// what kafka-configs --describe prints, so scripts that read one read both.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const configUsage = `usage: samsa config <get|set|delete> <topic NAME | broker ID | broker --default> [args] [flags]

  get topic NAME            show a topic's dynamic configs (--all: every config)
  get broker ID             show a broker's dynamic configs (--all: every config)
  get broker --default      show the cluster-wide default broker configs
  set ENTITY key=value...   set configs; the others stay as they are
  delete ENTITY key...      remove configs, so the default applies again

Run "samsa config <subcommand> -h" for the flags of each.
`

func runConfig(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("config", configUsage, map[string]subcommand{
		"get":    configGet,
		"set":    func(a []string, o, e io.Writer) int { return configAlter("set", a, o, e) },
		"delete": func(a []string, o, e io.Writer) int { return configAlter("delete", a, o, e) },
	}, args, stdout, stderr)
}

// entity is the resource a config command is about.
type entity struct {
	topic    string // set for a topic
	broker   int32  // a broker id, when isBroker and not clusterDefault
	isBroker bool
	// clusterDefault is the BROKER resource "": every broker's default.
	clusterDefault bool
}

func (e entity) String() string {
	switch {
	case !e.isBroker:
		return "topic " + e.topic
	case e.clusterDefault:
		return "the default broker"
	}
	return "broker " + strconv.Itoa(int(e.broker))
}

// parseEntity reads "topic NAME" or "broker ID" (or "broker" with
// --default) from the front of pos and returns the rest.
func parseEntity(pos []string, clusterDefault bool) (entity, []string, error) {
	if len(pos) == 0 {
		return entity{}, nil, errors.New("want an entity: topic NAME, broker ID or broker --default")
	}
	switch pos[0] {
	case "topic":
		if clusterDefault {
			return entity{}, nil, errors.New("--default applies to brokers only")
		}
		if len(pos) < 2 {
			return entity{}, nil, errors.New("want a topic name after topic")
		}
		return entity{topic: pos[1]}, pos[2:], nil
	case "broker":
		if clusterDefault {
			return entity{isBroker: true, clusterDefault: true}, pos[1:], nil
		}
		if len(pos) < 2 {
			return entity{}, nil, errors.New("want a broker id after broker, or --default")
		}
		id, err := strconv.ParseInt(pos[1], 10, 32)
		if err != nil || id < 0 {
			return entity{}, nil, fmt.Errorf("invalid broker id %q", pos[1])
		}
		return entity{isBroker: true, broker: int32(id)}, pos[2:], nil
	}
	return entity{}, nil, fmt.Errorf("unknown entity type %q: want topic or broker", pos[0])
}

func configGet(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("config get", "samsa config get <topic NAME | broker ID | broker --default> [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	all := fs.Bool("all", false, "list every config, not only the dynamic ones")
	def := fs.Bool("default", false, "the cluster-wide default of every broker")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	ent, rest, err := parseEntity(pos, *def)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if len(rest) != 0 {
		return usageError(fs, stderr, "unexpected argument %q", rest[0])
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	var rcs kadm.ResourceConfigs
	switch {
	case !ent.isBroker:
		rcs, err = adm.DescribeTopicConfigs(ctx, ent.topic)
	case ent.clusterDefault:
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	default:
		rcs, err = adm.DescribeBrokerConfigs(ctx, ent.broker)
	}
	if err == nil && len(rcs) != 1 {
		err = fmt.Errorf("%d resources in the answer, want 1", len(rcs))
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("describe configs of %s: %w", ent, err))
	}
	rc := rcs[0]
	if rc.Err != nil {
		if !ent.isBroker {
			return fail(stderr, topicError(ent.topic, rc.Err, rc.ErrMessage))
		}
		return fail(stderr, fmt.Errorf("describe configs of %s: %v", ent, brokerErr(rc.Err, rc.ErrMessage)))
	}
	fmt.Fprintln(stdout, describeHeader(ent, *all))
	want := dynamicSource(ent)
	for _, c := range rc.Configs {
		if *all || c.Source == want {
			fmt.Fprintln(stdout, "  "+describeLine(c))
		}
	}
	return exitOK
}

// dynamicSource is the source kafka-configs --describe keeps without --all.
func dynamicSource(e entity) kmsg.ConfigSource {
	switch {
	case !e.isBroker:
		return kmsg.ConfigSourceDynamicTopicConfig
	case e.clusterDefault:
		return kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return kmsg.ConfigSourceDynamicBrokerConfig
}

func describeHeader(e entity, all bool) string {
	kind := "Dynamic"
	if all {
		kind = "All"
	}
	switch {
	case !e.isBroker:
		return fmt.Sprintf("%s configs for topic %s are:", kind, e.topic)
	case e.clusterDefault:
		return "Default configs for brokers in the cluster are:"
	}
	return fmt.Sprintf("%s configs for broker %d are:", kind, e.broker)
}

// describeLine prints one config as kafka-configs does:
// key=value sensitive=false synonyms={SOURCE:key=value, ...}.
func describeLine(c kadm.Config) string {
	var syn []string
	for _, s := range c.Synonyms {
		syn = append(syn, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, orNull(s.Value)))
	}
	return fmt.Sprintf("%s=%s sensitive=%t synonyms={%s}", c.Key, orNull(c.Value), c.Sensitive, strings.Join(syn, ", "))
}

func orNull(v *string) string {
	if v == nil {
		return "null"
	}
	return *v
}

func brokerErr(err error, msg string) error {
	var ke *kerr.Error
	if msg != "" && errors.As(err, &ke) {
		// The broker's message says what was wrong; the code's generic
		// description would only repeat it less precisely.
		return fmt.Errorf("%s (%s)", msg, ke.Message)
	}
	if msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

func configAlter(verb string, args []string, stdout, stderr io.Writer) int {
	synopsis := "samsa config set <topic NAME | broker ID | broker --default> key=value... [flags]"
	if verb == "delete" {
		synopsis = "samsa config delete <topic NAME | broker ID | broker --default> key... [flags]"
	}
	fs := newFlagSet("config "+verb, synopsis, stderr)
	var cf clientFlags
	cf.register(fs)
	def := fs.Bool("default", false, "the cluster-wide default of every broker")
	dryRun := fs.Bool("dry-run", false, "only validate the change (validate_only)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	ent, rest, err := parseEntity(pos, *def)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if len(rest) == 0 {
		return usageError(fs, stderr, "want at least one config")
	}
	var ops []kadm.AlterConfig
	for _, a := range rest {
		if verb == "delete" {
			ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: a})
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return usageError(fs, stderr, "invalid config %q: want key=value", a)
		}
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	var resps kadm.AlterConfigsResponses
	switch {
	case !ent.isBroker && *dryRun:
		resps, err = adm.ValidateAlterTopicConfigs(ctx, ops, ent.topic)
	case !ent.isBroker:
		resps, err = adm.AlterTopicConfigs(ctx, ops, ent.topic)
	case ent.clusterDefault && *dryRun:
		resps, err = adm.ValidateAlterBrokerConfigs(ctx, ops)
	case ent.clusterDefault:
		resps, err = adm.AlterBrokerConfigs(ctx, ops)
	case *dryRun:
		resps, err = adm.ValidateAlterBrokerConfigs(ctx, ops, ent.broker)
	default:
		resps, err = adm.AlterBrokerConfigs(ctx, ops, ent.broker)
	}
	if err == nil && len(resps) != 1 {
		err = fmt.Errorf("%d resources in the answer, want 1", len(resps))
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("alter configs of %s: %w", ent, err))
	}
	if r := resps[0]; r.Err != nil {
		if !ent.isBroker {
			return fail(stderr, topicError(ent.topic, r.Err, r.ErrMessage))
		}
		return fail(stderr, fmt.Errorf("alter configs of %s: %v", ent, brokerErr(r.Err, r.ErrMessage)))
	}
	if *dryRun {
		fmt.Fprintf(stdout, "Validated config change for %s.\n", ent)
	} else {
		fmt.Fprintf(stdout, "Completed updating config for %s.\n", ent)
	}
	return exitOK
}
