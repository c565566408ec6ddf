package share

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

// PersisterConfig configures the Persister NewPersister returns.
type PersisterConfig struct {
	// NodeID is this broker's id.
	NodeID int32
	// Local is this node's share coordinator: keys whose partition of
	// __share_group_state this node leads are served by it directly,
	// without a request over the network. It also says how keys map to
	// partitions. Required.
	Local *Coordinator
	// Image returns the latest metadata image: the leaders of
	// __share_group_state and the brokers' endpoints. Required.
	Image func() *metadata.Image
	// EnsureTopic creates __share_group_state when the image does not
	// have it yet (the broker's EnsureShareStateTopic, which is what a
	// FindCoordinator for a share key does). Nil: a missing topic is
	// COORDINATOR_NOT_AVAILABLE.
	EnsureTopic func(ctx context.Context) error
	// Listener names the listener of the other brokers that is dialed:
	// inter.broker.listener.name. Empty means PLAINTEXT.
	Listener string
	// Dial connects to another broker; nil uses kclient.Dial. One
	// connection per broker is kept and dialed again after an error.
	Dial func(ctx context.Context, addr string) (replica.PeerConn, error)
	// Backoff is the first pause before keys whose coordinator answered
	// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
	// COORDINATOR_NOT_AVAILABLE (or could not be reached) are sent
	// again, each pause doubling up to MaxBackoff, for at most Attempts
	// sends. Zero values mean 100 ms, 2 s and 10 (about 12 s in all,
	// enough for a coordinator to move to another broker and load).
	Backoff, MaxBackoff time.Duration
	Attempts            int
	// RequestTimeout bounds one request to another broker, dialing
	// included (30 s when zero).
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// NewPersister returns the Persister of a broker (Kafka's
// DefaultStatePersister and PersisterStateManager): it splits each
// request by the share coordinator of its keys — the leader of the key's
// partition of __share_group_state in the metadata image — serves the
// keys this node coordinates with cfg.Local and sends the others'
// requests to their brokers, retries the keys whose coordinator moved or
// is loading, and puts the answers back in the request's order.
func NewPersister(cfg PersisterConfig) *StatePersister {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Listener == "" {
		cfg.Listener = "PLAINTEXT"
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 2 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 10
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Dial == nil {
		clientID := fmt.Sprintf("samsa-share-persister-%d", cfg.NodeID)
		cfg.Dial = func(ctx context.Context, addr string) (replica.PeerConn, error) {
			c, err := kclient.Dial(ctx, addr, clientID)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	p := &StatePersister{cfg: cfg}
	p.mu.conns = map[int32]replica.PeerConn{}
	return p
}

var _ Persister = (*StatePersister)(nil)

// StatePersister is the broker's Persister (NewPersister).
type StatePersister struct {
	cfg PersisterConfig
	mu  struct {
		sync.Mutex
		conns map[int32]replica.PeerConn
	}
}

// Close closes the connections to other brokers; later requests to them
// dial again.
func (p *StatePersister) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.mu.conns {
		_ = c.Close()
		delete(p.mu.conns, id)
	}
}

// retriable reports whether a key's answer means "ask again, maybe
// elsewhere": its coordinator moved, is loading, or is unavailable.
func retriable(code int16) bool {
	return code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code ||
		code == kerr.CoordinatorNotAvailable.Code
}

// call is one Persister request in a form independent of its RPC: its
// keys, how to build a request carrying some of them, and how to read a
// response's answers.
type call[A any] struct {
	keys []Key
	// build is the request (at the RPC's highest version) carrying the
	// keys of idx, in that order.
	build func(idx []int) kmsg.Request
	// local serves a request with this node's coordinator.
	local func(ctx context.Context, req kmsg.Request) kmsg.Response
	// answers reads a response: each partition's answer by key.
	answers func(resp kmsg.Response) map[Key]A
	code    func(A) int16
	// failed is the answer of a key that got no answer.
	failed func(k Key, code int16, msg string) A
}

// run sends c until every key has a final answer, or the attempts are
// spent (the keys left keep their last retriable answer), and returns
// the answers in key order.
func run[A any](ctx context.Context, p *StatePersister, c call[A]) ([]A, error) {
	out := make([]A, len(c.keys))
	pending := make([]int, len(c.keys))
	for i := range pending {
		pending[i] = i
	}
	backoff := p.cfg.Backoff
	for attempt := 1; ; attempt++ {
		pending = send(ctx, p, c, pending, out)
		if len(pending) == 0 || attempt >= p.cfg.Attempts {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, p.cfg.MaxBackoff)
	}
}

// send sends the keys of idx to their coordinators, one request per
// broker, concurrently, records their answers in out and returns the
// keys to send again.
func send[A any](ctx context.Context, p *StatePersister, c call[A], idx []int, out []A) []int {
	byNode, unrouted := p.route(ctx, c.keys, idx)
	var retry []int
	for _, i := range unrouted {
		out[i] = c.failed(c.keys[i], kerr.CoordinatorNotAvailable.Code, "no live coordinator for the share partition")
		retry = append(retry, i)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for node, ids := range byNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers, err := request(ctx, p, node, c, ids)
			mu.Lock()
			defer mu.Unlock()
			for _, i := range ids {
				a, ok := answers[c.keys[i]]
				switch {
				case err != nil:
					a = c.failed(c.keys[i], kerr.CoordinatorNotAvailable.Code, err.Error())
				case !ok:
					a = c.failed(c.keys[i], kerr.UnknownServerError.Code, fmt.Sprintf("broker %d did not answer for the share partition", node))
				}
				out[i] = a
				if err != nil || retriable(c.code(a)) {
					retry = append(retry, i)
				}
			}
		}()
	}
	wg.Wait()
	return retry
}

// route groups the keys of idx by the broker that leads their partition
// of __share_group_state; keys with no live leader are unrouted.
func (p *StatePersister) route(ctx context.Context, keys []Key, idx []int) (byNode map[int32][]int, unrouted []int) {
	img := p.cfg.Image()
	t, ok := img.Topic(StateTopic)
	if !ok && p.cfg.EnsureTopic != nil {
		if err := p.cfg.EnsureTopic(ctx); err != nil {
			p.cfg.Logger.Warn("cannot create "+StateTopic, "err", err)
		}
		img = p.cfg.Image()
		t, ok = img.Topic(StateTopic)
	}
	if !ok {
		return nil, idx
	}
	byNode = map[int32][]int{}
	for _, i := range idx {
		part := p.cfg.Local.PartitionFor(keys[i])
		if int(part) >= len(t.Partitions) {
			unrouted = append(unrouted, i)
			continue
		}
		leader := t.Partitions[part].Leader
		if br, ok := img.Broker(leader); !ok || br.Fenced {
			unrouted = append(unrouted, i)
			continue
		}
		byNode[leader] = append(byNode[leader], i)
	}
	return byNode, unrouted
}

// request sends the keys of ids to node, or serves them here when node is
// this broker, and returns the answers by key.
func request[A any](ctx context.Context, p *StatePersister, node int32, c call[A], ids []int) (map[Key]A, error) {
	req := c.build(ids)
	if node == p.cfg.NodeID {
		return c.answers(c.local(ctx, req)), nil
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	conn, err := p.conn(rctx, node)
	if err != nil {
		return nil, fmt.Errorf("share coordinator %d: %w", node, err)
	}
	resp, err := conn.Request(rctx, req)
	if errors.Is(err, kclient.ErrSessionExpired) {
		// Not sent: the connection's SASL session ends. A new one takes it.
		p.forget(node, conn, false)
		if conn, err = p.conn(rctx, node); err == nil {
			resp, err = conn.Request(rctx, req)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			p.forget(node, conn, true)
		}
		return nil, fmt.Errorf("share coordinator %d: %w", node, err)
	}
	if resp.Key() != req.Key() {
		p.forget(node, conn, true)
		return nil, fmt.Errorf("share coordinator %d: unexpected response %T", node, resp)
	}
	return c.answers(resp), nil
}

// conn returns the pooled connection to broker id, dialing its endpoint
// on the inter-broker listener if there is none.
func (p *StatePersister) conn(ctx context.Context, id int32) (replica.PeerConn, error) {
	p.mu.Lock()
	c, ok := p.mu.conns[id]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	br, ok := p.cfg.Image().Broker(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	var addr string
	for _, ep := range br.Endpoints {
		if ep.Name == p.cfg.Listener {
			addr = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("broker %d has no endpoint on listener %s", id, p.cfg.Listener)
	}
	c, err := p.cfg.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.mu.conns[id]; ok {
		_ = c.Close()
		return cur, nil
	}
	p.mu.conns[id] = c
	return c, nil
}

// forget takes c out of the pool unless it was replaced, closing it when
// it broke.
func (p *StatePersister) forget(id int32, c replica.PeerConn, broken bool) {
	p.mu.Lock()
	if p.mu.conns[id] == c {
		delete(p.mu.conns, id)
	}
	p.mu.Unlock()
	if broken {
		_ = c.Close()
	}
}
