package connect

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupMember keeps a distributed worker in its Connect group: protocol
// type "connect" with Kafka's eager "default" protocol (ConnectProtocol
// V0: metadata = version, url, config offset; assignment = version,
// error, leader, leader url, config offset, [connector, [task ids]]).
//
// This first increment is active/passive: the leader assigns every
// connector and task to itself and runs them; the other members run
// nothing and take over when the leader leaves or its session times out.
// As the eager protocol requires, a member stops its work before it
// rejoins. Incremental cooperative rebalancing across workers is the next
// step.
type groupMember struct {
	h     *herder
	cl    *kgo.Client
	group string
	url   string

	memberID   string
	generation int32
	joined     atomic.Int32 // the generation joined last (0: none), for tests and logs
}

const (
	connectProtocolType = "connect"
	sessionTimeout      = 10 * time.Second
	heartbeatInterval   = 3 * time.Second
	rebalanceTimeout    = 60 * time.Second
)

// run keeps the member in the group until ctx ends; the worker then
// stops its tasks and calls leave.
func (g *groupMember) run(ctx context.Context) {
	for ctx.Err() == nil {
		g.h.setActive(ctx, false)
		leader, err := g.joinAndSync(ctx)
		if err != nil {
			if ctx.Err() == nil {
				g.h.logger.Warn("connect: joining the group", "group", g.group, "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		g.joined.Store(g.generation)
		g.h.logger.Info("connect: joined the group", "group", g.group, "generation", g.generation, "leader", leader)
		g.h.setActive(ctx, leader)
		g.heartbeat(ctx)
	}
}

func (g *groupMember) joinAndSync(ctx context.Context) (bool, error) {
	for {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.MemberID, join.ProtocolType = g.group, g.memberID, connectProtocolType
		join.SessionTimeoutMillis = int32(sessionTimeout.Milliseconds())
		join.RebalanceTimeoutMillis = int32(rebalanceTimeout.Milliseconds())
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "default", Metadata: g.metadata()}}
		resp, err := join.RequestWith(ctx, g.cl)
		if err != nil {
			return false, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if errors.Is(err, kerr.MemberIDRequired) {
				g.memberID = resp.MemberID
				continue
			}
			if errors.Is(err, kerr.UnknownMemberID) {
				g.memberID = ""
			}
			return false, err
		}
		g.memberID, g.generation = resp.MemberID, resp.Generation
		leader := resp.LeaderID == resp.MemberID
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.Generation, sync.MemberID = g.group, g.generation, g.memberID
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr(connectProtocolType), kmsg.StringPtr("default")
		if leader {
			for _, m := range resp.Members {
				var a []byte
				if m.MemberID == g.memberID {
					a = g.assignment(true)
				} else {
					a = g.assignment(false)
				}
				sync.GroupAssignment = append(sync.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.MemberID, MemberAssignment: a})
			}
		}
		sresp, err := sync.RequestWith(ctx, g.cl)
		if err != nil {
			return false, err
		}
		if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
			return false, err
		}
		return leader, nil
	}
}

// heartbeat returns when the member must rejoin or ctx ends.
func (g *groupMember) heartbeat(ctx context.Context) {
	for sleepCtx(ctx, heartbeatInterval); ctx.Err() == nil; sleepCtx(ctx, heartbeatInterval) {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = g.group, g.generation, g.memberID
		resp, err := hb.RequestWith(ctx, g.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			continue
		}
		if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.FencedInstanceID) {
			g.memberID = ""
		}
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

func putString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func (g *groupMember) metadata() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0) // ConnectProtocol V0
	b = putString(b, g.url)
	return binary.BigEndian.AppendUint64(b, uint64(g.h.configOffset()))
}

// assignment is a V0 assignment: all connectors and tasks for the leader,
// nothing for the others.
func (g *groupMember) assignment(all bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, 0) // no error
	b = putString(b, g.memberID)
	b = putString(b, g.url)
	b = binary.BigEndian.AppendUint64(b, uint64(g.h.configOffset()))
	if !all {
		return binary.BigEndian.AppendUint32(b, 0)
	}
	names := g.h.names()
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		d, _ := g.h.snapshot(n)
		b = putString(b, n)
		b = binary.BigEndian.AppendUint32(b, uint32(len(d.tasks)+1))
		b = binary.BigEndian.AppendUint32(b, ^uint32(0)) // -1: the connector itself
		for i := range d.tasks {
			b = binary.BigEndian.AppendUint32(b, uint32(i))
		}
	}
	return b
}
