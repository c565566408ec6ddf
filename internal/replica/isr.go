package replica

import (
	"iter"
	"slices"
	"time"
)

// The leader's view of its followers, as Kafka's Partition keeps it:
//
//   - A follower's log end offset is the FetchOffset of its latest fetch.
//     It is "caught up" at a fetch that reaches the leader's log end offset
//     of that moment, or the one of its previous fetch (Kafka's
//     lastCaughtUpTimeMs); an ISR member not caught up within
//     replica.lag.time.max.ms is proposed for removal.
//   - The high watermark is the smallest log end offset over the maximal
//     ISR: the ISR plus the members of a change in flight, so that neither
//     a pending expansion nor a pending shrink can make it overtake a
//     replica that may end up in the ISR. It never moves back.
//   - A replica outside the ISR whose log end offset reaches the high
//     watermark and the start of the current leader epoch is proposed for
//     addition. ISR changes go to the controller through
//     Config.AlterPartition, one at a time per partition; the result (or
//     the next metadata) becomes the new state.

// followerState is what the leader knows of one follower.
type followerState struct {
	leo                int64 // -1: unknown
	lastFetchTime      time.Time
	lastFetchLeaderLEO int64
	lastCaughtUp       time.Time
}

// resetFollowersLocked starts tracking the replicas afresh (a new leader
// epoch): positions unknown, caught up as of now so that no follower is
// dropped before it had a chance to fetch.
func (p *Partition) resetFollowersLocked(now time.Time) {
	p.mu.followers = make(map[int32]*followerState)
	p.syncFollowersLocked(now)
}

// syncFollowersLocked adds the replicas it does not track yet and forgets
// those no longer assigned.
func (p *Partition) syncFollowersLocked(now time.Time) {
	self := p.mgr.cfg.NodeID
	for _, id := range p.mu.state.Replicas {
		if id != self && p.mu.followers[id] == nil {
			p.mu.followers[id] = &followerState{leo: -1, lastFetchLeaderLEO: -1, lastCaughtUp: now}
		}
	}
	for id := range p.mu.followers {
		if !slices.Contains(p.mu.state.Replicas, id) {
			delete(p.mu.followers, id)
		}
	}
}

// maximalISRLocked is the ISR plus the members of the change in flight
// (a member of both may come twice).
func (p *Partition) maximalISRLocked() iter.Seq[int32] {
	return func(yield func(int32) bool) {
		for _, ids := range [][]int32{p.mu.state.ISR, p.mu.pendingISR} {
			for _, id := range ids {
				if !yield(id) {
					return
				}
			}
		}
	}
}

// maybeIncrementHWLocked moves the high watermark up to the smallest log
// end offset of the maximal ISR and reports whether it moved. It stays
// put while the ISR is below min.insync.replicas (at most the replica
// count), as Kafka 4's does ("strict min ISR", KIP-966): a replica that
// leaves the ISR then holds every committed record, which is what lets
// the controller elect it from the ELR.
func (p *Partition) maybeIncrementHWLocked() bool {
	if !p.mu.leader || len(p.mu.state.ISR) < min(p.minISRLocked(), max(len(p.mu.state.Replicas), 1)) {
		return false
	}
	hw := p.Log().SyncedEnd()
	for id := range p.maximalISRLocked() {
		if id == p.mgr.cfg.NodeID {
			continue
		}
		f := p.mu.followers[id]
		if f == nil {
			return false // an ISR member we do not know: wait for metadata
		}
		hw = min(hw, f.leo)
	}
	if hw <= p.mu.highWatermark {
		return false
	}
	p.setHighWatermarkLocked(hw)
	return true
}

// recordFetchLocked applies a follower's fetch at now, when the leader's
// log end offset is leaderLEO (Kafka's updateFetchState), then moves the
// high watermark and proposes an expansion if the follower qualifies.
func (p *Partition) recordFetchLocked(f *followerState, id int32, fetchOffset, leaderLEO int64, now time.Time) {
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, now)
	case fetchOffset >= f.lastFetchLeaderLEO && f.lastFetchLeaderLEO >= 0:
		f.lastCaughtUp = later(f.lastCaughtUp, f.lastFetchTime)
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = leaderLEO
	f.lastFetchTime = now
	if p.maybeIncrementHWLocked() {
		p.wakeLocked()
	}
	p.maybeExpandISRLocked(id, f)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// maybeExpandISRLocked proposes adding a follower that caught up to the
// high watermark within this leader epoch.
func (p *Partition) maybeExpandISRLocked(id int32, f *followerState) {
	if p.mu.alterInFlight || slices.Contains(p.mu.state.ISR, id) {
		return
	}
	if f.leo < p.mu.highWatermark || f.leo < p.mu.epochStart {
		return
	}
	if eligible := p.mgr.cfg.ReplicaEligible; eligible != nil && !eligible(id) {
		return
	}
	p.proposeISRLocked(append(slices.Clone(p.mu.state.ISR), id))
}

// outOfSyncLocked lists the ISR followers not caught up within
// replica.lag.time.max.ms at now (Kafka's getOutOfSyncReplicas).
func (p *Partition) outOfSyncLocked(now time.Time) []int32 {
	leo := p.Log().LogEndOffset()
	var out []int32
	for _, id := range p.mu.state.ISR {
		if id == p.mgr.cfg.NodeID {
			continue
		}
		f := p.mu.followers[id]
		if f != nil && (f.leo == leo || now.Sub(f.lastCaughtUp) <= p.mgr.cfg.ReplicaLagTimeMax) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// maybeShrinkISR proposes removing the ISR followers that lag; the
// Manager's background loop calls it every replica.lag.time.max.ms / 2.
func (p *Partition) maybeShrinkISR() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leadingLocked() || p.mu.alterInFlight {
		return
	}
	out := p.outOfSyncLocked(p.now())
	if len(out) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(p.mu.state.ISR), func(id int32) bool { return slices.Contains(out, id) })
	p.logger.Info("shrinking ISR", "isr", p.mu.state.ISR, "out_of_sync", out, "high_watermark", p.mu.highWatermark)
	p.proposeISRLocked(isr)
}

// proposeISRLocked sends AlterPartition for isr in the background, unless
// there is no AlterPartition or a change is already in flight.
func (p *Partition) proposeISRLocked(isr []int32) {
	alter := p.mgr.cfg.AlterPartition
	if alter == nil || p.mu.alterInFlight {
		return
	}
	req := AlterPartitionRequest{TopicID: p.TopicID, Topic: p.Topic, Partition: p.Index,
		LeaderEpoch: p.mu.state.LeaderEpoch, PartitionEpoch: p.mu.state.PartitionEpoch, NewISR: isr}
	p.mu.alterInFlight = true
	p.mu.pendingISR = slices.Clone(isr)
	if !p.mgr.goBackground(func() { p.sendAlterPartition(req) }) {
		p.mu.alterInFlight = false
		p.mu.pendingISR = nil
	}
}

// sendAlterPartition runs AlterPartition without the partition lock and
// applies the answer: a newer state is adopted; on an error the pending
// change is dropped and the next metadata tells what happened.
func (p *Partition) sendAlterPartition(req AlterPartitionRequest) {
	st, err := p.mgr.cfg.AlterPartition(p.mgr.ctx, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.alterInFlight = false
	p.mu.pendingISR = nil
	if err != nil {
		p.logger.Warn("AlterPartition failed", "new_isr", req.NewISR, "leader.epoch", req.LeaderEpoch,
			"partition.epoch", req.PartitionEpoch, "err", err)
		return
	}
	if st.LeaderEpoch == p.mu.state.LeaderEpoch && st.PartitionEpoch > p.mu.state.PartitionEpoch {
		p.applyStateLocked(st)
	}
	// The ISR may have shrunk or the pending expansion ended: both can
	// move the high watermark.
	if p.maybeIncrementHWLocked() {
		p.wakeLocked()
	}
}
