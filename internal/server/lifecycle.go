package server

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

// lifecycle registers this broker with the active controller and keeps its
// session alive with heartbeats (Kafka's BrokerLifecycleManager). A new
// registration is fenced; the controller unfences the broker once a
// heartbeat shows it has replayed the metadata log up to its registration.
// A heartbeat refused as stale (the controller lost or expired the
// session) registers again. On shutdown it asks for a controlled shutdown,
// so leadership moves away before the process exits.
//
// It also keeps the broker's side of the session. When no heartbeat sent
// in the last sessionTimeout (broker.session.timeout.ms) was answered,
// the controller may have fenced this broker and moved its leaderships
// (it counts the same timeout from when it received the last heartbeat,
// which is no earlier than when it was sent), so the broker fences itself
// first: onSession(true). It lifts that fence, onSession(false), on a
// heartbeat answered unfenced and caught up, i.e. once it has replayed
// whatever the quorum decided meanwhile. Kafka's BrokerLifecycleManager
// does not fence itself; without it, a broker cut off from the quorum
// keeps serving the leaderships of its last image for the whole cut.
type lifecycle struct {
	ch        *channel
	logger    *slog.Logger
	clusterID string
	nodeID    int32
	endpoints []metadata.Endpoint
	rack      *string
	interval  time.Duration
	// metadataOffset is how far this node has replayed the metadata log.
	metadataOffset func() int64
	// onEpoch is told every new broker epoch.
	onEpoch func(int64)
	// sessionTimeout is broker.session.timeout.ms; onSession is told
	// when the session lapses (true) and when it is back (false).
	sessionTimeout time.Duration
	onSession      func(lapsed bool)
	// now is the clock (time.Now); tests inject theirs.
	now func() time.Time

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
		deadline time.Time   // last answered heartbeat's send time + sessionTimeout
		timer    *time.Timer // fires lapse at deadline; nil before the first answer
		lapsed   bool
		stopped  bool
	}
}

// start registers and starts heartbeating; it returns at once.
func (l *lifecycle) start() {
	l.unfenced = make(chan struct{})
	l.stop = make(chan struct{})
	l.done = make(chan struct{})
	l.fenced.Store(true)
	if l.now == nil {
		l.now = time.Now
	}
	go l.run()
}

// waitUnfenced blocks until the controller first unfences this broker.
func (l *lifecycle) waitUnfenced(ctx context.Context) error {
	select {
	case <-l.unfenced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the controller to unfence broker %d: %w", l.nodeID, ctx.Err())
	}
}

func (l *lifecycle) run() {
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
					l.logger.Warn("broker registration failed, retrying", "err", err)
					sleep(ctx, time.Second)
				}
				continue
			}
			registered = true
		}
		sent := l.now()
		resp, err := l.heartbeat(ctx, false)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				l.logger.Warn("broker heartbeat failed", "err", err)
			}
		case resp.ErrorCode == kerr.StaleBrokerEpoch.Code || resp.ErrorCode == kerr.BrokerIDNotRegistered.Code:
			l.logger.Warn("controller does not know this broker's session, registering again", "err", kerr.ErrorForCode(resp.ErrorCode))
			registered = false
			continue
		case resp.ErrorCode != 0:
			l.logger.Warn("broker heartbeat refused", "err", kerr.ErrorForCode(resp.ErrorCode))
		default:
			l.observe(resp)
			l.answered(sent, resp)
		}
		// A fenced broker heartbeats often, so it is unfenced as soon as
		// it catches up.
		wait := l.interval
		if l.fenced.Load() || l.lapsed() {
			wait = min(wait, 100*time.Millisecond)
		}
		sleep(ctx, wait)
	}
}

func (l *lifecycle) observe(resp *kmsg.BrokerHeartbeatResponse) {
	was := l.fenced.Swap(resp.IsFenced)
	switch {
	case was && !resp.IsFenced:
		l.logger.Info("broker unfenced by the controller", "brokerEpoch", l.epoch.Load())
		l.once.Do(func() { close(l.unfenced) })
	case !was && resp.IsFenced:
		l.logger.Warn("broker fenced by the controller", "brokerEpoch", l.epoch.Load())
	}
}

// answered extends the session by a heartbeat sent at sent that the
// controller answered, and lifts a lapse once the answer shows the broker
// unfenced and caught up with the metadata log.
func (l *lifecycle) answered(sent time.Time, resp *kmsg.BrokerHeartbeatResponse) {
	l.session.Lock()
	defer l.session.Unlock()
	if l.session.stopped {
		return
	}
	l.session.deadline = sent.Add(l.sessionTimeout)
	wait := l.session.deadline.Sub(l.now())
	if l.session.timer == nil {
		l.session.timer = time.AfterFunc(wait, l.lapse)
	} else {
		l.session.timer.Reset(wait)
	}
	if l.session.lapsed && !resp.IsFenced && resp.IsCaughtUp {
		l.session.lapsed = false
		l.logger.Info("session with the controller quorum restored, serving as leader again", "brokerEpoch", l.epoch.Load())
		l.onSession(false)
	}
}

// lapse fences the broker when its session deadline passed without a
// newer answered heartbeat. It runs on the session timer.
func (l *lifecycle) lapse() {
	l.session.Lock()
	defer l.session.Unlock()
	if l.session.stopped || l.session.lapsed || l.now().Before(l.session.deadline) {
		return // stopped, already lapsed, or extended since the timer fired
	}
	l.session.lapsed = true
	l.logger.Warn("no heartbeat answered within broker.session.timeout.ms: fencing this broker until the controller quorum is reachable again",
		"brokerEpoch", l.epoch.Load(), "sessionTimeout", l.sessionTimeout)
	l.onSession(true)
}

// lapsed reports whether the broker fenced itself.
func (l *lifecycle) lapsed() bool {
	l.session.Lock()
	defer l.session.Unlock()
	return l.session.lapsed
}

func (l *lifecycle) register(ctx context.Context) error {
	incarnation, err := metadata.RandomUuid(rand.Reader)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(4)
	req.BrokerID = l.nodeID
	req.ClusterID = l.clusterID
	req.IncarnationID = incarnation
	req.Rack = l.rack
	for _, e := range l.endpoints {
		le := kmsg.NewBrokerRegistrationRequestListener()
		le.Name, le.Host, le.Port, le.SecurityProtocol = e.Name, e.Host, e.Port, e.SecurityProtocol
		req.Listeners = append(req.Listeners, le)
	}
	f := kmsg.NewBrokerRegistrationRequestFeature()
	f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = metadata.MetadataVersionFeature, 1, 27
	req.Features = append(req.Features, f)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := l.ch.brokerRegistration(rctx, req)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	l.epoch.Store(resp.BrokerEpoch)
	l.fenced.Store(true)
	l.onEpoch(resp.BrokerEpoch)
	l.logger.Info("registered with the controller", "brokerEpoch", resp.BrokerEpoch)
	return nil
}

func (l *lifecycle) heartbeat(ctx context.Context, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID = l.nodeID
	req.BrokerEpoch = l.epoch.Load()
	req.CurrentMetadataOffset = l.metadataOffset()
	req.WantFence = false
	req.WantShutdown = wantShutdown
	hctx, cancel := context.WithTimeout(ctx, max(l.interval, time.Second))
	defer cancel()
	return l.ch.brokerHeartbeat(hctx, req)
}

// shutdown stops heartbeating after a controlled shutdown: it asks the
// controller to move leadership away and waits (at most timeout) until
// the controller says the broker may stop.
func (l *lifecycle) shutdown(timeout time.Duration) {
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
			l.logger.Info("controlled shutdown complete")
			return
		}
		if ctx.Err() != nil {
			if err == nil && resp.ErrorCode != 0 {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err == nil {
				err = errors.New("controller did not release the broker in time")
			}
			l.logger.Warn("controlled shutdown incomplete, stopping anyway", "err", err)
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
