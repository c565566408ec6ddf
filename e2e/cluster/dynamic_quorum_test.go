package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/devcluster"
	"github.com/samsa-io/samsa/internal/metadata"
)

// dqNode is one samsa process of a dynamic quorum, run by the test
// itself (devcluster runs static quorums).
type dqNode struct {
	id   int
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startDQNode writes node id's properties and starts it with args,
// returning once its log shows marker. It may run on any goroutine: it
// reports failures as errors.
func startDQNode(t *testing.T, dir string, id int, props []string, marker string, args ...string) (*dqNode, error) {
	cfg := filepath.Join(dir, fmt.Sprintf("node-%d.properties", id))
	props = append([]string{fmt.Sprintf("node.id=%d", id), "log.dirs=" + filepath.Join(dir, fmt.Sprintf("node-%d", id))}, props...)
	if err := os.WriteFile(cfg, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	n := &dqNode{id: id, log: filepath.Join(dir, fmt.Sprintf("node-%d.log", id)), done: make(chan struct{})}
	logf, err := os.Create(n.log)
	if err != nil {
		return nil, err
	}
	n.cmd = exec.Command(binary, append([]string{"server", "--config", cfg}, args...)...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { n.cmd.Wait(); logf.Close(); close(n.done) }()
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		<-n.done
		if t.Failed() {
			b, _ := os.ReadFile(n.log)
			lines := strings.Split(string(b), "\n")
			t.Logf("node %d log (end):\n%s", id, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		if b, _ := os.ReadFile(n.log); bytes.Contains(b, []byte(marker)) {
			return n, nil
		}
		select {
		case <-n.done:
			return nil, fmt.Errorf("node %d exited during start-up; see %s", id, n.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("node %d did not log %s", id, marker)
		}
	}
}

func loopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := devcluster.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// TestDynamicQuorumGrowsAndShrinks is KIP-853 end to end: three combined
// nodes formatted with --initial-controllers, and a fourth, controller-only
// node formatted with --no-initial-controllers that joins through
// controller.quorum.bootstrap.servers. While a producer writes with
// acks=all, AddRaftVoter grows the quorum to four voters and
// RemoveRaftVoter shrinks it back to three (the raw requests
// kafka-metadata-quorum add-controller and remove-controller send, through
// a broker that forwards them); DescribeQuorum shows each voter set with
// directory ids, and every acknowledged record is read back.
func TestDynamicQuorumGrowsAndShrinks(t *testing.T) {
	dir := t.TempDir()
	ports := loopbackPorts(t, 7) // 3 client listeners, 4 controller listeners
	clusterID, _ := metadata.RandomUuid(rand.Reader)
	dirIDs := make([]metadata.Uuid, 5)
	var initial, bootstrap []string
	for id := 1; id <= 4; id++ {
		dirIDs[id], _ = metadata.RandomUuid(rand.Reader)
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", ports[2+id]))
		if id <= 3 {
			initial = append(initial, fmt.Sprintf("%d@127.0.0.1:%d:%s", id, ports[2+id], dirIDs[id]))
		}
	}
	common := []string{
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.bootstrap.servers=" + strings.Join(bootstrap[:3], ","),
		"offsets.topic.replication.factor=3",
		"broker.heartbeat.interval.ms=300",
	}
	var clients []string
	starts := make(chan error, 3)
	for id := 1; id <= 3; id++ {
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", ports[id-1]))
		props := append(slices.Clone(common), "process.roles=broker,controller",
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[id-1], ports[2+id]))
		go func() {
			_, err := startDQNode(t, dir, id, props, `msg="serving Kafka clients"`, "--cluster-id", clusterID.String(), "--initial-controllers", strings.Join(initial, ","))
			starts <- err
		}()
	}
	for range 3 {
		if err := <-starts; err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(clients...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "dynamic-quorum"
	if r, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": new("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v / %v", err, r.Err)
	}
	checkVoters(t, ctx, cl, []int32{1, 2, 3}, dirIDs)
	checkKRaftVersion(t, ctx, cl)

	props4 := append(slices.Clone(common), "process.roles=controller", fmt.Sprintf("listeners=CONTROLLER://127.0.0.1:%d", ports[6]))
	node4, err := startDQNode(t, dir, 4, props4, "controller ready to join the quorum", "--cluster-id", clusterID.String(), "--no-initial-controllers")
	if err != nil {
		t.Fatal(err)
	}
	dir4 := readDirectoryID(t, filepath.Join(dir, "node-4"))
	dirIDs[4] = dir4

	// Produce with acks=all for the whole change.
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
	)
	stop := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				produced <- nil
				return
			default:
			}
			v := strconv.Itoa(i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
				produced <- fmt.Errorf("record %s: %w", v, err)
				return
			}
			mu.Lock()
			acked[v] = true
			mu.Unlock()
		}
	}()

	add := kmsg.NewPtrAddRaftVoterRequest()
	add.ClusterID, add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = new(clusterID.String()), 4, dir4, 30000
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", uint16(ports[6])
	add.Listeners = append(add.Listeners, l)
	if r, err := add.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter: %v / %v", err, errMsg(r.ErrorCode, r.ErrorMessage))
	}
	checkVoters(t, ctx, cl, []int32{1, 2, 3, 4}, dirIDs)
	if r, err := add.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.DuplicateVoter.Code {
		t.Fatalf("AddRaftVoter of a voter: %v / code %d, want DUPLICATE_VOTER", err, r.ErrorCode)
	}
	// The new voter restarts (kill -9, no format flags): its log keeps it
	// a voter, and it catches up.
	node4.cmd.Process.Kill()
	<-node4.done
	if _, err := startDQNode(t, dir, 4, props4, `msg="controller ready"`, "--cluster-id", clusterID.String()); err != nil {
		t.Fatal(err)
	}
	checkVoters(t, ctx, cl, []int32{1, 2, 3, 4}, dirIDs)

	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.ClusterID, rm.VoterID, rm.VoterDirectoryID = new(clusterID.String()), 4, dir4
	if r, err := rm.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter: %v / %v", err, errMsg(r.ErrorCode, r.ErrorMessage))
	}
	checkVoters(t, ctx, cl, []int32{1, 2, 3}, dirIDs)
	if r, err := rm.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.VoterNotFound.Code {
		t.Fatalf("RemoveRaftVoter of a removed voter: %v / code %d, want VOTER_NOT_FOUND", err, r.ErrorCode)
	}
	// The three voters still change metadata.
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, topic+"-after"); err != nil || r.Err != nil {
		t.Fatalf("create topic after the removal: %v / %v", err, r.Err)
	}

	close(stop)
	if err := <-produced; err != nil {
		t.Fatalf("produce during the voter changes: %v", err)
	}
	mu.Lock()
	want := len(acked)
	mu.Unlock()
	if want == 0 {
		t.Fatal("no record was acknowledged")
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(clients...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < want && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged record %s lost (%d of %d read)", v, len(seen), want)
		}
	}
	t.Logf("%d acknowledged records all read back", want)
}

func errMsg(code int16, msg *string) string {
	s := fmt.Sprint(kerr.ErrorForCode(code))
	if msg != nil {
		s += ": " + *msg
	}
	return s
}

// checkVoters asks DescribeQuorum v2 (through a broker) for the voters
// and requires want, each with its directory id and a listener in Nodes.
func checkVoters(t *testing.T, ctx context.Context, cl *kgo.Client, want []int32, dirs []metadata.Uuid) {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	r, err := req.RequestWith(ctx, cl)
	if err != nil || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("DescribeQuorum: %v / %+v", err, r)
	}
	p := r.Topics[0].Partitions[0]
	var got []int32
	for _, v := range p.CurrentVoters {
		got = append(got, v.ReplicaID)
		if v.ReplicaDirectoryID != dirs[v.ReplicaID] {
			t.Fatalf("voter %d has directory id %s, want %s", v.ReplicaID, metadata.Uuid(v.ReplicaDirectoryID), dirs[v.ReplicaID])
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("voters %v, want %v", got, want)
	}
	var nodes []int32
	for _, n := range r.Nodes {
		if len(n.Listeners) > 0 {
			nodes = append(nodes, n.NodeID)
		}
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, want) {
		t.Fatalf("DescribeQuorum nodes with listeners %v, want %v", nodes, want)
	}
}

// readDirectoryID is the directory.id in dir's meta.properties.
func readDirectoryID(t *testing.T, dir string) metadata.Uuid {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "directory.id="); ok {
			id, err := metadata.ParseUuid(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	t.Fatalf("no directory.id in %s/meta.properties", dir)
	return metadata.Uuid{}
}

// checkKRaftVersion requires ApiVersions to report kraft.version finalized
// at 1 (a dynamic quorum) and supported up to 1.
func checkKRaftVersion(t *testing.T, ctx context.Context, cl *kgo.Client) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 4, "samsa-test", "1"
	r, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var supported, finalized string
	for _, f := range r.SupportedFeatures {
		if f.Name == "kraft.version" {
			supported = fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion)
		}
	}
	for _, f := range r.FinalizedFeatures {
		if f.Name == "kraft.version" {
			finalized = fmt.Sprintf("%d-%d", f.MinVersionLevel, f.MaxVersionLevel)
		}
	}
	if supported != "0-1" || finalized != "1-1" {
		t.Fatalf("kraft.version supported %q finalized %q, want 0-1 and 1-1", supported, finalized)
	}
}

// TestDynamicQuorumBrokerFollowsVoters: a broker-only node follows the
// voter set as it changes (KIP-853), without a restart. It starts knowing
// one controller (--standalone); a second controller joins
// (--no-initial-controllers, AddRaftVoter), the first is removed
// (RemoveRaftVoter) and killed. The broker learns the new voter from the
// VotersRecord in the metadata log, and keeps fetching the log (it shows
// as an observer of the new leader), forwarding admin requests
// (CreateTopics), heartbeating (it stays unfenced past
// broker.session.timeout.ms) and taking writes.
func TestDynamicQuorumBrokerFollowsVoters(t *testing.T) {
	dir := t.TempDir()
	ports := loopbackPorts(t, 3) // broker, controller 1, controller 2
	clusterID, _ := metadata.RandomUuid(rand.Reader)
	ctrl := func(id int) string { return fmt.Sprintf("127.0.0.1:%d", ports[id]) }
	const session = 3 * time.Second
	common := []string{
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.bootstrap.servers=" + ctrl(1),
		"offsets.topic.replication.factor=1",
		"broker.heartbeat.interval.ms=300",
		fmt.Sprintf("broker.session.timeout.ms=%d", session.Milliseconds()),
	}
	controller := func(id int) []string {
		return append(slices.Clone(common), "process.roles=controller", "listeners=CONTROLLER://"+ctrl(id))
	}
	node1, err := startDQNode(t, dir, 1, controller(1), `msg="controller ready"`, "--cluster-id", clusterID.String(), "--standalone")
	if err != nil {
		t.Fatal(err)
	}
	broker := append(slices.Clone(common), "process.roles=broker", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", ports[0]))
	if _, err := startDQNode(t, dir, 3, broker, `msg="serving Kafka clients"`, "--cluster-id", clusterID.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := startDQNode(t, dir, 2, controller(2), "controller ready to join the quorum", "--cluster-id", clusterID.String(), "--no-initial-controllers"); err != nil {
		t.Fatal(err)
	}
	dirIDs := []metadata.Uuid{{}, readDirectoryID(t, filepath.Join(dir, "node-1")), readDirectoryID(t, filepath.Join(dir, "node-2"))}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", ports[0])), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createAndProduce(t, ctx, cl, "before")

	add := kmsg.NewPtrAddRaftVoterRequest()
	add.ClusterID, add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = new(clusterID.String()), 2, dirIDs[2], 30000
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", uint16(ports[2])
	add.Listeners = append(add.Listeners, l)
	if r, err := add.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter: %v / %v", err, errMsg(r.ErrorCode, r.ErrorMessage))
	}
	checkVoters(t, ctx, cl, []int32{1, 2}, dirIDs)
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.ClusterID, rm.VoterID, rm.VoterDirectoryID = new(clusterID.String()), 1, dirIDs[1]
	if r, err := rm.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter: %v / %v", err, errMsg(r.ErrorCode, r.ErrorMessage))
	}
	checkVoters(t, ctx, cl, []int32{2}, dirIDs)
	node1.cmd.Process.Kill()
	<-node1.done

	// The broker fetches the metadata log from node 2, the only voter
	// and so the leader: node 2 lists it as an observer.
	for {
		if slices.Contains(quorumObservers(t, ctx, cl), 3) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("broker 3 never fetched the metadata log from the new leader")
		}
		time.Sleep(100 * time.Millisecond)
	}
	createAndProduce(t, ctx, cl, "after-removal")
	// Past a session timeout without node 1, the broker is still
	// registered and unfenced (its heartbeats reach node 2): a fenced
	// broker gets no replica of a new topic. The pause is the window for
	// a fencing to happen, not a wait for success.
	time.Sleep(2 * session)
	createAndProduce(t, ctx, cl, "after-session")
}

// quorumObservers are the observers DescribeQuorum (through a broker)
// lists, nil while it fails.
func quorumObservers(t *testing.T, ctx context.Context, cl *kgo.Client) []int32 {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	r, err := req.RequestWith(ctx, cl)
	if err != nil || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return nil
	}
	var ids []int32
	for _, o := range r.Topics[0].Partitions[0].Observers {
		ids = append(ids, o.ReplicaID)
	}
	return ids
}

// TestDynamicQuorumCombinedNodeJoins: a combined node formatted with
// --no-initial-controllers joins a running quorum, as Kafka 4.4 allows.
// Before it is added its broker side serves clients from the log it
// observes; AddRaftVoter makes it a voter, and once the original
// controller is removed and stopped it is the quorum alone and still
// creates topics and takes writes.
func TestDynamicQuorumCombinedNodeJoins(t *testing.T) {
	dir := t.TempDir()
	ports := loopbackPorts(t, 3) // node 2's client listener, controllers 1 and 2
	clusterID, _ := metadata.RandomUuid(rand.Reader)
	ctrl := func(id int) string { return fmt.Sprintf("127.0.0.1:%d", ports[id]) }
	common := []string{
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.bootstrap.servers=" + ctrl(1),
		"offsets.topic.replication.factor=1",
		"broker.heartbeat.interval.ms=300",
	}
	node1, err := startDQNode(t, dir, 1, append(slices.Clone(common), "process.roles=controller", "listeners=CONTROLLER://"+ctrl(1)),
		`msg="controller ready"`, "--cluster-id", clusterID.String(), "--standalone")
	if err != nil {
		t.Fatal(err)
	}
	props2 := append(slices.Clone(common), "process.roles=broker,controller",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://%s", ports[0], ctrl(2)))
	node2, err := startDQNode(t, dir, 2, props2, `msg="serving Kafka clients"`, "--cluster-id", clusterID.String(), "--no-initial-controllers")
	if err != nil {
		t.Fatal(err)
	}
	dirIDs := []metadata.Uuid{{}, readDirectoryID(t, filepath.Join(dir, "node-1")), readDirectoryID(t, filepath.Join(dir, "node-2"))}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", ports[0])), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createAndProduce(t, ctx, cl, "before-join")
	checkVoters(t, ctx, cl, []int32{1}, dirIDs)

	add := kmsg.NewPtrAddRaftVoterRequest()
	add.ClusterID, add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = new(clusterID.String()), 2, dirIDs[2], 30000
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", uint16(ports[2])
	add.Listeners = append(add.Listeners, l)
	if r, err := add.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter: %v / %v", err, errMsg(r.ErrorCode, r.ErrorMessage))
	}
	checkVoters(t, ctx, cl, []int32{1, 2}, dirIDs)
	// Its raft log, not the observer, feeds its broker side from now on.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(node2.log); bytes.Contains(b, []byte("added to the metadata quorum")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node 2 is a voter but did not hand its metadata over from the observer to raft")
		}
	}
	createAndProduce(t, ctx, cl, "after-join")
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.ClusterID, rm.VoterID, rm.VoterDirectoryID = new(clusterID.String()), 1, dirIDs[1]
	if r, err := rm.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter: %v / %v", err, errMsg(r.ErrorCode, r.ErrorMessage))
	}
	checkVoters(t, ctx, cl, []int32{2}, dirIDs)
	node1.cmd.Process.Kill()
	<-node1.done
	createAndProduce(t, ctx, cl, "alone")
}

// createAndProduce creates topic (one partition, one replica) through cl
// and writes one record to it.
func createAndProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) {
	t.Helper()
	// TOPIC_ALREADY_EXISTS is the answer to franz-go's retry of a
	// request that timed out after the controller had created the topic.
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v / %v", topic, err, r.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}
