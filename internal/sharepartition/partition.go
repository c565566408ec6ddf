package sharepartition

import (
	"slices"
	"sync"
	"time"

	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
)

// recordState is Kafka's RecordState; the persisted delivery states are
// its ids (ACQUIRED is persisted as AVAILABLE).
type recordState int8

const (
	stAvailable    recordState = 0
	stAcquired     recordState = 1
	stAcknowledged recordState = 2
	stArchived     recordState = 4
)

// Acknowledge types of ShareFetch and ShareAcknowledge.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// inflight is one record of the window.
type inflight struct {
	state      recordState
	deliveries int16
	member     string    // holder while acquired
	deadline   time.Time // lock expiry while acquired
}

// Key names a share partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// partition is one share partition. mu guards the window; writeMu
// serializes writes of its state to the persister, in the order the
// changes were made.
type partition struct {
	key     Key
	writeMu sync.Mutex
	mu      struct {
		sync.Mutex
		loaded     bool
		stateEpoch int32
		start      int64      // SPSO
		recs       []inflight // recs[i] is offset start+i; start+len(recs) is the next offset to read
		dirty      bool       // changed since the last state written
	}
}

func (p *partition) endLocked() int64 { return p.mu.start + int64(len(p.mu.recs)) }

// expireLocked releases every lock past its deadline and returns the
// earliest deadline still ahead (zero if none).
func (p *partition) expireLocked(now time.Time, limit int16) (next time.Time, changed bool) {
	for i := range p.mu.recs {
		r := &p.mu.recs[i]
		if r.state != stAcquired {
			continue
		}
		if !now.Before(r.deadline) {
			p.releaseLocked(r, limit)
			changed = true
			continue
		}
		if next.IsZero() || r.deadline.Before(next) {
			next = r.deadline
		}
	}
	if changed {
		p.advanceLocked()
	}
	return next, changed
}

// releaseLocked makes an acquired record available again, or archives it
// when its delivery count reached the limit.
func (p *partition) releaseLocked(r *inflight, limit int16) {
	r.member, r.deadline = "", time.Time{}
	r.state = stAvailable
	if r.deliveries >= limit {
		r.state = stArchived
	}
	p.mu.dirty = true
}

// advanceLocked moves the SPSO past acknowledged and archived records.
func (p *partition) advanceLocked() {
	n := 0
	for n < len(p.mu.recs) && (p.mu.recs[n].state == stAcknowledged || p.mu.recs[n].state == stArchived) {
		n++
	}
	if n > 0 {
		p.mu.recs = slices.Delete(p.mu.recs, 0, n)
		p.mu.start += int64(n)
		p.mu.dirty = true
	}
}

// Range is a run of acquired offsets with one delivery count.
type Range struct {
	First, Last int64
	Deliveries  int16
}

// acquireLocked acquires up to max available records of the window for
// member, oldest first.
func (p *partition) acquireLocked(member string, max int, deadline time.Time) []Range {
	var out []Range
	for i := range p.mu.recs {
		if max <= 0 {
			break
		}
		r := &p.mu.recs[i]
		if r.state != stAvailable {
			continue
		}
		r.state, r.member, r.deadline = stAcquired, member, deadline
		r.deliveries++
		max--
		out = appendRange(out, p.mu.start+int64(i), r.deliveries)
	}
	return out
}

func appendRange(out []Range, off int64, deliveries int16) []Range {
	if n := len(out); n > 0 && out[n-1].Last+1 == off && out[n-1].Deliveries == deliveries {
		out[n-1].Last = off
		return out
	}
	return append(out, Range{First: off, Last: off, Deliveries: deliveries})
}

// extendLocked adds the records of batches (read from the log at the
// window's end) to the window as available; control records and the
// records of aborted transactions are archived, and offsets missing
// between batches (compacted away) too. It stops at room records.
func (p *partition) extendLocked(batches []byte, aborted []replica.AbortedTxn, room int) {
	slices.SortFunc(aborted, func(a, b replica.AbortedTxn) int { return int(a.FirstOffset - b.FirstOffset) })
	open := map[int64]bool{} // producers inside an aborted transaction
	for rest := batches; len(rest) >= record.HeaderSize && room > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil || h.Size() > len(rest) {
			return
		}
		rest = rest[h.Size():]
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			open[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		skip := h.Control() || (h.Transactional() && open[h.ProducerID])
		if h.Control() && open[h.ProducerID] {
			delete(open, h.ProducerID)
		}
		end := p.endLocked()
		if h.LastOffset() < end {
			continue // a batch the window already holds
		}
		for off := end; off < h.BaseOffset && room > 0; off++ {
			p.mu.recs = append(p.mu.recs, inflight{state: stArchived})
			room--
		}
		for off := max(end, h.BaseOffset); off <= h.LastOffset() && room > 0; off++ {
			st := stAvailable
			if skip {
				st = stArchived
			}
			p.mu.recs = append(p.mu.recs, inflight{state: st})
			room--
		}
	}
}

// ackLocked applies one acknowledgement batch of member: types has one
// type for the whole range or one per offset. It reports false, changing
// nothing, when a record in the range is not acquired by member
// (INVALID_RECORD_STATE).
func (p *partition) ackLocked(member string, first, last int64, types []int8, limit int16, lockFor time.Duration, now time.Time) bool {
	if first > last || len(types) == 0 || (len(types) != 1 && int64(len(types)) != last-first+1) {
		return false
	}
	typeAt := func(off int64) int8 {
		if len(types) == 1 {
			return types[0]
		}
		return types[off-first]
	}
	for off := first; off <= last; off++ {
		i := off - p.mu.start
		if i < 0 || i >= int64(len(p.mu.recs)) {
			return false
		}
		r := p.mu.recs[i]
		if t := typeAt(off); t < AckGap || t > AckRenew || r.state != stAcquired || r.member != member {
			return false
		}
	}
	for off := first; off <= last; off++ {
		r := &p.mu.recs[off-p.mu.start]
		switch typeAt(off) {
		case AckAccept:
			r.state = stAcknowledged
		case AckGap, AckReject:
			r.state = stArchived
		case AckRelease:
			p.releaseLocked(r, limit)
			continue
		case AckRenew:
			r.deadline = now.Add(lockFor)
			continue
		}
		r.member, r.deadline = "", time.Time{}
		p.mu.dirty = true
	}
	p.advanceLocked()
	return true
}

// releaseMemberLocked releases every record member holds (its share
// session closed).
func (p *partition) releaseMemberLocked(member string, limit int16) bool {
	changed := false
	for i := range p.mu.recs {
		if r := &p.mu.recs[i]; r.state == stAcquired && r.member == member {
			// A released lock does not count against the limit twice:
			// the delivery was counted when it was acquired.
			p.releaseLocked(r, limit)
			changed = true
		}
	}
	if changed {
		p.advanceLocked()
	}
	return changed
}

// stateBatch is one persisted run of records.
type stateBatch struct {
	first, last int64
	state       recordState
	deliveries  int16
}

// batchesLocked is the window as persisted: runs of equal state and
// delivery count, acquired records as available.
func (p *partition) batchesLocked() []stateBatch {
	var out []stateBatch
	for i, r := range p.mu.recs {
		st := r.state
		if st == stAcquired {
			st = stAvailable
		}
		off := p.mu.start + int64(i)
		if n := len(out); n > 0 && out[n-1].state == st && out[n-1].deliveries == r.deliveries && out[n-1].last+1 == off {
			out[n-1].last = off
			continue
		}
		out = append(out, stateBatch{first: off, last: off, state: st, deliveries: r.deliveries})
	}
	return out
}

// hasAvailableLocked reports whether a fetch could acquire a record of
// the window now.
func (p *partition) hasAvailableLocked() bool {
	for _, r := range p.mu.recs {
		if r.state == stAvailable {
			return true
		}
	}
	return false
}
