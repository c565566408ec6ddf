package main

// `samsa topic`: create, list, describe and delete topics through the admin
// API, in the spirit of kafka-topics.sh and `rpk topic`.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const topicUsage = `usage: samsa topic <create|list|describe|delete|trim> [flags]

  create NAME     create a topic
  list            list topics with their partition count and replication factor
  describe NAME…  show a topic's id, non-default configs and partitions
  delete NAME…    delete topics
  trim NAME       delete a partition's records before an offset (DeleteRecords)

Run "samsa topic <subcommand> -h" for the flags of each.
`

func runTopic(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("topic", topicUsage, map[string]subcommand{
		"create":   topicCreate,
		"list":     topicList,
		"describe": topicDescribe,
		"delete":   topicDelete,
		"trim":     topicTrim,
	}, args, stdout, stderr)
}

func topicCreate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("topic create", "samsa topic create NAME [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	partitions := fs.Int("partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	ifNotExists := fs.Bool("if-not-exists", false, "succeed if the topic already exists")
	var configs kvList
	fs.Var(&configs, "config", "topic config `key=value` (repeatable), e.g. cleanup.policy=compact")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one topic name, got %d", len(pos))
	}
	if *rf < -1 || *rf == 0 || *rf > 32767 {
		return usageError(fs, stderr, "invalid --replication-factor %d", *rf)
	}
	if *partitions < -1 || *partitions == 0 {
		return usageError(fs, stderr, "invalid --partitions %d", *partitions)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	cfg := make(map[string]*string, len(configs.keys))
	for i, k := range configs.keys {
		cfg[k] = &configs.values[i]
	}
	ctx, cancel := cf.ctx()
	defer cancel()
	name := pos[0]
	resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*rf), cfg, name)
	if *ifNotExists && errors.Is(err, kerr.TopicAlreadyExists) {
		return exitOK
	}
	if err != nil {
		return fail(stderr, topicError(name, err, resp.ErrMessage))
	}
	fmt.Fprintf(stdout, "created topic %s: %d partitions, replication factor %d\n",
		name, resp.NumPartitions, resp.ReplicationFactor)
	return exitOK
}

func topicList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("topic list", "samsa topic list [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	internal := fs.Bool("internal", false, "include internal topics such as __consumer_offsets")
	format := formatFlag(fs)
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if err := checkFormat(*format); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return fail(stderr, fmt.Errorf("list topics: %w", err))
	}
	type topicJSON struct {
		Name              string `json:"name"`
		ID                string `json:"id"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
		Internal          bool   `json:"internal"`
	}
	list := []topicJSON{}
	for _, t := range topics.Sorted() {
		if t.IsInternal && !*internal {
			continue
		}
		list = append(list, topicJSON{t.Topic, kafkaUUID(t.ID), len(t.Partitions), t.Partitions.NumReplicas(), t.IsInternal})
	}
	if *format == "json" {
		return writeJSON(stdout, stderr, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPARTITIONS\tREPLICATION-FACTOR")
	for _, t := range list {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Name, t.Partitions, t.ReplicationFactor)
	}
	tw.Flush()
	return exitOK
}

func topicDescribe(args []string, stdout, stderr io.Writer) int {
	return describeEach("topic describe", "samsa topic describe NAME... [flags]", "want at least one topic name", args, stdout, stderr, describeOne)
}

// describeOne prints one topic: a header of id and non-default configs, then
// a table of partitions with their replicas and log start/end offsets.
func describeOne(adm *kadm.Client, cf *clientFlags, name string, w io.Writer) error {
	ctx, cancel := cf.ctx()
	defer cancel()
	topics, err := adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		return fmt.Errorf("describe topic %q: %w", name, err)
	}
	td := topics[name]
	if td.Err != nil {
		return topicError(name, td.Err, "")
	}
	configs, err := adm.DescribeTopicConfigs(ctx, name)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = configs.On(name, func(rc *kadm.ResourceConfig) error { return rc.Err })
	}
	if err != nil {
		return topicError(name, err, rc.ErrMessage)
	}
	starts, err := adm.ListStartOffsets(ctx, name)
	if err != nil {
		return fmt.Errorf("list start offsets of %q: %w", name, err)
	}
	ends, err := adm.ListEndOffsets(ctx, name)
	if err != nil {
		return fmt.Errorf("list end offsets of %q: %w", name, err)
	}
	fmt.Fprintf(w, "NAME        %s\n", name)
	fmt.Fprintf(w, "ID          %s\n", kafkaUUID(td.ID))
	fmt.Fprintf(w, "INTERNAL    %t\n", td.IsInternal)
	fmt.Fprintf(w, "PARTITIONS  %d\n", len(td.Partitions))
	fmt.Fprintf(w, "REPLICAS    %d\n", td.Partitions.NumReplicas())
	fmt.Fprintf(w, "CONFIGS     %s\n", nonDefaultConfigs(rc.Configs))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tLOG-START\tLOG-END")
	for _, p := range td.Partitions.Sorted() {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Partition, p.Leader, p.LeaderEpoch,
			int32List(p.Replicas), int32List(p.ISR),
			offsetCell(starts, name, p.Partition), offsetCell(ends, name, p.Partition))
	}
	return tw.Flush()
}

// kafkaUUID prints a topic id the way Kafka's Uuid.toString does (URL-safe
// base64 without padding), so ids can be compared with kafka-topics output.
func kafkaUUID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return "-"
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// nonDefaultConfigs lists, sorted, the configs whose value does not come
// from the built-in default: set on the topic or inherited from the broker.
// This matches kafka-topics --describe, which hides only isDefault entries.
func nonDefaultConfigs(cs []kadm.Config) string {
	var out []string
	for _, c := range cs {
		if c.Source == kmsg.ConfigSourceDefaultConfig || c.Source == kmsg.ConfigSourceUnknown {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		out = append(out, c.Key+"="+v)
	}
	if len(out) == 0 {
		return "-"
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func int32List(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// offsetCell prints a listed offset, or the error code if the partition's
// leader could not answer, so one bad partition does not hide the rest.
func offsetCell(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	switch {
	case !ok:
		return "?"
	case o.Err != nil:
		var ke *kerr.Error
		if errors.As(o.Err, &ke) {
			return ke.Message
		}
		return "error"
	}
	return fmt.Sprint(o.Offset)
}

func topicDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("topic delete", "samsa topic delete NAME... [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	ifExists := fs.Bool("if-exists", false, "succeed for topics that do not exist")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "want at least one topic name")
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	resps, err := adm.DeleteTopics(ctx, pos...)
	if err != nil {
		return fail(stderr, fmt.Errorf("delete topics: %w", err))
	}
	rc := exitOK
	for _, name := range pos {
		r, err := resps.On(name, func(r *kadm.DeleteTopicResponse) error { return r.Err })
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "deleted topic %s\n", name)
		case *ifExists && errors.Is(err, kerr.UnknownTopicOrPartition):
		default:
			rc = fail(stderr, topicError(name, err, r.ErrMessage))
		}
	}
	return rc
}

// topicTrim moves a partition's log start offset forward, deleting the
// records before it (kafka-delete-records.sh), and prints the new low
// watermark.
func topicTrim(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("topic trim", "samsa topic trim NAME --partition P --offset N [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	partition := fs.Int("partition", -1, "the partition to trim (required)")
	offset := fs.Int64("offset", -2, "delete records before this `offset`; -1 means the high watermark (everything readable)")
	fs.Int64Var(offset, "before-offset", -2, "same as --offset")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one topic name, got %d", len(pos))
	}
	if *partition < 0 {
		return usageError(fs, stderr, "--partition is required")
	}
	if *offset < -1 {
		return usageError(fs, stderr, "--offset is required: an offset, or -1 for the high watermark")
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	name := pos[0]
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: name, Partition: int32(*partition), At: *offset})
	resps, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		return fail(stderr, topicError(name, err, ""))
	}
	r, ok := resps.Lookup(name, int32(*partition))
	if !ok {
		return fail(stderr, fmt.Errorf("no answer for %s-%d", name, *partition))
	}
	if r.Err != nil {
		return fail(stderr, fmt.Errorf("trim %s-%d: %w", name, *partition, r.Err))
	}
	fmt.Fprintf(stdout, "trimmed %s-%d: low watermark %d\n", name, *partition, r.LowWatermark)
	return exitOK
}
