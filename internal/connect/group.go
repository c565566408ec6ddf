package connect

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupMember keeps a distributed worker in its Connect group: protocol
// type "connect", protocol "compatible" (Kafka's incremental cooperative
// rebalancing, ConnectProtocol V1; see protocol.go for the bytes and
// assignor.go for how the leader decides).
//
// A member keeps running what it holds while the group rebalances. An
// assignment revokes some units (the member stops them and rejoins at
// once, so the leader can hand them on) and adds others (started at
// once). When lost units wait for scheduled.rebalance.max.delay.ms the
// assignment carries the delay and members rejoin when it is over. A
// member that learns it was removed from the group (unknown member id,
// illegal generation) stops everything before it joins again, so the
// units it ran can be given to others.
//
// The leader rebalances when the config log adds or removes connectors or
// changes task counts.
type groupMember struct {
	h     *herder
	cl    *kgo.Client
	cfg   *WorkerConfig
	group string
	url   string

	memberID   string
	generation int32
	held       assignment // what this worker runs; only run touches it
	assignor   assignor
	joined     atomic.Int32 // the generation joined last (0: none), for tests and logs

	view struct {
		sync.Mutex
		leader    bool
		leaderURL string
		owners    map[unit]string // leader only: each unit's worker URL
	}
}

const connectProtocolType = "connect"

func newGroupMember(h *herder, cl *kgo.Client, cfg *WorkerConfig) *groupMember {
	return &groupMember{h: h, cl: cl, cfg: cfg, group: cfg.GroupID, url: cfg.AdvertisedURL,
		held: assignment{}, assignor: assignor{maxDelay: cfg.ScheduledRebalanceMaxDelay, now: time.Now}}
}

// leaderURL is the URL of the group leader's REST API ("" while none is
// known), and whether this worker is the leader.
func (g *groupMember) leaderURL() (string, bool) {
	g.view.Lock()
	defer g.view.Unlock()
	return g.view.leaderURL, g.view.leader
}

// ownerURL is, on the leader, the URL of the worker that runs u.
func (g *groupMember) ownerURL(u unit) string {
	g.view.Lock()
	defer g.view.Unlock()
	return g.view.owners[u]
}

// run keeps the member in the group until ctx ends; the worker then
// stops its tasks and calls leave.
func (g *groupMember) run(ctx context.Context) {
	for ctx.Err() == nil {
		a, err := g.joinAndSync(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, kerr.RebalanceInProgress) {
				g.h.logger.Warn("connect: joining the group", "group", g.group, "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		g.joined.Store(g.generation)
		g.h.logger.Info("connect: joined the group", "group", g.group, "generation", g.generation,
			"leader_url", a.leaderURL, "assigned", len(a.assigned), "revoked", len(a.revoked), "delay_ms", a.delay)
		if len(a.revoked) > 0 {
			for u := range a.revoked {
				delete(g.held, u)
			}
			g.h.setAssignment(ctx, false, g.held)
			continue // rejoin at once: the leader gives the revoked units on
		}
		for u := range a.assigned {
			g.held[u] = true
		}
		g.h.setAssignment(ctx, false, g.held)
		var rejoinAt <-chan time.Time
		if a.delay > 0 {
			t := time.NewTimer(time.Duration(a.delay) * time.Millisecond)
			rejoinAt = t.C
			g.heartbeat(ctx, rejoinAt)
			t.Stop()
		} else {
			g.heartbeat(ctx, nil)
		}
	}
}

// dropAll stops everything: the group no longer knows this member, so its
// units may already run elsewhere.
func (g *groupMember) dropAll(ctx context.Context) {
	if len(g.held) > 0 {
		g.h.logger.Warn("connect: left the group; stopping every connector and task", "group", g.group)
	}
	g.held = assignment{}
	g.h.setAssignment(ctx, false, g.held)
	g.view.Lock()
	g.view.leader, g.view.leaderURL, g.view.owners = false, "", nil
	g.view.Unlock()
}

// forget handles errors saying the group no longer knows this member.
func (g *groupMember) forget(ctx context.Context, err error) {
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.FencedInstanceID) {
		g.memberID = ""
		g.dropAll(ctx)
	}
}

func (g *groupMember) joinAndSync(ctx context.Context) (connectAssignment, error) {
	for {
		// Changes seen until now are in this round's metadata.
		select {
		case <-g.h.unitsChanged:
		default:
		}
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.MemberID, join.ProtocolType = g.group, g.memberID, connectProtocolType
		join.SessionTimeoutMillis = int32(g.cfg.SessionTimeout.Milliseconds())
		join.RebalanceTimeoutMillis = int32(g.cfg.RebalanceTimeout.Milliseconds())
		meta := workerMeta{url: g.url, configOffset: g.h.configOffset(), held: g.held}
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "compatible", Metadata: encodeMetadata(meta)}}
		resp, err := join.RequestWith(ctx, g.cl)
		if err != nil {
			return connectAssignment{}, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if errors.Is(err, kerr.MemberIDRequired) {
				g.memberID = resp.MemberID
				continue
			}
			g.forget(ctx, err)
			return connectAssignment{}, err
		}
		g.memberID, g.generation = resp.MemberID, resp.Generation
		leader := resp.LeaderID == resp.MemberID
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.Generation, sync.MemberID = g.group, g.generation, g.memberID
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr(connectProtocolType), resp.Protocol
		if leader {
			sync.GroupAssignment = g.lead(ctx, resp.Members)
		}
		sresp, err := sync.RequestWith(ctx, g.cl)
		if err != nil {
			return connectAssignment{}, err
		}
		if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
			g.forget(ctx, err)
			return connectAssignment{}, err
		}
		a, err := decodeAssignment(sresp.MemberAssignment)
		if err != nil {
			return connectAssignment{}, err
		}
		g.view.Lock()
		g.view.leader, g.view.leaderURL = leader, a.leaderURL
		if !leader {
			g.view.owners = nil
		}
		g.view.Unlock()
		return a, nil
	}
}

// lead runs the assignor over the members' metadata.
func (g *groupMember) lead(ctx context.Context, joined []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	var members []member
	var maxOffset int64 = -1
	for _, m := range joined {
		meta, err := decodeMetadata(m.ProtocolMetadata)
		if err != nil {
			g.h.logger.Warn("connect: unreadable member metadata", "member", m.MemberID, "err", err)
		}
		members = append(members, member{id: m.MemberID, meta: meta})
		maxOffset = max(maxOffset, meta.configOffset)
	}
	// Assign from a config log at least as new as any member's.
	waitCtx, cancel := context.WithTimeout(ctx, g.cfg.RebalanceTimeout/2)
	for g.h.configOffset() < maxOffset && waitCtx.Err() == nil {
		sleepCtx(waitCtx, 20*time.Millisecond)
	}
	cancel()
	plans, delay := g.assignor.assign(members, g.h.units())

	owners := map[unit]string{}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for _, m := range members {
		p := plans[m.id]
		for u := range m.meta.held {
			if !p.revoked[u] {
				owners[u] = m.meta.url
			}
		}
		for u := range p.assigned {
			owners[u] = m.meta.url
		}
		a := connectAssignment{leader: g.memberID, leaderURL: g.url, configOffset: g.h.configOffset(),
			assigned: p.assigned, revoked: p.revoked, delay: int32(delay.Milliseconds())}
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.id, MemberAssignment: a.encode()})
	}
	g.view.Lock()
	g.view.owners = maps.Clone(owners)
	g.view.Unlock()
	return out
}

// heartbeat returns when the member must rejoin: the group rebalances,
// the member was removed, rejoinAt fires (a scheduled rebalance), the
// leader saw the configured units change, or ctx ends.
func (g *groupMember) heartbeat(ctx context.Context, rejoinAt <-chan time.Time) {
	tick := time.NewTicker(g.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-rejoinAt:
			return
		case <-g.h.unitsChanged:
			if _, leader := g.leaderURL(); leader {
				return
			}
			continue
		case <-tick.C:
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = g.group, g.generation, g.memberID
		resp, err := hb.RequestWith(ctx, g.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			continue
		}
		g.forget(ctx, err)
		if ctx.Err() == nil && !errors.Is(err, kerr.RebalanceInProgress) {
			g.h.logger.Warn("connect: heartbeat", "group", g.group, "err", err)
		}
		return
	}
}

func (g *groupMember) leave() {
	if g.memberID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = g.group, g.memberID
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: g.memberID}}
	req.RequestWith(ctx, g.cl)
}
