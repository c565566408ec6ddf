package main

// `samsa share-group`: list, describe and delete KIP-932 share groups and
// reset their start offsets, in the spirit of kafka-share-groups.sh. A share
// group's offset on a partition is its share-partition start offset: every
// record before it was acknowledged or archived.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

const shareGroupUsage = `usage: samsa share-group <list|describe|delete|reset-offsets> [flags]

  list                  list share groups with their state
  describe GROUP…       show a share group's members, assignments, start offsets and lag
  delete GROUP…         delete inactive share groups and their share state
                        (with --topic: only the group's state of those topics)
  reset-offsets GROUP   plan (and with --execute apply) new start offsets

Run "samsa share-group <subcommand> -h" for the flags of each.
`

func runShareGroup(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("share-group", shareGroupUsage, map[string]subcommand{
		"list":          shareGroupList,
		"describe":      shareGroupDescribe,
		"delete":        shareGroupDelete,
		"reset-offsets": shareGroupResetOffsets,
	}, args, stdout, stderr)
}

func shareGroupList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("share-group list", "samsa share-group list [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	groups, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		return fail(stderr, fmt.Errorf("list share groups: %w", err))
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\n", g.Group, dash(g.State))
	}
	tw.Flush()
	return exitOK
}

func shareGroupDescribe(args []string, stdout, stderr io.Writer) int {
	return describeEach("share-group describe", "samsa share-group describe GROUP... [flags]", "want at least one share group name", args, stdout, stderr, describeShareGroup)
}

// describeShareGroup prints one share group: a header, its members with
// their assignments, and each partition it has state for with the start
// offset and lag (records past the start offset not yet delivered to
// completion).
func describeShareGroup(adm *kadm.Client, cf *clientFlags, name string, w io.Writer) error {
	ctx, cancel := cf.ctx()
	defer cancel()
	described, err := adm.DescribeShareGroups(ctx, name)
	if err != nil {
		return fmt.Errorf("describe share group %q: %w", name, err)
	}
	d, ok := described[name]
	if !ok {
		return fmt.Errorf("describe share group %q: the broker did not answer for it", name)
	}
	if d.Err != nil {
		return groupError(name, d.Err)
	}
	offsets, err := adm.DescribeShareGroupOffsets(ctx, name)
	if err != nil {
		return fmt.Errorf("describe share group %q offsets: %w", name, err)
	}
	o := offsets[name]
	if o.Err != nil {
		return groupError(name, o.Err)
	}
	fmt.Fprintf(w, "GROUP             %s\n", name)
	fmt.Fprintf(w, "STATE             %s\n", d.GroupState)
	fmt.Fprintf(w, "GROUP-EPOCH       %d\n", d.GroupEpoch)
	fmt.Fprintf(w, "ASSIGNMENT-EPOCH  %d\n", d.AssignmentEpoch)
	fmt.Fprintf(w, "MEMBERS           %d\n", len(d.Members))
	if len(d.Members) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER-ID\tEPOCH\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", m.MemberID, m.MemberEpoch, dash(m.ClientID), dash(m.ClientHost), topicsSetString(m.Assignment))
		}
		tw.Flush()
	}
	rows := o.Offsets.Sorted()
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTART-OFFSET\tLAG")
	for _, r := range rows {
		start, lag := "-", "-"
		switch {
		case r.Err != nil:
			start = errCode(r.Err)
		case r.StartOffset >= 0:
			start = strconv.FormatInt(r.StartOffset, 10)
			if r.Lag >= 0 {
				lag = strconv.FormatInt(r.Lag, 10)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Topic, r.Partition, start, lag)
	}
	return tw.Flush()
}

// topicsSetString prints "orders:0,2 audit:1", or "-".
func topicsSetString(s kadm.TopicsSet) string {
	var parts []string
	for _, t := range s.Sorted() {
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
	return strings.Join(parts, " ")
}

func shareGroupDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("share-group delete", "samsa share-group delete GROUP... [--topic T ...] [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	var topics stringList
	fs.Var(&topics, "topic", "delete only the group's share state of `TOPIC` (repeatable; one group)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "want at least one share group name")
	}
	if len(topics) > 0 && len(pos) != 1 {
		return usageError(fs, stderr, "--topic takes exactly one group")
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	if len(topics) > 0 {
		resps, err := adm.DeleteShareGroupOffsets(ctx, pos[0], topics...)
		if err != nil {
			return fail(stderr, groupError(pos[0], err))
		}
		rc := exitOK
		for _, t := range topics {
			if err := resps[t]; err != nil {
				rc = fail(stderr, fmt.Errorf("delete share state of topic %q in group %q: %w", t, pos[0], err))
				continue
			}
			fmt.Fprintf(stdout, "deleted the share state of topic %s in group %s\n", t, pos[0])
		}
		return rc
	}
	resps, err := adm.DeleteGroups(ctx, pos...)
	if err != nil && len(resps) == 0 {
		return fail(stderr, fmt.Errorf("delete share groups: %w", err))
	}
	rc := exitOK
	for _, name := range pos {
		r, ok := resps[name]
		switch {
		case !ok:
			rc = fail(stderr, fmt.Errorf("delete share group %q: no answer from its coordinator: %v", name, err))
		case r.Err == nil:
			fmt.Fprintf(stdout, "deleted share group %s\n", name)
		default:
			rc = fail(stderr, groupError(name, r.Err))
		}
	}
	return rc
}

func shareGroupResetOffsets(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("share-group reset-offsets",
		"samsa share-group reset-offsets GROUP --topic T[:P,...] --to-earliest|--to-latest|--to-offset N [--execute]", stderr)
	var cf clientFlags
	cf.register(fs)
	var topics stringList
	fs.Var(&topics, "topic", "`TOPIC` or TOPIC:PARTITION,... to reset (repeatable)")
	earliest := fs.Bool("to-earliest", false, "reset to each partition's log start offset")
	latest := fs.Bool("to-latest", false, "reset to each partition's log end offset")
	toOffset := fs.String("to-offset", "", "reset to this `offset` (clamped to the partition's start and end)")
	execute := fs.Bool("execute", false, "apply the plan (without it, only print it)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one share group name")
	}
	n := 0
	for _, set := range []bool{*earliest, *latest, *toOffset != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageError(fs, stderr, "want exactly one of --to-earliest, --to-latest, --to-offset")
	}
	var to int64
	if *toOffset != "" {
		v, err := strconv.ParseInt(*toOffset, 10, 64)
		if err != nil || v < 0 {
			return usageError(fs, stderr, "invalid --to-offset %q: want an offset >= 0", *toOffset)
		}
		to = v
	}
	if len(topics) == 0 {
		return usageError(fs, stderr, "want at least one --topic")
	}
	var specs []topicSpec
	for _, t := range topics {
		s, err := parseTopicSpec(t)
		if err != nil {
			return usageError(fs, stderr, "%v", err)
		}
		specs = append(specs, s)
	}
	adm, err := cf.admin()
	if err != nil {
		return fail(stderr, err)
	}
	defer adm.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	var names []string
	for _, s := range specs {
		names = append(names, s.topic)
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return fail(stderr, fmt.Errorf("list start offsets: %w", err))
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return fail(stderr, fmt.Errorf("list end offsets: %w", err))
	}
	var plan kadm.Offsets
	for _, s := range specs {
		ps, ok := ends[s.topic]
		if !ok {
			return fail(stderr, fmt.Errorf("topic %q does not exist", s.topic))
		}
		for p, end := range ps {
			if s.partitions != nil && !slices.Contains(s.partitions, p) {
				continue
			}
			start, _ := starts.Lookup(s.topic, p)
			if end.Err != nil || start.Err != nil {
				return fail(stderr, fmt.Errorf("offsets of %s-%d: %v %v", s.topic, p, end.Err, start.Err))
			}
			at := to
			switch {
			case *earliest:
				at = start.Offset
			case *latest:
				at = end.Offset
			}
			at = min(max(at, start.Offset), end.Offset)
			plan.Add(kadm.Offset{Topic: s.topic, Partition: p, At: at})
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tNEW-START-OFFSET")
	for _, o := range plan.Sorted() {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", o.Topic, o.Partition, o.At)
	}
	tw.Flush()
	if !*execute {
		fmt.Fprintln(stdout, "(dry run: add --execute to apply)")
		return exitOK
	}
	res, err := adm.AlterShareGroupOffsets(ctx, pos[0], plan)
	if err != nil {
		return fail(stderr, groupError(pos[0], err))
	}
	if err := res.Error(); err != nil {
		return fail(stderr, groupError(pos[0], err))
	}
	fmt.Fprintf(stdout, "reset the start offsets of share group %s\n", pos[0])
	return exitOK
}
