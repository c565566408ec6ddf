package group

import (
	"slices"
	"time"
)

// This file holds the in-memory state of KIP-932 share groups and the
// replay that is the only way it changes (Kafka's ShareGroup and the
// share half of GroupCoordinatorShard.replay).

// shareGroup is one share group. Fields are guarded by shard.mu.
type shareGroup struct {
	id              string
	epoch           int32
	assignmentEpoch int32
	members         map[string]*shareMember
	target          map[string]assignment
	initialized     initTopics // partitions with share state (StatePartitionMetadata)
	stateTime       time.Time
}

// shareMember is one member of a share group.
type shareMember struct {
	id string
	shareMeta
	shareCur

	sessionTimer *time.Timer
	sessionSeq   uint64 // invalidates a timer that fired while being replaced
}

func newShareGroup(id string, now time.Time) *shareGroup {
	return &shareGroup{id: id, members: map[string]*shareMember{}, target: map[string]assignment{}, stateTime: now}
}

// state is the name Kafka reports for a share group (ShareGroupState).
func (g *shareGroup) state() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (g *shareGroup) sortedMembers() []*shareMember {
	ms := make([]*shareMember, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *shareMember) int { return compareStrings(a.id, b.id) })
	return ms
}

func (g *shareGroup) stopTimers() {
	for _, m := range g.members {
		stopTimer(m.sessionTimer)
		m.sessionSeq++
	}
}

func (s *shard) replayShareLocked(kv KV) error {
	r, err := decodeShareRecord(kv)
	if err != nil {
		return err
	}
	s.applyShareLocked(r)
	return nil
}

func (s *shard) applyAllShareLocked(recs []*shareRecord) {
	for _, r := range recs {
		s.applyShareLocked(r)
	}
}

// applyShareLocked applies one share-group record.
func (s *shard) applyShareLocked(r *shareRecord) {
	if r.typ == sgPartitionMetadataType {
		return
	}
	if s.mu.shares == nil {
		s.mu.shares = map[string]*shareGroup{}
	}
	g := s.mu.shares[r.group]
	if g == nil {
		if r.del {
			return
		}
		g = newShareGroup(r.group, s.c.cfg.Now())
		s.mu.shares[r.group] = g
	}
	member := func() *shareMember {
		m := g.members[r.member]
		if m == nil {
			m = &shareMember{id: r.member}
			g.members[r.member] = m
		}
		return m
	}
	switch r.typ {
	case shareMetadataType:
		if r.del {
			g.stopTimers()
			delete(s.mu.shares, r.group)
			return
		}
		g.epoch = r.epoch
	case sgStatePartitionMetadataType:
		g.initialized = r.init // nil for a tombstone
	case shareTargetMetadataType:
		if !r.del {
			g.assignmentEpoch = r.epoch
		}
	case shareMemberMetadataType:
		if r.del {
			if m := g.members[r.member]; m != nil {
				stopTimer(m.sessionTimer)
				m.sessionSeq++
			}
			delete(g.members, r.member)
			if len(g.members) == 0 {
				g.stateTime = s.c.cfg.Now()
			}
			return
		}
		member().shareMeta = *r.meta
	case shareTargetMemberType:
		if r.del {
			delete(g.target, r.member)
			return
		}
		g.target[r.member] = r.target
	case shareCurrentMemberType:
		if r.del {
			if m := g.members[r.member]; m != nil {
				m.shareCur = shareCur{}
			}
			return
		}
		member().shareCur = *r.cur
	}
}

// ShareConfig configures share groups; zero fields take Kafka's defaults.
type ShareConfig struct {
	// SessionTimeout is group.share.session.timeout.ms (45 s).
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms (5 s).
	HeartbeatInterval time.Duration
	// MaxGroupSize is group.share.max.size (200).
	MaxGroupSize int
}

func (c ShareConfig) withDefaults() ShareConfig {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.MaxGroupSize == 0 {
		c.MaxGroupSize = 200
	}
	return c
}
