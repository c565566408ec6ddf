package main

// `samsa group`: list, describe and delete consumer groups and reset their
// committed offsets, in the spirit of kafka-consumer-groups.sh. Only classic
// groups (JoinGroup/SyncGroup) are described; their assignments are decoded
// as the consumer protocol's ConsumerMemberAssignment.

import (
	"context"
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

const groupUsage = `usage: samsa group <list|describe|delete|reset-offsets> [flags]

  list                  list groups with their state and protocol type
  describe GROUP…       show a group's members, assignments, offsets and lag
  delete GROUP…         delete inactive groups and their committed offsets
  reset-offsets GROUP   plan (and with --execute commit) new offsets

Run "samsa group <subcommand> -h" for the flags of each.
`

func runGroup(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("group", groupUsage, map[string]subcommand{
		"list":          groupList,
		"describe":      groupDescribe,
		"delete":        groupDelete,
		"reset-offsets": groupResetOffsets,
	}, args, stdout, stderr)
}

// groupStates are the states Kafka reports for groups (classic and KIP-848).
var groupStates = []string{"Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Dead", "Assigning", "Reconciling"}

func groupList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("group list", "samsa group list [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	stateFlag := fs.String("state", "", "only list groups in these comma-separated `states` (e.g. Stable,Empty)")
	format := formatFlag(fs)
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	states, err := parseStates(*stateFlag, "group", groupStates)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
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
	groups, err := adm.ListGroups(ctx, states...)
	if err != nil {
		return fail(stderr, fmt.Errorf("list groups: %w", err))
	}
	type groupJSON struct {
		Group        string `json:"group"`
		State        string `json:"state"`
		ProtocolType string `json:"protocol_type"`
		Coordinator  int32  `json:"coordinator"`
	}
	list := []groupJSON{}
	for _, g := range groups.Sorted() {
		// A broker answering ListGroups below v4 ignores the filter, so
		// filter here as well.
		if len(states) > 0 && !slices.Contains(states, g.State) {
			continue
		}
		list = append(list, groupJSON{g.Group, g.State, g.ProtocolType, g.Coordinator})
	}
	if *format == "json" {
		return writeJSON(stdout, stderr, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
	for _, g := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, dash(g.State), dash(g.ProtocolType))
	}
	tw.Flush()
	return exitOK
}

func groupDescribe(args []string, stdout, stderr io.Writer) int {
	return describeEach("group describe", "samsa group describe GROUP... [flags]", "want at least one group name", args, stdout, stderr, describeGroup)
}

// describeGroup prints one group: a header (state, protocol), a table of
// members with what they were assigned, and a table of every assigned or
// committed partition with its committed offset, log end offset and lag.
func describeGroup(adm *kadm.Client, cf *clientFlags, name string, w io.Writer) error {
	ctx, cancel := cf.ctx()
	defer cancel()
	lags, err := adm.Lag(ctx, name)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", name, err)
	}
	l, ok := lags[name]
	if !ok {
		return fmt.Errorf("describe group %q: the broker did not answer for it", name)
	}
	if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) || errors.Is(l.FetchErr, kerr.GroupIDNotFound) {
		if cmd := otherGroupCommand(ctx, adm, name); cmd != "" {
			return fmt.Errorf("group %q is a %s group: use samsa %s describe %s", name, strings.TrimSuffix(cmd, "-group"), cmd, name)
		}
	}
	if l.DescribeErr != nil {
		return groupError(name, l.DescribeErr)
	}
	if errors.Is(l.FetchErr, kerr.GroupIDNotFound) {
		return groupError(name, l.FetchErr)
	}
	if l.FetchErr != nil {
		return fmt.Errorf("fetch committed offsets of group %q: %w", name, l.FetchErr)
	}
	// Before DescribeGroups v6 a group that does not exist is reported as
	// Dead with no members rather than as GROUP_ID_NOT_FOUND.
	if l.State == "Dead" && len(l.Members) == 0 && len(l.Lag) == 0 {
		return fmt.Errorf("group %q does not exist", name)
	}
	fmt.Fprintf(w, "GROUP          %s\n", name)
	fmt.Fprintf(w, "STATE          %s\n", l.State)
	fmt.Fprintf(w, "PROTOCOL-TYPE  %s\n", dash(l.ProtocolType))
	fmt.Fprintf(w, "PROTOCOL       %s\n", dash(l.Protocol))
	fmt.Fprintf(w, "MEMBERS        %d\n", len(l.Members))
	rows := l.Lag.Sorted()
	var total int64
	for _, r := range rows {
		if r.Err == nil && r.Commit.At >= 0 {
			total += r.Lag
		}
	}
	// The total counts committed partitions only, as the LAG column does.
	fmt.Fprintf(w, "TOTAL-LAG      %d\n", total)
	if len(l.Members) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range l.Members {
			inst := "-"
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, inst, dash(m.ClientID),
				dash(m.ClientHost), assignmentString(m))
		}
		tw.Flush()
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tMEMBER-ID")
	for _, r := range rows {
		committed, end, lag := "-", "-", "-"
		if r.Commit.At >= 0 {
			committed = strconv.FormatInt(r.Commit.At, 10)
		}
		if r.End.Err == nil {
			end = strconv.FormatInt(r.End.Offset, 10)
		}
		// Like kafka-consumer-groups, lag is only shown against a
		// committed offset: without one it depends on auto.offset.reset.
		switch {
		case r.Err != nil:
			lag = errCode(r.Err)
		case r.Commit.At >= 0:
			lag = strconv.FormatInt(r.Lag, 10)
		}
		member := "-"
		if !r.IsEmpty() {
			member = r.Member.MemberID
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, committed, end, lag, member)
	}
	return tw.Flush()
}

// assignmentString prints a member's assigned partitions as
// "orders:0,2 audit:1", or "-" if it has none (or a non-consumer protocol).
func assignmentString(m kadm.DescribedGroupMember) string {
	a, ok := m.Assigned.AsConsumer()
	if !ok || a == nil {
		return "-"
	}
	var parts []string
	for _, t := range a.Topics {
		if len(t.Partitions) == 0 {
			continue
		}
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		nums := make([]string, len(ps))
		for i, p := range ps {
			nums[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t.Topic+":"+strings.Join(nums, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func groupDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("group delete", "samsa group delete GROUP... [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "want at least one group name")
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	resps, err := adm.DeleteGroups(ctx, pos...)
	if err != nil && len(resps) == 0 {
		return fail(stderr, fmt.Errorf("delete groups: %w", err))
	}
	rc := exitOK
	for _, name := range pos {
		r, ok := resps[name]
		switch {
		case !ok:
			rc = fail(stderr, fmt.Errorf("delete group %q: no answer from its coordinator: %v", name, err))
		case r.Err == nil:
			fmt.Fprintf(stdout, "deleted group %s\n", name)
		default:
			rc = fail(stderr, groupError(name, r.Err))
		}
	}
	return rc
}

// groupError turns a per-group broker error into a sentence that names the
// group and, where there is one, what to do about it.
// otherGroupCommand names the samsa command for a group that exists but is
// not a consumer group (DescribeGroups answers GROUP_ID_NOT_FOUND for a
// share or streams group, as Kafka's does): "share-group" or
// "streams-group", or "" if it is neither.
func otherGroupCommand(ctx context.Context, adm *kadm.Client, name string) string {
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return ""
	}
	switch groups[name].GroupType {
	case "share":
		return "share-group"
	case "streams":
		return "streams-group"
	}
	return ""
}

func groupError(group string, err error) error {
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Errorf("group %q does not exist", group)
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Errorf("group %q still has active members: stop its consumers first", group)
	case errors.Is(err, kerr.InvalidGroupID):
		return fmt.Errorf("invalid group id %q", group)
	case errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
		return fmt.Errorf("group %q: its coordinator is not ready yet, try again (%s)", group, errCode(err))
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Errorf("group %q: %s (%s)", group, strings.TrimSuffix(ke.Description, "."), ke.Message)
	}
	return fmt.Errorf("group %q: %w", group, err)
}

// errCode returns a Kafka error's code name (OFFSET_OUT_OF_RANGE) for table
// cells, where a sentence would not fit.
func errCode(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "error"
}

// plural returns "1 member", "2 members".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// topicSpec is one --topic argument: a topic and, optionally, the only
// partitions to touch (nil means all of them).
type topicSpec struct {
	topic      string
	partitions []int32
}

// parseTopicSpec parses "orders" or "orders:0,2" as kafka-consumer-groups
// does.
func parseTopicSpec(s string) (topicSpec, error) {
	topic, parts, hasParts := strings.Cut(s, ":")
	if topic == "" {
		return topicSpec{}, fmt.Errorf("invalid --topic %q: want TOPIC or TOPIC:PARTITION,...", s)
	}
	spec := topicSpec{topic: topic}
	if !hasParts {
		return spec, nil
	}
	for p := range strings.SplitSeq(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return topicSpec{}, fmt.Errorf("invalid partition %q in --topic %q: want a number >= 0", p, s)
		}
		if !slices.Contains(spec.partitions, int32(n)) {
			spec.partitions = append(spec.partitions, int32(n))
		}
	}
	return spec, nil
}

// resetTarget is where reset-offsets moves each selected partition.
type resetTarget struct {
	kind string // "earliest", "latest", "offset", "timestamp" or "shift"
	n    int64  // the offset, millisecond timestamp or shift
}

func groupResetOffsets(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("group reset-offsets",
		"samsa group reset-offsets GROUP --topic T[:P,...] --to-earliest|--to-latest|--to-offset N|--to-datetime RFC3339|--to-timestamp MS|--shift-by N [--execute]", stderr)
	var cf clientFlags
	cf.register(fs)
	var topics stringList
	fs.Var(&topics, "topic", "`TOPIC` or TOPIC:PARTITION,... to reset (repeatable)")
	earliest := fs.Bool("to-earliest", false, "reset to each partition's log start offset")
	latest := fs.Bool("to-latest", false, "reset to each partition's log end offset")
	toOffset := fs.String("to-offset", "", "reset to this `offset` (clamped to the partition's start and end)")
	toDatetime := fs.String("to-datetime", "", "reset to the first offset at or after this RFC 3339 `time`")
	toTimestamp := fs.String("to-timestamp", "", "reset to the first offset at or after this Unix `milliseconds` timestamp")
	shiftBy := fs.String("shift-by", "", "move each committed offset by `N` (negative: back), clamped")
	execute := fs.Bool("execute", false, "commit the new offsets (without it, only print the plan)")
	dryRun := fs.Bool("dry-run", false, "only print the plan (the default)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one group name, got %d", len(pos))
	}
	if len(topics) == 0 {
		return usageError(fs, stderr, "want at least one --topic")
	}
	if *execute && *dryRun {
		return usageError(fs, stderr, "--execute and --dry-run exclude each other")
	}
	var specs []topicSpec
	for _, s := range topics {
		spec, err := parseTopicSpec(s)
		if err != nil {
			return usageError(fs, stderr, "%v", err)
		}
		specs = append(specs, spec)
	}
	target, err := parseResetTarget(*earliest, *latest, *toOffset, *toDatetime, *toTimestamp, *shiftBy)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}

	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	group := pos[0]

	// Offsets of a group with live members would be overwritten by their
	// next commit, so Kafka only resets inactive groups: Empty, or Dead
	// (never created), which then starts from the offsets set here.
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fail(stderr, fmt.Errorf("describe group %q: %w", group, err))
	}
	d := described[group]
	switch {
	case d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound):
		return fail(stderr, groupError(group, d.Err))
	case d.Err == nil && d.State != "Empty" && d.State != "Dead":
		return fail(stderr, fmt.Errorf("group %q is %s with %s: offsets can only be reset while it is inactive (Empty); stop its consumers first",
			group, d.State, plural(len(d.Members), "member")))
	}

	plan, err := planReset(ctx, adm, group, specs, target)
	if err != nil {
		return fail(stderr, err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, o := range plan.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", group, o.Topic, o.Partition, o.At)
	}
	tw.Flush()
	if !*execute {
		fmt.Fprintln(stderr, "samsa: dry run, nothing committed: add --execute to commit these offsets")
		return exitOK
	}
	resps, err := adm.CommitOffsets(ctx, group, plan)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("commit offsets of group %q: %w", group, err))
	}
	return exitOK
}

// parseResetTarget checks that exactly one --to-*/--shift-by flag is given
// and parses its value.
func parseResetTarget(earliest, latest bool, offset, datetime, timestamp, shift string) (resetTarget, error) {
	var ts []resetTarget
	if earliest {
		ts = append(ts, resetTarget{kind: "earliest"})
	}
	if latest {
		ts = append(ts, resetTarget{kind: "latest"})
	}
	if offset != "" {
		n, err := strconv.ParseInt(offset, 10, 64)
		if err != nil || n < 0 {
			return resetTarget{}, fmt.Errorf("invalid --to-offset %q: want an offset >= 0", offset)
		}
		ts = append(ts, resetTarget{kind: "offset", n: n})
	}
	if datetime != "" {
		t, err := time.Parse(time.RFC3339Nano, datetime)
		if err != nil {
			return resetTarget{}, fmt.Errorf("invalid --to-datetime %q: want RFC 3339, e.g. 2024-05-01T12:00:00Z", datetime)
		}
		ts = append(ts, resetTarget{kind: "timestamp", n: t.UnixMilli()})
	}
	if timestamp != "" {
		n, err := strconv.ParseInt(timestamp, 10, 64)
		if err != nil || n < 0 {
			return resetTarget{}, fmt.Errorf("invalid --to-timestamp %q: want Unix milliseconds", timestamp)
		}
		ts = append(ts, resetTarget{kind: "timestamp", n: n})
	}
	if shift != "" {
		n, err := strconv.ParseInt(shift, 10, 64)
		if err != nil {
			return resetTarget{}, fmt.Errorf("invalid --shift-by %q: want a whole number", shift)
		}
		ts = append(ts, resetTarget{kind: "shift", n: n})
	}
	if len(ts) != 1 {
		return resetTarget{}, errors.New("want exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --to-timestamp, --shift-by")
	}
	return ts[0], nil
}

// planReset computes the new offset of every selected partition. Every new
// offset lies within [log start, log end], as in kafka-consumer-groups,
// which clamps an out-of-range --to-offset or --shift-by instead of
// committing an offset that would trigger auto.offset.reset.
func planReset(ctx context.Context, adm *kadm.Client, group string, specs []topicSpec, target resetTarget) (kadm.Offsets, error) {
	var names []string
	for _, s := range specs {
		if !slices.Contains(names, s.topic) {
			names = append(names, s.topic)
		}
	}
	tds, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	want := map[string][]int32{} // topic -> selected partitions
	for _, s := range specs {
		td, ok := tds[s.topic]
		if !ok {
			return nil, fmt.Errorf("topic %q does not exist", s.topic)
		}
		if td.Err != nil {
			return nil, topicError(s.topic, td.Err, "")
		}
		ps := s.partitions
		if ps == nil {
			ps = td.Partitions.Numbers()
		}
		for _, p := range ps {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", s.topic, p, len(td.Partitions))
			}
			if !slices.Contains(want[s.topic], p) {
				want[s.topic] = append(want[s.topic], p)
			}
		}
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var byTime kadm.ListedOffsets
	var committed kadm.OffsetResponses
	switch target.kind {
	case "timestamp":
		// A partition with no record at or after the time gets its end
		// offset, so the group consumes only what arrives later.
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, target.n, names...); err != nil {
			return nil, fmt.Errorf("list offsets by time: %w", err)
		}
	case "shift":
		// Kafka answers an OffsetFetch for an unknown group with no
		// offsets, some brokers with GROUP_ID_NOT_FOUND: both mean
		// nothing is committed.
		committed, err = adm.FetchOffsetsForTopics(ctx, group, names...)
		if errors.Is(err, kerr.GroupIDNotFound) {
			committed, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("fetch committed offsets of group %q: %w", group, err)
		}
	}
	plan := make(kadm.Offsets)
	for topic, ps := range want {
		for _, p := range ps {
			start, err := listedAt(starts, topic, p)
			if err != nil {
				return nil, err
			}
			end, err := listedAt(ends, topic, p)
			if err != nil {
				return nil, err
			}
			var at int64
			switch target.kind {
			case "earliest":
				at = start
			case "latest":
				at = end
			case "offset":
				at = target.n
			case "timestamp":
				if at, err = listedAt(byTime, topic, p); err != nil {
					return nil, err
				}
			case "shift":
				c, ok := committed.Lookup(topic, p)
				if !ok || c.Err != nil || c.At < 0 {
					return nil, fmt.Errorf("cannot shift %s:%d: group %q has no committed offset for it", topic, p, group)
				}
				at = c.At + target.n
			}
			at = min(max(at, start), end)
			plan.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	return plan, nil
}

// listedAt returns a listed offset, or an error naming the partition.
func listedAt(l kadm.ListedOffsets, topic string, p int32) (int64, error) {
	o, ok := l.Lookup(topic, p)
	switch {
	case !ok:
		return 0, fmt.Errorf("no offset listed for %s:%d", topic, p)
	case o.Err != nil:
		return 0, fmt.Errorf("list offsets of %s:%d: %w", topic, p, o.Err)
	}
	return o.Offset, nil
}
