package main

// `samsa cluster`: the cluster as a whole — its brokers and active
// controller, and new cluster ids for formatting nodes.

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

const clusterUsage = `usage: samsa cluster <info|quorum|new-id> [flags]

  info      show the cluster id, the active controller and the brokers
            (--format json for scripts)
  quorum    show the metadata quorum: leader, epoch, high watermark and
            each voter's log end offset and lag
  new-id    print a new random cluster id (for samsa server --cluster-id)

Run "samsa cluster <subcommand> -h" for the flags of each.
`

func runCluster(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("cluster", clusterUsage, map[string]subcommand{
		"info":   clusterInfo,
		"quorum": clusterQuorum,
		"new-id": clusterNewID,
	}, args, stdout, stderr)
}

func clusterNewID(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cluster new-id", "samsa cluster new-id", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "new-id takes no arguments")
	}
	id, err := metadata.RandomUuid(rand.Reader)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintln(stdout, id.String())
	return exitOK
}

func clusterInfo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cluster info", "samsa cluster info [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	format := formatFlag(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "info takes no arguments")
	}
	if err := checkFormat(*format); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	cl, err := cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := cf.ctx()
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	info := clusterInfoJSON{ClusterID: md.Cluster, ActiveController: -1, ClientController: md.Controller, Brokers: []brokerJSON{}}
	// Metadata's controller id is, on a KRaft cluster, a broker that
	// clients may send controller requests to (they are forwarded), not
	// the active controller: that is the metadata quorum's leader, which
	// brokers report through DescribeQuorum.
	q, qerr := describeQuorum(ctx, cl)
	if qerr == nil {
		info.ActiveController, info.QuorumEpoch = q.LeaderID, q.LeaderEpoch
		for _, v := range q.CurrentVoters {
			info.Voters = append(info.Voters, v.ReplicaID)
		}
	}
	for _, b := range md.Brokers {
		info.Brokers = append(info.Brokers, brokerJSON{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	if *format == "json" {
		if qerr != nil {
			info.ActiveControllerError = qerr.Error()
		}
		return writeJSON(stdout, stderr, info)
	}
	fmt.Fprintf(stdout, "cluster id:        %s\n", md.Cluster)
	if qerr != nil {
		fmt.Fprintf(stdout, "active controller: unknown (%v)\n", qerr)
	} else {
		fmt.Fprintf(stdout, "active controller: %d (quorum leader, epoch %d; voters %v)\n", q.LeaderID, q.LeaderEpoch, info.Voters)
	}
	fmt.Fprintf(stdout, "controller id for clients: %d\n\n", md.Controller)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tHOST\tPORT\tRACK")
	for _, b := range md.Brokers {
		rack := "-"
		if b.Rack != nil {
			rack = *b.Rack
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", b.NodeID, b.Host, b.Port, rack)
	}
	tw.Flush()
	return exitOK
}

// clusterInfoJSON is samsa cluster info --format json.
type clusterInfoJSON struct {
	ClusterID string `json:"cluster_id"`
	// ActiveController is the metadata quorum's leader; -1 if unknown.
	ActiveController      int32   `json:"active_controller"`
	ActiveControllerError string  `json:"active_controller_error,omitempty"`
	QuorumEpoch           int32   `json:"quorum_epoch"`
	Voters                []int32 `json:"voters"`
	// ClientController is Metadata's controller id.
	ClientController int32        `json:"controller_id_for_clients"`
	Brokers          []brokerJSON `json:"brokers"`
}

type brokerJSON struct {
	ID   int32   `json:"id"`
	Host string  `json:"host"`
	Port int32   `json:"port"`
	Rack *string `json:"rack"`
}

// clusterQuorum describes the metadata quorum like kafka-metadata-quorum
// describe --status --replication: brokers forward DescribeQuorum to the
// quorum leader. Offsets are metadata log positions; a voter's lag is how
// far its log end is behind the leader's.
func clusterQuorum(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cluster quorum", "samsa cluster quorum [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(fs, stderr, "quorum takes no arguments")
	}
	cl, err := cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	p, err := describeQuorum(ctx, cl)
	if err != nil {
		return fail(stderr, err)
	}
	printQuorum(stdout, p, time.Now())
	return exitOK
}

// describeQuorum asks a broker for the metadata quorum's state.
func describeQuorum(ctx context.Context, cl *kgo.Client) (kmsg.DescribeQuorumResponseTopicPartition, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	var none kmsg.DescribeQuorumResponseTopicPartition
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return none, fmt.Errorf("describe quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return none, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return none, fmt.Errorf("describe quorum: answer has %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return none, fmt.Errorf("describe quorum: %w", err)
	}
	return p, nil
}

func printQuorum(w io.Writer, p kmsg.DescribeQuorumResponseTopicPartition, now time.Time) {
	leaderEnd := p.HighWatermark
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderEnd = v.LogEndOffset
		}
	}
	fmt.Fprintf(w, "leader:         %d\nepoch:          %d\nhigh watermark: %d\n\n", p.LeaderID, p.LeaderEpoch, p.HighWatermark)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VOTER\tSTATUS\tLOG-END-OFFSET\tLAG\tLAST-FETCH\tLAST-CAUGHT-UP")
	for _, v := range p.CurrentVoters {
		status := "follower"
		if v.ReplicaID == p.LeaderID {
			status = "leader"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\n", v.ReplicaID, status, v.LogEndOffset,
			max(leaderEnd-v.LogEndOffset, 0), ago(v.LastFetchTimestamp, now), ago(v.LastCaughtUpTimestamp, now))
	}
	// Observers: controllers being added and broker-only nodes.
	for _, v := range p.Observers {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\n", v.ReplicaID, "observer", v.LogEndOffset,
			max(leaderEnd-v.LogEndOffset, 0), ago(v.LastFetchTimestamp, now), ago(v.LastCaughtUpTimestamp, now))
	}
	tw.Flush()
}

// ago renders a Unix millisecond timestamp relative to now; "-" if unknown.
func ago(ms int64, now time.Time) string {
	if ms < 0 {
		return "-"
	}
	d := max(now.Sub(time.UnixMilli(ms)), 0)
	return d.Round(time.Millisecond).String() + " ago"
}
