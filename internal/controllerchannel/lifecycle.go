package controllerchannel

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// Lifecycle registers this broker with the active controller and keeps its
// session alive with heartbeats (Kafka's BrokerLifecycleManager). A new
// registration is fenced; the controller unfences the broker once a
// heartbeat shows it has replayed the metadata log up to its registration.
// A heartbeat refused as stale (the controller lost or expired the
// session) registers again. On shutdown it asks for a controlled shutdown,
// so leadership moves away before the process exits.
//
// It also keeps the broker's side of the session. When no heartbeat sent
// in the last SessionTimeout (broker.session.timeout.ms) was answered,
// the controller may have fenced this broker and moved its leaderships
// (it counts the same timeout from when it received the last heartbeat,
// which is no earlier than when it was sent), so the broker fences itself
// first: OnSession(true). It lifts that fence, OnSession(false), on a
// heartbeat answered unfenced and caught up, i.e. once it has replayed
// whatever the quorum decided meanwhile. Kafka's BrokerLifecycleManager
// does not fence itself; without it, a broker cut off from the quorum
// keeps serving the leaderships of its last image for the whole cut.
type Lifecycle struct {
	cfg LifecycleConfig

	epoch    atomic.Int64
	fenced   atomic.Bool
	unfenced chan struct{} // closed at the first unfencing
	once     sync.Once

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	// session is the broker's side of its session; the heartbeat loop
	// and the lapse timer meet here.
	session struct {
		sync.Mutex
		deadline time.Time   // last answered heartbeat's send time + SessionTimeout
		timer    *time.Timer // fires lapse at deadline; nil before the first answer
		lapsed   bool
		stopped  bool
	}
}

// LifecycleConfig configures a Lifecycle.
type LifecycleConfig struct {
	// Channel reaches the active controller.
	Channel   *Channel
	Logger    *slog.Logger
	ClusterID string
	NodeID    int32
	// Endpoints are the client listeners to register.
	Endpoints []metadata.Endpoint
	Rack      *string
	// Interval is broker.heartbeat.interval.ms.
	Interval time.Duration
	// MetadataOffset is how far this node has replayed the metadata log.
	MetadataOffset func() int64
	// OnEpoch is told every new broker epoch.
	OnEpoch func(int64)
	// PreviousBrokerEpoch is the epoch of the node's last clean stop
	// (storage.LogManager.PreviousBrokerEpoch), -1 for none: the first
	// registration names it (KIP-966), a later one in this process the
	// epoch it had, so the controller knows the log lost nothing.
	PreviousBrokerEpoch int64
	// SessionTimeout is broker.session.timeout.ms; OnSession is told
	// when the session lapses (true) and when it is back (false).
	SessionTimeout time.Duration
	OnSession      func(lapsed bool)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewLifecycle returns a lifecycle manager; Start starts it.
func NewLifecycle(cfg LifecycleConfig) *Lifecycle {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Lifecycle{cfg: cfg}
}

// Start registers and starts heartbeating; it returns at once.
func (l *Lifecycle) Start() {
	l.unfenced = make(chan struct{})
	l.stop = make(chan struct{})
	l.done = make(chan struct{})
	l.fenced.Store(true)
	go l.run()
}

// WaitUnfenced blocks until the controller first unfences this broker.
func (l *Lifecycle) WaitUnfenced(ctx context.Context) error {
	select {
	case <-l.unfenced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the controller to unfence broker %d: %w", l.cfg.NodeID, ctx.Err())
	}
}

func (l *Lifecycle) run() {
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-l.stop
		cancel()
	}()
	registered := false
	for ctx.Err() == nil {
		if !registered {
			if err := l.register(ctx); err != nil {
				if ctx.Err() == nil {
					l.cfg.Logger.Warn("broker registration failed, retrying", "err", err)
					sleep(ctx, time.Second)
				}
				continue
			}
			registered = true
		}
		sent := l.cfg.Now()
		resp, err := l.heartbeat(ctx, false)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				l.cfg.Logger.Warn("broker heartbeat failed", "err", err)
			}
		case resp.ErrorCode == kerr.StaleBrokerEpoch.Code || resp.ErrorCode == kerr.BrokerIDNotRegistered.Code:
			l.cfg.Logger.Warn("controller does not know this broker's session, registering again", "err", kerr.ErrorForCode(resp.ErrorCode))
			registered = false
			continue
		case resp.ErrorCode != 0:
			l.cfg.Logger.Warn("broker heartbeat refused", "err", kerr.ErrorForCode(resp.ErrorCode))
		default:
			l.observe(resp)
			l.answered(sent, resp)
		}
		// A fenced broker heartbeats often, so it is unfenced as soon as
		// it catches up.
		wait := l.cfg.Interval
		if l.fenced.Load() || l.lapsed() {
			wait = min(wait, 100*time.Millisecond)
		}
		sleep(ctx, wait)
	}
}

func (l *Lifecycle) observe(resp *kmsg.BrokerHeartbeatResponse) {
	was := l.fenced.Swap(resp.IsFenced)
	switch {
	case was && !resp.IsFenced:
		l.cfg.Logger.Info("broker unfenced by the controller", "broker.epoch", l.epoch.Load())
		l.once.Do(func() { close(l.unfenced) })
	case !was && resp.IsFenced:
		l.cfg.Logger.Warn("broker fenced by the controller", "broker.epoch", l.epoch.Load())
	}
}

// answered extends the session by a heartbeat sent at sent that the
// controller answered, and lifts a lapse once the answer shows the broker
// unfenced and caught up with the metadata log.
func (l *Lifecycle) answered(sent time.Time, resp *kmsg.BrokerHeartbeatResponse) {
	l.session.Lock()
	defer l.session.Unlock()
	if l.session.stopped {
		return
	}
	l.session.deadline = sent.Add(l.cfg.SessionTimeout)
	wait := l.session.deadline.Sub(l.cfg.Now())
	if l.session.timer == nil {
		l.session.timer = time.AfterFunc(wait, l.lapse)
	} else {
		l.session.timer.Reset(wait)
	}
	if l.session.lapsed && !resp.IsFenced && resp.IsCaughtUp {
		l.session.lapsed = false
		l.cfg.Logger.Info("session with the controller quorum restored, serving as leader again", "broker.epoch", l.epoch.Load())
		l.cfg.OnSession(false)
	}
}

// lapse fences the broker when its session deadline passed without a
// newer answered heartbeat. It runs on the session timer.
func (l *Lifecycle) lapse() {
	l.session.Lock()
	defer l.session.Unlock()
	if l.session.stopped || l.session.lapsed || l.cfg.Now().Before(l.session.deadline) {
		return // stopped, already lapsed, or extended since the timer fired
	}
	l.session.lapsed = true
	l.cfg.Logger.Warn("no heartbeat answered within broker.session.timeout.ms: fencing this broker until the controller quorum is reachable again",
		"broker.epoch", l.epoch.Load(), "session_timeout", l.cfg.SessionTimeout)
	l.cfg.OnSession(true)
}

// lapsed reports whether the broker fenced itself.
func (l *Lifecycle) lapsed() bool {
	l.session.Lock()
	defer l.session.Unlock()
	return l.session.lapsed
}

func (l *Lifecycle) register(ctx context.Context) error {
	incarnation, err := metadata.RandomUuid(rand.Reader)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID = l.cfg.NodeID
	req.ClusterID = l.cfg.ClusterID
	req.IncarnationID = incarnation
	req.PreviousBrokerEpoch = l.cfg.PreviousBrokerEpoch
	if e := l.epoch.Load(); e > 0 {
		req.PreviousBrokerEpoch = e // registering again after a lapsed session
	}
	req.Rack = l.cfg.Rack
	for _, e := range l.cfg.Endpoints {
		le := kmsg.NewBrokerRegistrationRequestListener()
		le.Name, le.Host, le.Port, le.SecurityProtocol = e.Name, e.Host, e.Port, e.SecurityProtocol
		req.Listeners = append(req.Listeners, le)
	}
	for _, sf := range metadata.SupportedFeatures() {
		f := kmsg.NewBrokerRegistrationRequestFeature()
		f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = sf.Name, sf.Min, sf.Max
		req.Features = append(req.Features, f)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := l.cfg.Channel.brokerRegistration(rctx, req)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	l.epoch.Store(resp.BrokerEpoch)
	l.fenced.Store(true)
	l.cfg.OnEpoch(resp.BrokerEpoch)
	l.cfg.Logger.Info("registered with the controller", "broker.epoch", resp.BrokerEpoch)
	return nil
}

func (l *Lifecycle) heartbeat(ctx context.Context, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID = l.cfg.NodeID
	req.BrokerEpoch = l.epoch.Load()
	req.CurrentMetadataOffset = l.cfg.MetadataOffset()
	req.WantFence = false
	req.WantShutdown = wantShutdown
	hctx, cancel := context.WithTimeout(ctx, max(l.cfg.Interval, time.Second))
	defer cancel()
	return l.cfg.Channel.brokerHeartbeat(hctx, req)
}

// Shutdown stops heartbeating after a controlled shutdown: it asks the
// controller to move leadership away and waits (at most timeout) until
// the controller says the broker may stop.
func (l *Lifecycle) Shutdown(timeout time.Duration) {
	stopped := false
	l.stopOnce.Do(func() { close(l.stop); stopped = true })
	<-l.done
	// Leadership moves away by the controlled shutdown (or the session
	// expiring at the controller); a lapse no longer matters.
	l.session.Lock()
	l.session.stopped = true
	if l.session.timer != nil {
		l.session.timer.Stop()
	}
	l.session.Unlock()
	if !stopped {
		return // shut down before
	}
	if l.epoch.Load() == 0 || timeout <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		resp, err := l.heartbeat(ctx, true)
		if err == nil && resp.ErrorCode == 0 && resp.ShouldShutdown {
			l.cfg.Logger.Info("controlled shutdown complete")
			return
		}
		if ctx.Err() != nil {
			if err == nil && resp.ErrorCode != 0 {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err == nil {
				err = errors.New("controller did not release the broker in time")
			}
			l.cfg.Logger.Warn("controlled shutdown incomplete, stopping anyway", "err", err)
			return
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Epoch is the broker epoch of the current registration, 0 before the
// first.
func (l *Lifecycle) Epoch() int64 { return l.epoch.Load() }
