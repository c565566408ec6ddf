package controller

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// Broker lifecycle (Kafka's ClusterControlManager and BrokerHeartbeatManager):
//
//	BrokerRegistration → registered FENCED with a new epoch
//	BrokerHeartbeat caught up to the registration record → UNFENCED
//	BrokerHeartbeat WantShutdown → IN CONTROLLED SHUTDOWN; ShouldShutdown
//	  once it leads nothing
//	no heartbeat for SessionTimeout (or WantFence) → FENCED
//
// Sessions live in memory on the active controller only; a new active
// controller gives every broker a full session before judging it.

// sessionCheckInterval is how often the loop looks for expired sessions.
const sessionCheckInterval = 200 * time.Millisecond

// BrokerRegistration registers (or re-registers) a broker, fenced, with a
// new broker epoch. Versions 0-4.
func (c *Controller) BrokerRegistration(ctx context.Context, req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	resp.Version = req.Version
	resp.BrokerEpoch = -1
	c.mu.Lock()
	defer c.mu.Unlock()
	epoch, err := c.registerLocked(ctx, req)
	if err != nil {
		resp.ErrorCode, _ = wire.ErrorCodeAndMessage(err)
		return resp
	}
	resp.BrokerEpoch = epoch
	return resp
}

// registerLocked registers a broker, fenced.
func (c *Controller) registerLocked(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (int64, error) {
	img, err := c.beginLocked(ctx)
	if err != nil {
		return 0, err
	}
	id := req.BrokerID
	switch {
	case req.ClusterID != img.ClusterID:
		return 0, wire.Errorf(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s", img.ClusterID, req.ClusterID)
	case id < 0:
		return 0, wire.Errorf(kerr.InvalidRequest, "invalid broker id %d", id)
	}
	var features []metadata.FeatureRange
	for _, f := range req.Features {
		features = append(features, metadata.FeatureRange{Name: f.Name, Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion})
	}
	if err := unsupportedFinalized(img, features); err != nil {
		return 0, err
	}
	now := c.cfg.Now()
	old, exists := img.Broker(id)
	// A fenced broker has no session to protect (Kafka's hasValidSession).
	if exists && !old.Fenced && old.IncarnationID != metadata.Uuid(req.IncarnationID) {
		if deadline, ok := c.mu.sessions[id]; ok && !now.After(deadline) && c.mu.heard[id] {
			return 0, wire.Errorf(kerr.DuplicateBrokerRegistration, "Another broker is registered with that broker id.")
		}
	}
	// Kafka uses the offset of the registration record as the epoch; the
	// next raft index is above img.Offset, so this is as monotonic.
	epoch := int64(img.Offset) + 1
	if exists && old.Epoch >= epoch {
		epoch = old.Epoch + 1
	}
	ch := c.changes(img)
	if exists {
		// The previous incarnation's leaderships and ISR places go: the
		// new one starts fenced and must catch up first.
		ch.fence(id)
		// A broker that did not shut down cleanly (it does not name its
		// previous epoch, KIP-966) may have lost records it
		// acknowledged: it leaves every ELR too.
		if ch.elr && req.PreviousBrokerEpoch != old.Epoch {
			ch.uncleanShutdown(id)
		}
	}
	rec := &metadata.RegisterBrokerRecord{BrokerID: id, IncarnationID: req.IncarnationID, BrokerEpoch: epoch,
		Rack: req.Rack, Fenced: true, Features: features}
	for _, l := range req.Listeners {
		rec.Endpoints = append(rec.Endpoints, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	if err := c.writeLocked(ctx, append(ch.records(), rec)); err != nil {
		return 0, err
	}
	c.mu.sessions[id] = now.Add(c.cfg.SessionTimeout)
	c.mu.heard[id] = true
	c.cfg.Logger.Info("registered broker", "broker", id, "epoch", epoch, "incarnation", metadata.Uuid(req.IncarnationID))
	return epoch, nil
}

// BrokerHeartbeat renews a broker's session and moves it through its
// lifecycle (see above). Versions 0-1.
func (c *Controller) BrokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.Version = req.Version
	resp.IsFenced = true
	if !c.mu.TryLock() {
		if c.heartbeatWhileBusy(req, resp) {
			return resp
		}
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	if err := c.heartbeatLocked(ctx, req, resp); err != nil {
		resp.ErrorCode, _ = wire.ErrorCodeAndMessage(err)
	}
	return resp
}

func (c *Controller) heartbeatLocked(ctx context.Context, req *kmsg.BrokerHeartbeatRequest, resp *kmsg.BrokerHeartbeatResponse) error {
	img, err := c.beginLocked(ctx)
	if err != nil {
		return err
	}
	id := req.BrokerID
	b, ok := img.Broker(id)
	if !ok {
		return wire.Errorf(kerr.BrokerIDNotRegistered, "Broker %d is not registered.", id)
	}
	if b.Epoch != req.BrokerEpoch {
		return wire.Errorf(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.Epoch, req.BrokerEpoch)
	}
	c.mu.sessions[id] = c.cfg.Now().Add(c.cfg.SessionTimeout)
	c.mu.heard[id] = true
	offset := req.CurrentMetadataOffset
	ch := c.changes(img)
	switch {
	case req.WantShutdown:
		ch.shutdown(id)
	case req.WantFence:
		if !b.Fenced {
			ch.fence(id)
		}
	case b.Fenced && !b.InControlledShutdown && offset >= 0 && uint64(offset) >= b.RegistrationOffset:
		ch.unfence(id)
	}
	if recs := ch.records(); len(recs) > 0 {
		if err := c.writeLocked(ctx, recs); err != nil {
			return err
		}
		if !b.Fenced && req.WantFence {
			c.cfg.Logger.Info("fenced broker at its request", "broker", id)
		} else if b.Fenced && !req.WantShutdown {
			c.cfg.Logger.Info("unfenced broker", "broker", id, "epoch", b.Epoch)
		}
	}
	after := c.cfg.Loader.Image()
	b, _ = after.Broker(id)
	resp.IsCaughtUp = offset >= 0 && uint64(offset) >= img.Offset
	resp.IsFenced = b.Fenced
	resp.ShouldShutdown = req.WantShutdown && after.LeaderCount(id) == 0
	return nil
}

// renewal is a session renewed by heartbeatWhileBusy.
type renewal struct {
	deadline time.Time
	epoch    int64  // the broker epoch it renews
	term     uint64 // the raft term it was answered in
}

// heartbeatWhileBusy answers a heartbeat that arrives while another
// decision holds mu, if it asks for no change: a write holds mu until
// its records are replayed, which on a combined node includes the
// broker creating the logs of new partitions, and a heartbeat queued
// behind a burst of CreateTopics would let the broker's session lapse
// (Kafka's controller does not wait for brokers to apply its records).
// The answer comes from the latest image and the renewed session is
// kept aside for the next holder of mu. A heartbeat that may change the
// broker's state (unfence, fence, controlled shutdown) or that this
// node cannot answer waits for mu; false then.
func (c *Controller) heartbeatWhileBusy(req *kmsg.BrokerHeartbeatRequest, resp *kmsg.BrokerHeartbeatResponse) bool {
	if req.WantShutdown || req.WantFence || !c.cfg.Raft.IsLeader() {
		return false
	}
	img := c.cfg.Loader.Image()
	b, ok := img.Broker(req.BrokerID)
	offset := req.CurrentMetadataOffset
	if !ok || b.Epoch != req.BrokerEpoch || b.InControlledShutdown ||
		b.Fenced && offset >= 0 && uint64(offset) >= b.RegistrationOffset {
		return false
	}
	c.renewals.Lock()
	c.renewals.m[b.ID] = renewal{deadline: c.cfg.Now().Add(c.cfg.SessionTimeout), epoch: b.Epoch, term: c.cfg.Raft.Term()}
	c.renewals.Unlock()
	resp.IsCaughtUp = offset >= 0 && uint64(offset) >= img.Offset
	resp.IsFenced = b.Fenced
	return true
}

// mergeRenewalsLocked moves the sessions heartbeatWhileBusy renewed into
// mu.sessions: those of this term whose broker epoch is still current.
func (c *Controller) mergeRenewalsLocked(img *metadata.Image) {
	c.renewals.Lock()
	defer c.renewals.Unlock()
	for id, r := range c.renewals.m {
		b, ok := img.Broker(id)
		if ok && r.term == c.mu.caughtUpTerm && b.Epoch == r.epoch && r.deadline.After(c.mu.sessions[id]) {
			c.mu.sessions[id] = r.deadline
			c.mu.heard[id] = true
		}
	}
	clear(c.renewals.m)
}

// resetSessionsLocked gives every registered broker a full session: a new
// active controller has not seen their heartbeats.
func (c *Controller) resetSessionsLocked(img *metadata.Image) {
	now := c.cfg.Now()
	c.mu.sessions = map[int32]time.Time{}
	c.mu.heard = map[int32]bool{}
	for _, b := range img.Brokers() {
		c.mu.sessions[b.ID] = now.Add(c.cfg.SessionTimeout)
	}
	c.mu.nextRebalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
	c.mu.nextUnclean = now.Add(c.cfg.UncleanLeaderElectionCheckInterval)
	c.mu.nextTokenSweep = now.Add(c.cfg.Tokens.ExpiryCheckInterval)
}

// Start runs the background loop that, while this node leads the quorum,
// fences brokers whose session expired and (AutoLeaderRebalance) moves
// leadership back to preferred replicas. Calling it again does nothing.
func (c *Controller) Start() {
	c.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		c.stop = cancel
		go c.run(ctx)
	})
}

// Close stops the background loop and waits for it.
func (c *Controller) Close() error {
	c.closeOnce.Do(func() {
		started := false
		c.startOnce.Do(func() {}) // a later Start does nothing
		if c.stop != nil {
			started = true
			c.stop()
		}
		if started {
			<-c.loopDone
		}
	})
	return nil
}

func (c *Controller) run(ctx context.Context) {
	defer close(c.loopDone)
	t := time.NewTicker(sessionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !c.cfg.Raft.IsLeader() {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, c.cfg.SessionTimeout)
		if err := c.tick(tctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("controller background check failed", "err", err)
		}
		cancel()
	}
}

// tick is one round of the background loop: fence expired sessions and,
// when due, rebalance leaders, elect unclean leaders and remove expired
// delegation tokens, in one batch.
func (c *Controller) tick(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err != nil {
		return err
	}
	now := c.cfg.Now()
	ch := c.changes(img)
	for _, b := range img.Brokers() {
		deadline, ok := c.mu.sessions[b.ID]
		if !ok {
			// Registered through another controller in this term's
			// catch-up: give it a full session.
			c.mu.sessions[b.ID] = now.Add(c.cfg.SessionTimeout)
			continue
		}
		if !b.Fenced && now.After(deadline) {
			c.cfg.Logger.Info("fencing broker: session timed out", "broker", b.ID, "epoch", b.Epoch)
			ch.fence(b.ID)
		}
	}
	if c.cfg.AutoLeaderRebalance && !now.Before(c.mu.nextRebalance) {
		c.mu.nextRebalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
		for _, t := range img.Topics() {
			for i := range t.Partitions {
				ch.preferred(t, int32(i))
			}
		}
	}
	if !now.Before(c.mu.nextUnclean) {
		c.mu.nextUnclean = now.Add(c.cfg.UncleanLeaderElectionCheckInterval)
		c.electUncleanLeaders(img, ch)
	}
	recs := ch.records()
	if !now.Before(c.mu.nextTokenSweep) {
		c.mu.nextTokenSweep = now.Add(c.cfg.Tokens.ExpiryCheckInterval)
		recs = append(recs, expiredTokens(img, now)...)
	}
	return c.writeLocked(ctx, recs)
}

// electUncleanLeaders elects a leader, unclean if need be, for every
// leaderless partition of a topic whose unclean.leader.election.enable is
// on (Kafka's maybeElectUncleanLeaders): turning the config on reaches
// partitions that went offline before, within one check interval.
func (c *Controller) electUncleanLeaders(img *metadata.Image, ch *changes) {
	for _, t := range img.Topics() {
		if !ch.unclean(t.Name) {
			continue
		}
		for i, part := range t.Partitions {
			if part.Leader != -1 {
				continue
			}
			p := ch.partition(t, int32(i))
			if p.Leader != -1 {
				continue // elected earlier in this batch
			}
			if ch.settle(p, *p, -1); p.Leader != -1 {
				c.cfg.Logger.Error("Triggering unclean leader election for offline partition", "topic", t.Name, "partition", i, "leader", p.Leader)
			} else {
				c.cfg.Logger.Warn("Cannot trigger unclean leader election for offline partition: no eligible replica", "topic", t.Name, "partition", i)
			}
		}
	}
}

// brokerAPIs are brokers.go's rows of the API table (api.go): the
// broker-to-controller requests of BrokerLifecycleManager, and
// UnregisterBroker, which brokers forward for clients.
func brokerAPIs() []API {
	return []API{
		api(kmsg.BrokerRegistration, 0, 4, (*Controller).BrokerRegistration, nil,
			func(r *kmsg.BrokerRegistrationResponse) bool { return r.ErrorCode == notController }),
		api(kmsg.BrokerHeartbeat, 0, 1, (*Controller).BrokerHeartbeat, nil,
			func(r *kmsg.BrokerHeartbeatResponse) bool { return r.ErrorCode == notController }),
		api(kmsg.UnregisterBroker, 0, 0, (*Controller).UnregisterBroker,
			func(req *kmsg.UnregisterBrokerRequest, err error) *kmsg.UnregisterBrokerResponse {
				r := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
				r.ErrorCode, r.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
				return r
			},
			func(r *kmsg.UnregisterBrokerResponse) bool { return r.ErrorCode == notController }),
	}
}

// UnregisterBroker removes a broker's registration (kafka-cluster
// unregister, Kafka's ReplicationControlManager.unregisterBroker), for a
// broker that is gone for good: it leaves its partitions as if fenced
// (leaderships move to another eligible ISR member or to none; it leaves
// every ISR where another member remains), then its registration is
// removed. BROKER_ID_NOT_REGISTERED if it has none. A broker still running
// registers again at its next heartbeat, as Kafka's do. Version 0.
func (c *Controller) UnregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) *kmsg.UnregisterBrokerResponse {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := func() error {
		img, err := c.beginLocked(ctx)
		if err != nil {
			return err
		}
		b, ok := img.Broker(req.BrokerID)
		if !ok {
			return wire.Errorf(kerr.BrokerIDNotRegistered, "Broker ID %d is not currently registered", req.BrokerID)
		}
		ch := c.changes(img)
		ch.fence(b.ID)
		recs := append(ch.records(), &metadata.UnregisterBrokerRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch})
		if err := c.writeLocked(ctx, recs); err != nil {
			return err
		}
		delete(c.mu.sessions, b.ID)
		delete(c.mu.heard, b.ID)
		c.cfg.Logger.Info("unregistered broker", "broker", b.ID, "epoch", b.Epoch)
		return nil
	}()
	resp.ErrorCode, resp.ErrorMessage = wire.ErrorCodeAndMessage(err)
	return resp
}
