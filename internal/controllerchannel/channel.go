package controllerchannel

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

// Channel carries a broker's requests to the active controller (Kafka's
// NodeToControllerChannelManager): when this node is the active controller
// they are calls, otherwise Kafka requests on the leader's controller
// listener (which leader: see LeaderSource). It follows leadership
// changes: a NOT_CONTROLLER answer or a broken connection is retried on
// whoever leads next, until ctx ends.
// Decisions happen once: the controller answers NOT_CONTROLLER before it
// decides anything.
type Channel struct {
	self    int32
	local   *controller.Controller // nil on a broker-only node
	leaders LeaderSource
	voters  map[int32]string // node id → controller listener host:port
	dialer  kclient.Dialer
	logger  *slog.Logger

	mu    sync.Mutex
	conns map[int32]*kclient.Conn
	addrs map[int32]string // the address each of conns was dialled at
	// closed stops ForwardInBackground from starting more once Close
	// has begun; bgCtx ends what is under way, bg joins it.
	closed   bool
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// LeaderSource tells the channel which controller to ask: raft's leader
// on a voter (RaftLeaders), the metadata observer's on a broker-only node
// (raft.Observer).
type LeaderSource interface {
	// Leader is the node to try, 0 if none is known.
	Leader() int32
	// NotLeader reports that id refused or could not be reached.
	NotLeader(id int32)
}

// AddrSource is a LeaderSource that also knows where the controllers are
// as the voter set changes (KIP-853); the channel asks it before
// Config.Voters.
type AddrSource interface {
	// Addr is controller id's listener (host:port), false if unknown.
	Addr(id int32) (string, bool)
}

// RaftLeaders is the LeaderSource of a voter: raft knows the leader, and
// Peers, when set, where the other voters are now (the raft transport's
// peers, which follow the voter set).
type RaftLeaders struct {
	Node  *raft.Node
	Peers func() map[uint64]string
}

func (r RaftLeaders) Leader() int32   { return int32(r.Node.Leader()) }
func (r RaftLeaders) NotLeader(int32) {}

// Addr is voter id's listener as the transport knows it.
func (r RaftLeaders) Addr(id int32) (string, bool) {
	if r.Peers == nil {
		return "", false
	}
	a, ok := r.Peers()[uint64(id)]
	return a, ok
}

// Config configures a Channel.
type Config struct {
	// NodeID is this node's node.id.
	NodeID int32
	// Local is this node's controller, nil on a broker-only node: when
	// it is the active one, requests are calls.
	Local *controller.Controller
	// Leaders names the controller to ask.
	Leaders LeaderSource
	// Voters maps the ids of the controllers known at start to their
	// listeners (host:port); a Leaders that is an AddrSource knows the
	// voters added since.
	Voters map[int32]string
	// Dialer dials the controller listener; its zero value is plain TCP
	// (TLS when the controller listener is SSL).
	Dialer kclient.Dialer
	Logger *slog.Logger
}

// New returns a channel; it dials controllers as requests need them.
func New(cfg Config) *Channel {
	ch := &Channel{self: cfg.NodeID, local: cfg.Local, leaders: cfg.Leaders, voters: cfg.Voters, dialer: cfg.Dialer, logger: cfg.Logger,
		conns: map[int32]*kclient.Conn{}, addrs: map[int32]string{}}
	ch.bgCtx, ch.bgCancel = context.WithCancel(context.Background())
	return ch
}

// retryBackoff is the pause before trying again while there is no leader
// or the leader just changed.
const retryBackoff = 50 * time.Millisecond

// defaultForwardTimeout bounds a forwarded request that carries no timeout
// of its own (AlterConfigs, DescribeQuorum): Kafka's request.timeout.ms.
const defaultForwardTimeout = 30 * time.Second

// send delivers req to the active controller and returns its answer; the
// controller's API table says how the local controller decides it when
// this node leads, and how its refusal looks. A request of the node's own
// is sent at the highest version both sides know; a client's (asIs) in its
// own version, and with its own deadline already in ctx.
func (ch *Channel) send(ctx context.Context, req kmsg.Request, asIs bool) (kmsg.Response, error) {
	api, ok := controller.LookupAPI(kmsg.Key(req.Key()))
	if !ok {
		return nil, fmt.Errorf("%w: the controller does not serve %s", kerr.UnsupportedVersion, kmsg.NameForKey(req.Key()))
	}
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
			resp = api.Serve(ctx, ch.local, req)
		default:
			resp, err = ch.remote(ctx, leader, req, asIs)
		}
		if errors.Is(err, kerr.UnsupportedVersion) {
			return nil, err // no other controller will serve it either
		}
		if err == nil && !api.Refused(resp) {
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
func (ch *Channel) remote(ctx context.Context, id int32, req kmsg.Request, asIs bool) (kmsg.Response, error) {
	resp, err := ch.remoteOnce(ctx, id, req, asIs)
	if errors.Is(err, kclient.ErrSessionExpired) {
		// Not sent: the connection's SASL session ends
		// (connections.max.reauth.ms). A new one takes it, now.
		resp, err = ch.remoteOnce(ctx, id, req, asIs)
	}
	return resp, err
}

func (ch *Channel) remoteOnce(ctx context.Context, id int32, req kmsg.Request, asIs bool) (kmsg.Response, error) {
	conn, err := ch.conn(ctx, id)
	if err != nil {
		return nil, err
	}
	var resp kmsg.Response
	r, forClient := controller.RequesterOf(ctx)
	_, _, envelopes := conn.Versions(int16(kmsg.Envelope))
	switch {
	case asIs && forClient && envelopes:
		resp, err = enveloped(ctx, conn, req, r)
	case asIs:
		// A controller without Envelope (an older Samsa) decides the
		// request without knowing the client: no client quota applies.
		resp, err = conn.RequestAsIs(ctx, req)
	default:
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
		if !errors.Is(err, kclient.ErrSessionExpired) {
			// A retired connection closes itself once the requests in
			// flight on it have their answers.
			conn.Close()
		}
	}
	return resp, err
}

func (ch *Channel) conn(ctx context.Context, id int32) (*kclient.Conn, error) {
	addr, ok := ch.addr(id)
	if !ok {
		return nil, fmt.Errorf("leader %d is not a known voter", id)
	}
	ch.mu.Lock()
	c := ch.conns[id]
	same := ch.addrs[id] == addr
	ch.mu.Unlock()
	if c != nil && same {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := ch.dialer.Dial(dctx, addr, fmt.Sprintf("samsa-broker-%d", ch.self))
	if err != nil {
		return nil, fmt.Errorf("dial controller %d at %s: %w", id, addr, err)
	}
	ch.mu.Lock()
	if old := ch.conns[id]; old != nil {
		old.Close()
	}
	ch.conns[id], ch.addrs[id] = c, addr
	ch.mu.Unlock()
	return c, nil
}

// addr is where controller id listens: as the LeaderSource knows it now,
// else as configured.
func (ch *Channel) addr(id int32) (string, bool) {
	if s, ok := ch.leaders.(AddrSource); ok {
		if a, ok := s.Addr(id); ok {
			return a, true
		}
	}
	a, ok := ch.voters[id]
	return a, ok
}

// Close ends the requests ForwardInBackground still carries (their done
// gets a timed-out answer), waits for them, and closes the connections.
func (ch *Channel) Close() {
	ch.mu.Lock()
	ch.closed = true
	ch.mu.Unlock()
	ch.bgCancel()
	ch.bg.Wait()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for id, c := range ch.conns {
		c.Close()
		delete(ch.conns, id)
	}
}

// Forward sends a client's admin request to the active controller in the
// client's version and returns the answer (the type of
// req.ResponseKind()); the caller sets the response version. It is
// Kafka's ForwardingManager and needs no code per API: the controller's
// API table (controller.LookupAPI) says how the local controller decides
// req, how a NOT_CONTROLLER refusal looks, and what the client hears when
// no controller answered in time (Failed). The request's own timeout (or
// defaultForwardTimeout) bounds every try together: nothing is sent after
// it.
func (ch *Channel) Forward(ctx context.Context, req kmsg.Request) kmsg.Response {
	api, ok := controller.LookupAPI(kmsg.Key(req.Key()))
	if !ok || !api.Forwarded() {
		panic(fmt.Sprintf("controllerchannel: the controller does not serve %s for clients", kmsg.NameForKey(req.Key())))
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout(req))
	defer cancel()
	resp, err := ch.send(ctx, req, true)
	if err != nil {
		return api.Failed(req, err)
	}
	return resp
}

// ForwardInBackground is Forward without waiting for the answer, as
// Kafka's NodeToControllerChannelManager.sendRequest with a completion
// handler: done, when not nil, gets the answer on another goroutine, or
// the timed-out one (api.Failed) if the channel closes first. The broker
// creates topics for Metadata requests so (Kafka's
// AutoTopicCreationManager). Of ctx only the client it names
// (controller.WithRequester) is kept: the request outlives it.
func (ch *Channel) ForwardInBackground(ctx context.Context, req kmsg.Request, done func(kmsg.Response)) {
	api, ok := controller.LookupAPI(kmsg.Key(req.Key()))
	if !ok || !api.Forwarded() {
		panic(fmt.Sprintf("controllerchannel: the controller does not serve %s for clients", kmsg.NameForKey(req.Key())))
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		if done != nil {
			done(api.Failed(req, fmt.Errorf("%w: the node is shutting down", kerr.RequestTimedOut)))
		}
		return
	}
	ch.bg.Add(1)
	ch.mu.Unlock()
	fctx := ch.bgCtx
	if r, ok := controller.RequesterOf(ctx); ok {
		fctx = controller.WithRequester(fctx, r)
	}
	go func() {
		defer ch.bg.Done()
		resp := ch.Forward(fctx, req)
		if done != nil {
			done(resp)
		}
	}()
}

// forwardTimeout is how long a forwarded request may take: its own
// timeout when it has one.
func forwardTimeout(req kmsg.Request) time.Duration {
	if tr, ok := req.(kmsg.TimeoutRequest); ok && tr.Timeout() > 0 {
		return time.Duration(tr.Timeout()) * time.Millisecond
	}
	return defaultForwardTimeout
}

// AllocateProducerIDs asks the active controller for a block of producer
// ids for the broker's InitProducerId.
func (ch *Channel) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (int64, int32, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.SetVersion(req.MaxVersion())
	req.BrokerID, req.BrokerEpoch = brokerID, brokerEpoch
	resp, err := ch.send(ctx, req, false)
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, 0, err
	}
	return r.ProducerIDStart, r.ProducerIDLen, nil
}

func (ch *Channel) brokerRegistration(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	resp, err := ch.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerRegistrationResponse), nil
}

func (ch *Channel) brokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp, err := ch.send(ctx, req, false)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerHeartbeatResponse), nil
}

// AlterPartition is the replica manager's hook: a leader asking the
// controller to change an ISR.
func (ch *Channel) AlterPartition(ctx context.Context, brokerEpoch int64, r replica.AlterPartitionRequest) (replica.PartitionState, error) {
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
	resp, err := ch.send(ctx, req, false)
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
