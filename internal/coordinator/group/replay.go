package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replayLocked applies one record of the partition. It is the only way
// offsets change, both on Load and after a successful live append. Group
// metadata values are applied only while loading: live, memory is already
// at (or past) the snapshot the record holds.
func (s *shard) replayLocked(kv KV, loading bool) error {
	s.mu.seq++
	if kv.Control {
		s.completeTxnLocked(kv.ProducerID, kv.Commit)
		return nil
	}
	if kv.Transactional {
		if handled, err := s.replayTxnLocked(kv); handled {
			return err
		}
	}
	if isStreamsKey(kv.Key) {
		return s.replayStreamsLocked(kv)
	}
	if isConsumerKey(kv.Key) {
		return s.replayConsumerLocked(kv)
	}
	if isShareKey(kv.Key) {
		return s.replayShareLocked(kv)
	}
	k, ok, err := parseKey(kv.Key)
	if err != nil || !ok {
		return err
	}
	g := s.mu.groups[k.group]
	switch {
	case k.isOffset && kv.Value == nil:
		if g != nil {
			delete(g.offsets, k.tp)
		}
	case k.isOffset:
		e, err := parseOffsetValue(kv.Value)
		if err != nil {
			return fmt.Errorf("group %q offset %s-%d: %w", k.group, k.tp.topic, k.tp.partition, err)
		}
		e.seq = s.mu.seq
		if g == nil {
			// Offsets without group metadata: a simple (standalone) group.
			g = newGroup(k.group, s.c.cfg.Now())
			s.mu.groups[k.group] = g
		}
		g.offsets[k.tp] = e
	case kv.Value == nil:
		if g == nil || g.cg != nil {
			return nil // a consumer group is not removed by a classic tombstone
		}
		s.dropGroupLocked(g, kerr.CoordinatorNotAvailable.Code)
		delete(s.mu.groups, k.group)
		if len(g.offsets) > 0 {
			// Kafka keeps offsets that outlive their group's metadata.
			ng := newGroup(k.group, s.c.cfg.Now())
			ng.offsets = g.offsets
			s.mu.groups[k.group] = ng
		}
	case loading && g != nil && g.cg != nil:
		// Classic metadata never follows consumer records without a
		// tombstone in between; keep the consumer group.
	case loading:
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(kv.Value); err != nil {
			return fmt.Errorf("group %q metadata: %w", k.group, err)
		}
		ng := groupFromRecord(k.group, &v, s.c.cfg.Now())
		if g != nil {
			ng.offsets = g.offsets
		}
		s.mu.groups[k.group] = ng
	}
	return nil
}

// groupFromRecord rebuilds a group as Kafka's loader does: Empty without
// members, otherwise Stable at the stored generation with each member
// supporting only the selected protocol.
func groupFromRecord(id string, v *kmsg.GroupMetadataValue, now time.Time) *group {
	g := newGroup(id, now)
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, mv := range v.Members {
		m := &member{
			id:               mv.MemberID,
			clientID:         mv.ClientID,
			clientHost:       mv.ClientHost,
			sessionTimeout:   time.Duration(mv.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(mv.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []protocol{{name: g.protocol, metadata: mv.Subscription}},
			assignment:       mv.Assignment,
			seq:              g.nextSeq,
		}
		if v.Version < 1 || mv.RebalanceTimeoutMillis < 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.nextSeq++
		if mv.InstanceID != nil {
			m.instanceID = *mv.InstanceID
			g.static[m.instanceID] = m.id
		}
		g.members[m.id] = m
	}
	if len(g.members) > 0 {
		g.state = stateStable
	} else {
		g.leader = ""
	}
	return g
}
