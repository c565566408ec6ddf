package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/replica"
)

// channel carries a broker's requests to the active controller (Kafka's
// NodeToControllerChannelManager): when this node is the active controller
// they are calls, otherwise Kafka requests on the leader's controller
// listener (which leader: see leaderSource). It follows leadership
// changes: a NOT_CONTROLLER answer or a broken connection is retried on
// whoever leads next, until ctx ends.
// Decisions happen once: the controller answers NOT_CONTROLLER before it
// decides anything.
type channel struct {
	self    int32
	local   *controller.Controller // nil on a broker-only node
	leaders leaderSource
	voters  map[int32]string // node id → controller listener host:port
	logger  *slog.Logger

	mu    sync.Mutex
	conns map[int32]*kclient.Conn
}

// leaderSource tells the channel which controller to ask: raft's leader
// on a voter, the metadata fetcher's on a broker-only node.
type leaderSource interface {
	// Leader is the node to try, 0 if none is known.
	Leader() int32
	// NotLeader reports that id refused or could not be reached.
	NotLeader(id int32)
}

// raftLeaders is the leaderSource of a voter: raft knows the leader.
type raftLeaders struct{ n *raft.Node }

func (r raftLeaders) Leader() int32   { return int32(r.n.Leader()) }
func (r raftLeaders) NotLeader(int32) {}

func newChannel(self int32, local *controller.Controller, leaders leaderSource, voters map[int32]string, logger *slog.Logger) *channel {
	return &channel{self: self, local: local, leaders: leaders, voters: voters, logger: logger, conns: map[int32]*kclient.Conn{}}
}

// retryBackoff is the pause before trying again while there is no leader
// or the leader just changed.
const retryBackoff = 50 * time.Millisecond

// defaultForwardTimeout bounds a forwarded request that carries no timeout
// of its own (AlterConfigs, DescribeQuorum): Kafka's request.timeout.ms.
const defaultForwardTimeout = 30 * time.Second

// send delivers req to the active controller and returns its answer. local
// answers it when this node leads. A request of the node's own is sent at
// the highest version both sides know; a client's (asIs) in its own
// version, and with its own deadline already in ctx.
func (ch *channel) send(ctx context.Context, req kmsg.Request, asIs bool, local func(ctx context.Context) kmsg.Response) (kmsg.Response, error) {
	var lastErr error
	for {
		if err := ctx.Err(); err != nil {
			// Never (re)send once the deadline has passed.
			return nil, fmt.Errorf("%w: %v", kerr.RequestTimedOut, cmp.Or(lastErr, err))
		}
		leader := ch.leaders.Leader()
		var resp kmsg.Response
		var err error
		switch {
		case leader == 0:
			err = errors.New("no active controller")
		case leader == ch.self && ch.local != nil:
			resp = local(ctx)
		default:
			resp, err = ch.remote(ctx, leader, req, asIs)
		}
		if errors.Is(err, kerr.UnsupportedVersion) {
			return nil, err // no other controller will serve it either
		}
		if err == nil && !notController(resp) {
			return resp, nil
		}
		if leader != 0 {
			ch.leaders.NotLeader(leader)
		}
		if err != nil {
			lastErr = err
		} else {
			lastErr = kerr.NotController
		}
		select {
		case <-ctx.Done():
			if resp != nil {
				return resp, nil // answered NOT_CONTROLLER; let the caller see it
			}
			return nil, fmt.Errorf("%w: %v", kerr.RequestTimedOut, lastErr)
		case <-time.After(retryBackoff):
		}
	}
}

// remote sends req to node id's controller listener, at its own version
// when asIs.
func (ch *channel) remote(ctx context.Context, id int32, req kmsg.Request, asIs bool) (kmsg.Response, error) {
	conn, err := ch.conn(ctx, id)
	if err != nil {
		return nil, err
	}
	var resp kmsg.Response
	if asIs {
		resp, err = conn.RequestAsIs(ctx, req)
	} else {
		resp, err = conn.Request(ctx, req)
	}
	if errors.Is(err, kerr.UnsupportedVersion) {
		return nil, err // refused before sending; the connection is fine
	}
	if err != nil {
		ch.mu.Lock()
		if ch.conns[id] == conn {
			delete(ch.conns, id)
		}
		ch.mu.Unlock()
		conn.Close()
	}
	return resp, err
}

func (ch *channel) conn(ctx context.Context, id int32) (*kclient.Conn, error) {
	ch.mu.Lock()
	c := ch.conns[id]
	ch.mu.Unlock()
	if c != nil {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
	}
	addr, ok := ch.voters[id]
	if !ok {
		return nil, fmt.Errorf("leader %d is not in controller.quorum.voters", id)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := kclient.Dial(dctx, addr, fmt.Sprintf("samsa-broker-%d", ch.self))
	if err != nil {
		return nil, fmt.Errorf("dial controller %d at %s: %w", id, addr, err)
	}
	ch.mu.Lock()
	if old := ch.conns[id]; old != nil {
		old.Close()
	}
	ch.conns[id] = c
	ch.mu.Unlock()
	return c, nil
}

// Close closes the connections.
func (ch *channel) Close() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for id, c := range ch.conns {
		c.Close()
		delete(ch.conns, id)
	}
}

// notController reports whether resp is a NOT_CONTROLLER refusal: the
// controller refuses a whole request before deciding, so the first item's
// code tells.
func notController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.DeleteTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.CreatePartitionsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == nc
	case *kmsg.AlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == nc
	case *kmsg.IncrementalAlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == nc
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		if r.ErrorCode == nc {
			return true
		}
		return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 && r.Topics[0].Partitions[0].ErrorCode == nc
	case *kmsg.ElectLeadersResponse:
		if r.ErrorCode == nc {
			return true
		}
		return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 && r.Topics[0].Partitions[0].ErrorCode == nc
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		// A voter that is not the raft leader answers
		// NOT_LEADER_OR_FOLLOWER, as Kafka's raft client does.
		if len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
			return false
		}
		c := r.Topics[0].Partitions[0].ErrorCode
		return c == nc || c == kerr.NotLeaderForPartition.Code
	}
	return false
}

// forward sends a client's req to the active controller — local answers it
// when this node leads — in the client's version, and returns the typed
// response; failed builds the response a client gets when no controller
// answered in time. The request's own timeout (or defaultForwardTimeout)
// bounds every try together: nothing is sent after it.
func forward[Req kmsg.Request, Resp kmsg.Response](ctx context.Context, ch *channel, req Req,
	local func(context.Context, Req) Resp, failed func(error) Resp) Resp {
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout(req))
	defer cancel()
	resp, err := ch.send(ctx, req, true, func(ctx context.Context) kmsg.Response { return local(ctx, req) })
	if err != nil {
		return failed(err)
	}
	return resp.(Resp)
}

// forwardTimeout is how long a forwarded request may take: its own
// timeout when it has one.
func forwardTimeout(req kmsg.Request) time.Duration {
	if tr, ok := req.(kmsg.TimeoutRequest); ok && tr.Timeout() > 0 {
		return time.Duration(tr.Timeout()) * time.Millisecond
	}
	return defaultForwardTimeout
}

// The broker.Controller methods: admin requests forwarded to the active
// controller (Kafka's ForwardingManager).

func (ch *channel) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	return forward(ctx, ch, req, ch.local.CreateTopics, func(err error) *kmsg.CreateTopicsResponse {
		r := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, errorCode(err), errorMessage(err)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			r.Topics = append(r.Topics, rt)
		}
		return r
	})
}

func (ch *channel) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	return forward(ctx, ch, req, ch.local.DeleteTopics, func(err error) *kmsg.DeleteTopicsResponse {
		r := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		add := func(name *string, id [16]byte) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, errorCode(err), errorMessage(err)
			r.Topics = append(r.Topics, rt)
		}
		for _, n := range req.TopicNames {
			add(&n, [16]byte{})
		}
		for _, t := range req.Topics {
			add(t.Topic, t.TopicID)
		}
		return r
	})
}

func (ch *channel) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	return forward(ctx, ch, req, ch.local.CreatePartitions, func(err error) *kmsg.CreatePartitionsResponse {
		r := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, errorCode(err), errorMessage(err)
			r.Topics = append(r.Topics, rt)
		}
		return r
	})
}

func (ch *channel) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	return forward(ctx, ch, req, ch.local.AlterConfigs, func(err error) *kmsg.AlterConfigsResponse {
		r := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, res := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
			r.Resources = append(r.Resources, rr)
		}
		return r
	})
}

func (ch *channel) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	return forward(ctx, ch, req, ch.local.IncrementalAlterConfigs, func(err error) *kmsg.IncrementalAlterConfigsResponse {
		r := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
			r.Resources = append(r.Resources, rr)
		}
		return r
	})
}

func (ch *channel) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (int64, int32, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = brokerID, brokerEpoch
	resp, err := ch.send(ctx, req, false, func(ctx context.Context) kmsg.Response {
		r := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		first, count, err := ch.local.AllocateProducerIDs(ctx, brokerID, brokerEpoch)
		r.ErrorCode, r.ProducerIDStart, r.ProducerIDLen = errorCode(err), first, count
		return r
	})
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, 0, err
	}
	return r.ProducerIDStart, r.ProducerIDLen, nil
}

// ElectLeaders forwards a leader election (kafka-leader-election).
func (ch *channel) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	return forward(ctx, ch, req, ch.local.ElectLeaders, func(err error) *kmsg.ElectLeadersResponse {
		r := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		r.ErrorCode = errorCode(err)
		return r
	})
}

// AlterPartitionReassignments forwards reassignments
// (kafka-reassign-partitions --execute / --cancel).
func (ch *channel) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	return forward(ctx, ch, req, ch.local.AlterPartitionReassignments, func(err error) *kmsg.AlterPartitionAssignmentsResponse {
		r := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
		return r
	})
}

// ListPartitionReassignments forwards kafka-reassign-partitions --verify
// and --list.
func (ch *channel) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	return forward(ctx, ch, req, ch.local.ListPartitionReassignments, func(err error) *kmsg.ListPartitionReassignmentsResponse {
		r := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		r.ErrorCode, r.ErrorMessage = errorCode(err), errorMessage(err)
		return r
	})
}

// DescribeQuorum forwards kafka-metadata-quorum describe to the quorum
// leader, the only voter that knows the others' progress.
func (ch *channel) DescribeQuorum(ctx context.Context, req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	return forward(ctx, ch, req, ch.local.DescribeQuorum, func(err error) *kmsg.DescribeQuorumResponse {
		r := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = controller.MetadataTopic
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.ErrorCode, p.LeaderID = errorCode(err), -1
		if req.Version >= 2 {
			p.ErrorMessage = errorMessage(err)
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	})
}

func (ch *channel) brokerRegistration(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	resp, err := ch.send(ctx, req, false, func(ctx context.Context) kmsg.Response { return ch.local.BrokerRegistration(ctx, req) })
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerRegistrationResponse), nil
}

func (ch *channel) brokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp, err := ch.send(ctx, req, false, func(ctx context.Context) kmsg.Response { return ch.local.BrokerHeartbeat(ctx, req) })
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerHeartbeatResponse), nil
}

// alterPartition is the replica manager's hook: a leader asking the
// controller to change an ISR.
func (ch *channel) alterPartition(ctx context.Context, brokerEpoch int64, r replica.AlterPartitionRequest) (replica.PartitionState, error) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(3) // topics by id; a remote controller negotiates down
	req.BrokerID, req.BrokerEpoch = ch.self, brokerEpoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.TopicID = r.TopicID
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch = r.Partition, r.LeaderEpoch, r.PartitionEpoch
	p.NewISR = r.NewISR
	for _, id := range r.NewISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = id, -1
		p.NewEpochISR = append(p.NewEpochISR, e)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := ch.send(ctx, req, false, func(ctx context.Context) kmsg.Response { return ch.local.AlterPartition(ctx, req) })
	if err != nil {
		return replica.PartitionState{}, err
	}
	ar := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
		return replica.PartitionState{}, err
	}
	if len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != 1 {
		return replica.PartitionState{}, fmt.Errorf("%w: AlterPartition answered %d topics", kerr.UnknownServerError, len(ar.Topics))
	}
	rp := ar.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return replica.PartitionState{}, err
	}
	return replica.PartitionState{Leader: rp.LeaderID, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, ISR: rp.ISR}, nil
}

// errorCode is err's Kafka code (UNKNOWN_SERVER_ERROR for others).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
