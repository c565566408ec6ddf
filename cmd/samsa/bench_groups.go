package main

// `samsa bench-groups`: consumer-group load against any Kafka cluster
// (issue 3): offset-commit throughput and latency, the time a group takes to
// settle after a member leaves, and many groups holding committed offsets
// (for the broker's memory, measured from outside by bench/groups.sh).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const benchGroupsSynopsis = `samsa bench-groups commit|rebalance|offsets [flags]

commit     N committers (--clients, a comma-separated list of N) each commit
           offsets for every partition of --partitions in a loop for
           --duration, first as simple commits (generation -1, no member),
           then as the only member of its own classic group (kgo
           CommitOffsetsSync with the member's generation). Reports
           commits/s (one OffsetCommit request each) and p50/p99 latency.
rebalance  --members consumers join a fresh group on a topic of
           --partitions partitions; once all are assigned, one leaves
           (Close, i.e. LeaveGroup); measures the time from the leave until
           the rest hold every partition exactly once, balanced. --runs per
           --protocols (range: eager; cooperative-sticky; consumer:
           KIP-848). Reports medians.
offsets    commits offsets for --partitions partitions in each of --groups
           groups (simple commits, --concurrency at a time). With --check,
           commits nothing: waits until the last group's offsets can be
           fetched (after a broker restart: until __consumer_offsets is
           loaded), then fetches and checks every group.

Topics are created when missing (broker default replication factor).`

// benchGroupsOpts is the parsed command line of `samsa bench-groups`.
type benchGroupsOpts struct {
	cf          clientFlags
	topic       string
	topicID     [16]byte // learned by ensureTopic; OffsetCommit v10 names topics by id
	partitions  int
	clients     []int
	duration    time.Duration
	members     int
	runs        int
	protocols   []string
	heartbeat   time.Duration
	jitter      time.Duration
	groups      int
	concurrency int
	prefix      string
	check       bool
	jsonOut     bool
	tsvOut      bool
}

// groupsCommitCase is one committer count in one commit mode.
type groupsCommitCase struct {
	Mode       string  `json:"mode"` // simple or member
	Clients    int     `json:"clients"`
	Partitions int     `json:"partitions_per_commit"`
	Commits    int64   `json:"commits"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"commits_per_sec"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
}

// groupsRebalanceCase is every run of one protocol.
type groupsRebalanceCase struct {
	Protocol   string    `json:"protocol"`
	Members    int       `json:"members"`
	Partitions int       `json:"partitions"`
	RunsMs     []float64 `json:"settle_ms"` // leave → settled, per run
	JoinMs     []float64 `json:"join_ms"`   // first start → all assigned, per run
	MedianMs   float64   `json:"median_settle_ms"`
	MinMs      float64   `json:"min_settle_ms"`
	MaxMs      float64   `json:"max_settle_ms"`
	MedianJoin float64   `json:"median_join_ms"`
}

// groupsOffsetsResult is the outcome of `offsets` (with or without --check).
type groupsOffsetsResult struct {
	Groups     int     `json:"groups"`
	Partitions int     `json:"partitions_per_group"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"groups_per_sec,omitempty"`
	Errors     int64   `json:"errors"`
	// --check only: time until the last group's offsets were fetched, the
	// wall clock at that moment, and how many groups hold exactly the
	// offsets that `offsets` commits.
	LoadMs     float64 `json:"load_ms,omitempty"`
	LoadedAtMs int64   `json:"loaded_at_unix_ms,omitempty"`
	GroupsOK   int     `json:"groups_ok"`
}

type benchGroupsResult struct {
	Commit    []groupsCommitCase    `json:"commit,omitempty"`
	Rebalance []groupsRebalanceCase `json:"rebalance,omitempty"`
	Offsets   *groupsOffsetsResult  `json:"offsets,omitempty"`
}

func runBenchGroups(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench-groups", benchGroupsSynopsis, stderr)
	var o benchGroupsOpts
	var clients, protocols string
	o.cf.register(fs)
	fs.StringVar(&o.topic, "topic", "", "topic whose partitions are committed or consumed (default: samsa-bench-groups-<partitions>)")
	fs.IntVar(&o.partitions, "partitions", 0, "partitions of the topic (default: commit and offsets 10, rebalance 20)")
	fs.StringVar(&clients, "clients", "1,8", "commit: comma-separated committer counts to measure")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "commit: how long each case commits")
	fs.IntVar(&o.members, "members", 10, "rebalance: members of the group")
	fs.IntVar(&o.runs, "runs", 5, "rebalance: runs per protocol")
	fs.StringVar(&protocols, "protocols", "range,cooperative-sticky,consumer", "rebalance: comma-separated protocols: range (eager), cooperative-sticky, consumer (KIP-848)")
	fs.DurationVar(&o.heartbeat, "heartbeat", 3*time.Second, "rebalance: classic members' heartbeat.interval.ms (KIP-848 members use the broker's interval)")
	fs.DurationVar(&o.jitter, "leave-jitter", 0, "rebalance: after all are assigned, wait a uniformly random time below this `duration` before the leave (0: leave at once)")
	fs.IntVar(&o.groups, "groups", 10000, "offsets: number of groups")
	fs.IntVar(&o.concurrency, "concurrency", 32, "offsets: commits in flight")
	fs.StringVar(&o.prefix, "group-prefix", "", "group id prefix (default: bench-groups-<random>; offsets: bench-offsets)")
	fs.BoolVar(&o.check, "check", false, "offsets: commit nothing, wait for and check the offsets committed before")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as one JSON object")
	fs.BoolVar(&o.tsvOut, "tsv", false, "print tab-separated lines for scripts (columns as in the table)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want exactly one of commit, rebalance, offsets")
	}
	mode := pos[0]
	if err := o.validate(mode, clients, protocols); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	var res benchGroupsResult
	var err error
	switch mode {
	case "commit":
		res.Commit, err = o.runCommit()
	case "rebalance":
		res.Rebalance, err = o.runRebalance()
	case "offsets":
		res.Offsets, err = o.runOffsets()
	}
	if err != nil {
		return fail(stderr, err)
	}
	switch {
	case o.jsonOut:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	case o.tsvOut:
		res.printTSV(stdout)
	default:
		res.print(stdout)
	}
	if res.failed(o.check) {
		return exitFail
	}
	return exitOK
}

func (o *benchGroupsOpts) validate(mode, clients, protocols string) error {
	if mode != "commit" && mode != "rebalance" && mode != "offsets" {
		return fmt.Errorf("unknown mode %q: want commit, rebalance or offsets", mode)
	}
	if o.partitions == 0 {
		o.partitions = 10
		if mode == "rebalance" {
			o.partitions = 20
		}
	}
	if o.topic == "" {
		o.topic = fmt.Sprintf("samsa-bench-groups-%d", o.partitions)
	}
	if o.prefix == "" {
		o.prefix = fmt.Sprintf("bench-groups-%08x", rand.Uint32())
		if mode == "offsets" {
			// --check must find the groups of the run before.
			o.prefix = "bench-offsets"
		}
	}
	for s := range strings.SplitSeq(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("invalid --clients %q: want counts such as 1,8", clients)
		}
		o.clients = append(o.clients, n)
	}
	for s := range strings.SplitSeq(protocols, ",") {
		s = strings.TrimSpace(s)
		if s != "range" && s != "cooperative-sticky" && s != "consumer" {
			return fmt.Errorf("invalid protocol %q in --protocols: want range, cooperative-sticky or consumer", s)
		}
		o.protocols = append(o.protocols, s)
	}
	switch {
	case o.partitions < 1:
		return fmt.Errorf("invalid --partitions %d", o.partitions)
	case o.duration <= 0:
		return fmt.Errorf("invalid --duration %v", o.duration)
	case o.members < 2:
		return fmt.Errorf("invalid --members %d: want at least 2 (one leaves)", o.members)
	case o.runs < 1:
		return fmt.Errorf("invalid --runs %d", o.runs)
	case o.heartbeat <= 0:
		return fmt.Errorf("invalid --heartbeat %v", o.heartbeat)
	case o.jitter < 0:
		return fmt.Errorf("invalid --leave-jitter %v", o.jitter)
	case o.groups < 1:
		return fmt.Errorf("invalid --groups %d", o.groups)
	case o.concurrency < 1:
		return fmt.Errorf("invalid --concurrency %d", o.concurrency)
	}
	return nil
}

// ensureTopic creates the topic unless it exists and waits until every
// partition has a leader: the broker refuses commits for partitions it does
// not know (UNKNOWN_TOPIC_OR_PARTITION, as Kafka does).
func (o *benchGroupsOpts) ensureTopic() error {
	adm, err := o.cf.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := o.cf.ctx()
	defer cancel()
	r, err := adm.CreateTopic(ctx, int32(o.partitions), -1, nil, o.topic)
	if err == nil {
		err = r.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return topicError(o.topic, err, r.ErrMessage)
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		td, err := adm.ListTopics(ctx, o.topic)
		if err != nil {
			return fmt.Errorf("topic %q: %w", o.topic, err)
		}
		if n := len(td[o.topic].Partitions); n != o.partitions {
			return fmt.Errorf("topic %q exists with %d partitions, want %d", o.topic, n, o.partitions)
		}
	}
	for {
		td, err := adm.ListTopics(ctx, o.topic)
		if err == nil {
			t := td[o.topic]
			ready := t.Err == nil && len(t.Partitions) == o.partitions
			for _, p := range t.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				o.topicID = t.ID
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %q: partitions have no leader after %v", o.topic, o.cf.timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// commitOffset is the offset a committer's n-th commit carries: distinct
// per partition and growing, so every commit writes new values.
func commitOffset(n int64, p int32) int64 { return n*1000 + int64(p) }

// commitRecorder collects the latencies of one case's committers.
type commitRecorder struct {
	mu   sync.Mutex
	d    []time.Duration
	errs int64
	last error
}

func (r *commitRecorder) add(d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs++
		r.last = err
		return
	}
	r.d = append(r.d, d)
}

// offsetCommitErr is the first per-partition error of an OffsetCommit
// response, or an error when a partition is missing from it.
func offsetCommitErr(resp *kmsg.OffsetCommitResponse, partitions int) error {
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("commit %s[%d]: %w", t.Topic, p.Partition, err)
			}
			n++
		}
	}
	if n != partitions {
		return fmt.Errorf("commit answered %d partitions, want %d", n, partitions)
	}
	return nil
}

func (o *benchGroupsOpts) runCommit() ([]groupsCommitCase, error) {
	if err := o.ensureTopic(); err != nil {
		return nil, err
	}
	var out []groupsCommitCase
	for _, mode := range []string{"simple", "member"} {
		for _, n := range o.clients {
			c, err := o.commitCase(mode, n)
			if err != nil {
				return nil, fmt.Errorf("%s commits, %d clients: %w", mode, n, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// commitCase runs n committers, each on its own client and its own group,
// for --duration. Group members join (and get all partitions) before the
// clock starts.
func (o *benchGroupsOpts) commitCase(mode string, n int) (groupsCommitCase, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.cf.timeout+o.duration+time.Minute)
	defer cancel()
	committers := make([]func(int64) error, n)
	for i := range n {
		group := fmt.Sprintf("%s-%s-%d-%d", o.prefix, mode, n, i)
		var cl *kgo.Client
		var err error
		if mode == "simple" {
			cl, err = o.cf.connect()
			if err == nil {
				committers[i] = o.simpleCommitter(ctx, cl, group)
			}
		} else {
			cl, committers[i], err = o.memberCommitter(ctx, group)
		}
		if err != nil {
			return groupsCommitCase{}, err
		}
		defer cl.Close()
	}
	rec := &commitRecorder{}
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.duration)
	for _, commit := range committers {
		wg.Go(func() {
			for k := int64(1); time.Now().Before(deadline); k++ {
				t0 := time.Now()
				err := commit(k)
				rec.add(time.Since(t0), err)
				total.Add(1)
			}
		})
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	slices.Sort(rec.d)
	c := groupsCommitCase{
		Mode: mode, Clients: n, Partitions: o.partitions,
		Commits: int64(len(rec.d)), Errors: rec.errs, Seconds: secs,
		P50: quantile(rec.d, 0.50), P99: quantile(rec.d, 0.99),
	}
	c.PerSec = float64(c.Commits) / secs
	if c.Commits == 0 {
		return c, fmt.Errorf("every commit failed: %w", rec.last)
	}
	return c, nil
}

// simpleCommitter commits without a member: generation -1 and an empty
// member id, as kadm.CommitOffsets and Kafka's admin client do.
func (o *benchGroupsOpts) simpleCommitter(ctx context.Context, cl *kgo.Client, group string) func(int64) error {
	return func(k int64) error {
		return o.simpleCommit(ctx, cl, group, func(p int32) int64 { return commitOffset(k, p) })
	}
}

// simpleCommit commits offset(p) for every partition of the topic.
func (o *benchGroupsOpts) simpleCommit(ctx context.Context, cl *kgo.Client, group string, offset func(int32) int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = o.topic, o.topicID
	for p := range int32(o.partitions) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = offset(p)
		rp.LeaderEpoch = -1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return offsetCommitErr(resp, o.partitions)
}

// memberCommitter joins group as its only member (so it owns every
// partition) and returns a committer that commits through the group
// session, i.e. with the member id and generation.
func (o *benchGroupsOpts) memberCommitter(ctx context.Context, group string) (*kgo.Client, func(int64) error, error) {
	assigned := make(chan struct{})
	var once sync.Once
	cl, err := o.cf.connect(
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(o.topic),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if len(a[o.topic]) == o.partitions {
				once.Do(func() { close(assigned) })
			}
		}),
	)
	if err != nil {
		return nil, nil, err
	}
	select {
	case <-assigned:
	case <-time.After(o.cf.timeout + 30*time.Second):
		cl.Close()
		return nil, nil, fmt.Errorf("group %s: no assignment of %d partitions", group, o.partitions)
	}
	commit := func(k int64) error {
		offs := map[int32]kgo.EpochOffset{}
		for p := range int32(o.partitions) {
			offs[p] = kgo.EpochOffset{Epoch: -1, Offset: commitOffset(k, p)}
		}
		var cerr error
		cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{o.topic: offs},
			func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				switch {
				case err != nil:
					cerr = err
				case req.Generation < 0:
					cerr = fmt.Errorf("commit carried generation %d, not the member's", req.Generation)
				default:
					cerr = offsetCommitErr(resp, o.partitions)
				}
			})
		return cerr
	}
	return cl, commit, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r *benchGroupsResult) failed(check bool) bool {
	for _, c := range r.Commit {
		if c.Errors > 0 {
			return true
		}
	}
	if r.Offsets != nil && (r.Offsets.Errors > 0 || (check && r.Offsets.GroupsOK != r.Offsets.Groups)) {
		return true
	}
	return false
}

func (r *benchGroupsResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Commit) > 0 {
		fmt.Fprintln(tw, "mode\tclients\tpartitions\tcommits\terrors\tseconds\tcommits/s\tp50 ms\tp99 ms\t")
		for _, c := range r.Commit {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.2f\t\n", c.Mode, c.Clients, c.Partitions,
				c.Commits, c.Errors, c.Seconds, c.PerSec, c.P50, c.P99)
		}
	}
	if len(r.Rebalance) > 0 {
		fmt.Fprintln(tw, "protocol\tmembers\tpartitions\tsettle median ms\tmin ms\tmax ms\tjoin median ms\t")
		for _, c := range r.Rebalance {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", c.Protocol, c.Members, c.Partitions,
				c.MedianMs, c.MinMs, c.MaxMs, c.MedianJoin)
		}
	}
	if o := r.Offsets; o != nil {
		fmt.Fprintln(tw, "groups\tpartitions\tseconds\tgroups/s\terrors\tload ms\tgroups ok\t")
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.0f\t%d\t%.1f\t%d\t\n", o.Groups, o.Partitions, o.Seconds, o.PerSec,
			o.Errors, o.LoadMs, o.GroupsOK)
	}
	tw.Flush()
}

func (r *benchGroupsResult) printTSV(w io.Writer) {
	for _, c := range r.Commit {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%.3f\t%.1f\t%.3f\t%.3f\n", c.Mode, c.Clients, c.Partitions,
			c.Commits, c.Errors, c.Seconds, c.PerSec, c.P50, c.P99)
	}
	for _, c := range r.Rebalance {
		fmt.Fprintf(w, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%s\n", c.Protocol, c.Members, c.Partitions,
			c.MedianMs, c.MinMs, c.MaxMs, c.MedianJoin, joinFloats(c.RunsMs))
	}
	if o := r.Offsets; o != nil {
		fmt.Fprintf(w, "%d\t%d\t%.3f\t%.1f\t%d\t%.1f\t%d\t%d\n", o.Groups, o.Partitions, o.Seconds, o.PerSec,
			o.Errors, o.LoadMs, o.LoadedAtMs, o.GroupsOK)
	}
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strings.Join(s, ",")
}

// ownership follows which member holds which partitions from the members'
// rebalance callbacks, and notes the moment the wanted state is reached,
// from inside the callback that reached it, so polling adds no delay.
type ownership struct {
	mu         sync.Mutex
	partitions int
	held       map[string]map[int32]bool
	live       []string      // members that must share every partition
	done       chan struct{} // closed when live settled; nil when not armed
	at         time.Time
}

func newOwnership(partitions int) *ownership {
	return &ownership{partitions: partitions, held: map[string]map[int32]bool{}}
}

// arm starts waiting until the live members hold every partition exactly
// once, each within one partition of the others.
func (w *ownership) arm(live []string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = live
	w.done = make(chan struct{})
	w.checkLocked()
	return w.done
}

func (w *ownership) settledAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

func (w *ownership) assigned(member string, ps []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held[member] == nil {
		w.held[member] = map[int32]bool{}
	}
	for _, p := range ps {
		w.held[member][p] = true
	}
	w.checkLocked()
}

func (w *ownership) revoked(member string, ps []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range ps {
		delete(w.held[member], p)
	}
	w.checkLocked()
}

func (w *ownership) checkLocked() {
	if w.done == nil {
		return
	}
	select {
	case <-w.done:
		return
	default:
	}
	seen := map[int32]bool{}
	lo, hi := w.partitions, 0
	for _, m := range w.live {
		n := len(w.held[m])
		lo, hi = min(lo, n), max(hi, n)
		for p := range w.held[m] {
			if seen[p] {
				return // held twice: an eager member has not revoked yet
			}
			seen[p] = true
		}
	}
	if len(seen) == w.partitions && hi-lo <= 1 {
		w.at = time.Now()
		close(w.done)
	}
}

func (o *benchGroupsOpts) runRebalance() ([]groupsRebalanceCase, error) {
	if err := o.ensureTopic(); err != nil {
		return nil, err
	}
	var out []groupsRebalanceCase
	for _, proto := range o.protocols {
		c := groupsRebalanceCase{Protocol: proto, Members: o.members, Partitions: o.partitions}
		for run := range o.runs {
			join, settle, err := o.rebalanceRun(proto, fmt.Sprintf("%s-%s-%d", o.prefix, proto, run))
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", proto, run+1, err)
			}
			c.JoinMs = append(c.JoinMs, ms(join))
			c.RunsMs = append(c.RunsMs, ms(settle))
		}
		c.MedianMs, c.MedianJoin = median(c.RunsMs), median(c.JoinMs)
		c.MinMs, c.MaxMs = slices.Min(c.RunsMs), slices.Max(c.RunsMs)
		out = append(out, c)
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rebalanceRun starts the members on a fresh group, waits until they share
// all partitions, closes the first one and returns how long joining took and
// how long the rest took to settle after the leave began.
func (o *benchGroupsOpts) rebalanceRun(proto, group string) (join, settle time.Duration, err error) {
	own := newOwnership(o.partitions)
	names := make([]string, o.members)
	for i := range names {
		names[i] = fmt.Sprintf("m%02d", i)
	}
	groupOpt := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(o.topic), kgo.DisableAutoCommit()}
	switch proto {
	case "range":
		groupOpt = append(groupOpt, kgo.Balancers(kgo.RangeBalancer()), kgo.HeartbeatInterval(o.heartbeat))
	case "cooperative-sticky":
		groupOpt = append(groupOpt, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.HeartbeatInterval(o.heartbeat))
	case "consumer":
		// The broker chooses the assignor (uniform) and the heartbeat
		// interval (group.consumer.heartbeat.interval.ms).
		groupOpt = append(groupOpt, kgo.ServerSideBalancer())
	}
	clients := make([]*kgo.Client, o.members)
	defer func() {
		var wg sync.WaitGroup
		for _, cl := range clients {
			if cl != nil {
				wg.Go(cl.Close)
			}
		}
		wg.Wait()
	}()
	timeout := o.cf.timeout + 60*time.Second
	all := own.arm(names)
	start := time.Now()
	for i, name := range names {
		clients[i], err = o.cf.connect(append(slices.Clone(groupOpt),
			kgo.ClientID(name),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { own.assigned(name, a[o.topic]) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { own.revoked(name, r[o.topic]) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { own.revoked(name, l[o.topic]) }),
		)...)
		if err != nil {
			return 0, 0, err
		}
	}
	select {
	case <-all:
	case <-time.After(timeout):
		return 0, 0, fmt.Errorf("%d members never shared %d partitions", o.members, o.partitions)
	}
	join = own.settledAt().Sub(start)
	// Members heartbeat on timers restarted by the rebalance that just
	// ended, so a leave at once waits about one whole interval for them to
	// notice (franz-go's cooperative members also check 500 ms after each
	// rebalance); a real leave comes at a random moment.
	if o.jitter > 0 {
		time.Sleep(rand.N(o.jitter))
	}
	rest := own.arm(names[1:])
	leave := time.Now()
	clients[0].Close()
	clients[0] = nil
	select {
	case <-rest:
	case <-time.After(timeout):
		return 0, 0, fmt.Errorf("%d members never settled after one left", o.members-1)
	}
	return join, own.settledAt().Sub(leave), nil
}

// offsetsGroup is the id of the i-th group of `offsets`.
func (o *benchGroupsOpts) offsetsGroup(i int) string { return fmt.Sprintf("%s-%05d", o.prefix, i) }

// offsetsValue is what `offsets` commits for group i, partition p, so
// --check can tell each group's offsets from every other's.
func offsetsValue(i int, p int32) int64 { return int64(i)*100 + int64(p) + 1 }

func (o *benchGroupsOpts) runOffsets() (*groupsOffsetsResult, error) {
	if o.check {
		return o.checkOffsets()
	}
	if err := o.ensureTopic(); err != nil {
		return nil, err
	}
	cl, err := o.cf.connect()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.cf.timeout+10*time.Minute)
	defer cancel()
	res := &groupsOffsetsResult{Groups: o.groups, Partitions: o.partitions}
	var errs atomic.Int64
	var first atomic.Value
	start := time.Now()
	o.eachGroup(func(i int) {
		if err := o.commitGroup(ctx, cl, i); err != nil {
			errs.Add(1)
			first.CompareAndSwap(nil, err)
		}
	})
	res.Seconds = time.Since(start).Seconds()
	res.PerSec = float64(o.groups) / res.Seconds
	res.Errors = errs.Load()
	res.GroupsOK = o.groups - int(res.Errors)
	if res.Errors == int64(o.groups) {
		return nil, fmt.Errorf("every commit failed: %v", first.Load())
	}
	return res, nil
}

// eachGroup calls f for every group index, --concurrency at a time.
func (o *benchGroupsOpts) eachGroup(f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(o.concurrency, o.groups) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range o.groups {
		next <- i
	}
	close(next)
	wg.Wait()
}

func (o *benchGroupsOpts) commitGroup(ctx context.Context, cl *kgo.Client, i int) error {
	return o.simpleCommit(ctx, cl, o.offsetsGroup(i), func(p int32) int64 { return offsetsValue(i, p) })
}

// fetchGroup fetches group i's committed offsets and checks them.
func (o *benchGroupsOpts) fetchGroup(ctx context.Context, cl *kgo.Client, i int) error {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = o.offsetsGroup(i)
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = o.topic
	for p := range int32(o.partitions) {
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	n := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, err)
			}
			if want := offsetsValue(i, rp.Partition); rt.Topic != o.topic || rp.Offset != want {
				return fmt.Errorf("%s[%d] at offset %d, want %d", rt.Topic, rp.Partition, rp.Offset, want)
			}
			n++
		}
	}
	if n != o.partitions {
		return fmt.Errorf("fetched %d partitions, want %d", n, o.partitions)
	}
	return nil
}

// checkOffsets waits until the last group's offsets are served (after a
// restart the coordinator answers COORDINATOR_LOAD_IN_PROGRESS until it has
// replayed __consumer_offsets), then checks every group.
func (o *benchGroupsOpts) checkOffsets() (*groupsOffsetsResult, error) {
	start := time.Now()
	cl, err := o.cf.connect()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.cf.timeout+10*time.Minute)
	defer cancel()
	res := &groupsOffsetsResult{Groups: o.groups, Partitions: o.partitions}
	wait, cancelWait := context.WithTimeout(ctx, o.cf.timeout+5*time.Minute)
	defer cancelWait()
	for {
		err := o.fetchGroup(wait, cl, o.groups-1)
		if err == nil {
			break
		}
		select {
		case <-wait.Done():
			return nil, fmt.Errorf("group %s: offsets not served: %w", o.offsetsGroup(o.groups-1), err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	now := time.Now()
	res.LoadMs, res.LoadedAtMs = ms(now.Sub(start)), now.UnixMilli()
	var ok, errs atomic.Int64
	o.eachGroup(func(i int) {
		if o.fetchGroup(ctx, cl, i) == nil {
			ok.Add(1)
		} else {
			errs.Add(1)
		}
	})
	res.Seconds = time.Since(now).Seconds()
	res.GroupsOK, res.Errors = int(ok.Load()), errs.Load()
	return res, nil
}
