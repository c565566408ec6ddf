package main

// `samsa streams-group`: list and describe Kafka Streams applications'
// streams groups (KIP-1071, group.protocol=streams), in the spirit of
// kafka-streams-groups.sh: the group's state and epochs, its subtopologies,
// and each member's process and tasks.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const streamsGroupUsage = `usage: samsa streams-group <list|describe> [flags]

  list                  list streams groups with their state
  describe GROUP…       show a streams group's topology, members and tasks

Run "samsa streams-group <subcommand> -h" for the flags of each.
`

func runStreamsGroup(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("streams-group", streamsGroupUsage, map[string]subcommand{
		"list":     streamsGroupList,
		"describe": streamsGroupDescribe,
	}, args, stdout, stderr)
}

// streamsGroupStates are the states Kafka reports for streams groups.
var streamsGroupStates = []string{"Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"}

func streamsGroupList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("streams-group list", "samsa streams-group list [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	stateFlag := fs.String("state", "", "only list groups in these comma-separated `states` (e.g. Stable,NotReady)")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	states, err := parseStates(*stateFlag, "streams group", streamsGroupStates)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	cl, err := cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, []string{"streams"}
	var groups []kmsg.ListGroupsResponseGroup
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			return fail(stderr, fmt.Errorf("list groups: %w", sh.Err))
		}
		resp := sh.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fail(stderr, fmt.Errorf("list groups: %w", err))
		}
		groups = append(groups, resp.Groups...)
	}
	slices.SortFunc(groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\n", g.Group, dash(g.GroupState))
	}
	tw.Flush()
	return exitOK
}

func streamsGroupDescribe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("streams-group describe", "samsa streams-group describe GROUP... [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, stderr, "want at least one streams group name")
	}
	cl, err := cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	for i, name := range pos {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		ctx, cancel := cf.ctx()
		err := describeStreamsGroup(ctx, cl, name, stdout)
		cancel()
		if err != nil {
			return fail(stderr, err)
		}
	}
	return exitOK
}

// describeStreamsGroup asks the group's coordinator (franz-go does not
// route StreamsGroupDescribe itself) and prints a header, the
// subtopologies and the members with their current and target tasks.
func describeStreamsGroup(ctx context.Context, cl *kgo.Client, name string, w io.Writer) error {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{name}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("find the coordinator of %q: %w", name, err)
	}
	if len(fresp.Coordinators) != 1 {
		return fmt.Errorf("find the coordinator of %q: no answer for it", name)
	}
	if err := kerr.ErrorForCode(fresp.Coordinators[0].ErrorCode); err != nil {
		return groupError(name, err)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{name}
	resp, err := req.RequestWith(ctx, cl.Broker(int(fresp.Coordinators[0].NodeID)))
	if err != nil {
		return fmt.Errorf("describe streams group %q: %w", name, err)
	}
	if len(resp.Groups) != 1 {
		return fmt.Errorf("describe streams group %q: the broker did not answer for it", name)
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) && g.ErrorMessage != nil && strings.Contains(*g.ErrorMessage, "not a streams group") {
			return fmt.Errorf("group %q is not a streams group (see samsa group describe)", name)
		}
		return groupError(name, err)
	}
	topologyEpoch := "-"
	if g.Topology != nil {
		topologyEpoch = fmt.Sprint(g.Topology.Epoch)
	}
	fmt.Fprintf(w, "GROUP             %s\n", g.Group)
	fmt.Fprintf(w, "STATE             %s\n", g.State)
	fmt.Fprintf(w, "GROUP-EPOCH       %d\n", g.Epoch)
	fmt.Fprintf(w, "ASSIGNMENT-EPOCH  %d\n", g.AssignmentEpoch)
	fmt.Fprintf(w, "TOPOLOGY-EPOCH    %s\n", topologyEpoch)
	fmt.Fprintf(w, "MEMBERS           %d\n", len(g.Members))
	if g.Topology != nil && len(g.Topology.Subtopologies) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SUBTOPOLOGY\tSOURCE-TOPICS\tREPARTITION-SOURCES\tREPARTITION-SINKS\tCHANGELOGS")
		for _, s := range g.Topology.Subtopologies {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.SubtopologyID, commaList(s.SourceTopics), topicInfos(s.RepartitionSourceTopics),
				commaList(s.RepartitionSinkTopics), topicInfos(s.StateChangelogTopics))
		}
		tw.Flush()
	}
	if len(g.Members) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER-ID\tEPOCH\tPROCESS\tCLIENT-ID\tHOST\tACTIVE\tSTANDBY\tTARGET-ACTIVE")
		members := slices.Clone(g.Members)
		slices.SortFunc(members, func(a, b kmsg.StreamsGroupDescribeResponseGroupMember) int {
			return strings.Compare(a.MemberID, b.MemberID)
		})
		for _, m := range members {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", m.MemberID, m.MemberEpoch, m.ProcessID, dash(m.ClientID), dash(m.ClientHost),
				taskString(m.Assignment.ActiveTasks), taskString(m.Assignment.StandbyTasks), taskString(m.TargetAssignment.ActiveTasks))
		}
		tw.Flush()
	}
	return nil
}

func commaList(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return strings.Join(ss, ",")
}

func topicInfos(ts []kmsg.TopicInfo) string {
	var names []string
	for _, t := range ts {
		names = append(names, fmt.Sprintf("%s(%d)", t.Topic, t.NumPartitions))
	}
	return commaList(names)
}

// taskString prints tasks as Kafka's tools do: subtopology:[partitions].
func taskString(ts []kmsg.TaskIDs) string {
	var parts []string
	for _, t := range ts {
		ps := make([]string, len(t.Partitions))
		for i, p := range t.Partitions {
			ps[i] = fmt.Sprint(p)
		}
		parts = append(parts, t.SubtopologyID+":["+strings.Join(ps, ",")+"]")
	}
	return commaList(parts)
}
