package share

import "sort"

// combineBatches merges the state batches a share partition had with the
// new ones a write brings, as Kafka 4.4's PersisterStateBatchCombiner
// does:
//
//   - With a start offset other than -1, a batch wholly below it is
//     dropped and one that straddles it keeps only [start, last].
//   - Where batches overlap, each offset takes the state of the covering
//     batch with the highest delivery count, and among equal counts the
//     highest delivery state (archived 4 > acknowledged 2 > available 0):
//     a record's delivery count never goes back, and a terminal state
//     wins over an available one.
//   - Adjacent ranges left with the same state and count are joined.
//
// The result is sorted and has no overlaps. A lone batch (after pruning)
// is returned as it is.
func combineBatches(soFar, added []Batch, startOffset int64) []Batch {
	pruned := make([]Batch, 0, len(soFar)+len(added))
	for _, list := range [][]Batch{soFar, added} {
		for _, b := range list {
			switch {
			case startOffset != -1 && b.LastOffset < startOffset:
			case startOffset != -1 && b.FirstOffset < startOffset:
				b.FirstOffset = startOffset
				pruned = append(pruned, b)
			default:
				pruned = append(pruned, b)
			}
		}
	}
	if len(pruned) < 2 {
		return pruned
	}
	return sweep(pruned)
}

// priority orders batches where they overlap: higher delivery count
// first, then higher delivery state.
type priority struct {
	count int16
	state int8
}

func (p priority) above(q priority) bool {
	if p.count != q.count {
		return p.count > q.count
	}
	return p.state > q.state
}

// sweep walks the batches' boundaries in offset order, keeping how many
// batches of each priority cover the current offset, and emits each
// stretch between two boundaries in the top priority covering it.
func sweep(batches []Batch) []Batch {
	type event struct {
		offset int64 // a batch begins here, or ended just before
		begin  bool
		prio   priority
	}
	events := make([]event, 0, 2*len(batches))
	for _, b := range batches {
		p := priority{b.DeliveryCount, b.DeliveryState}
		events = append(events, event{b.FirstOffset, true, p}, event{b.LastOffset + 1, false, p})
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].offset != events[j].offset {
			return events[i].offset < events[j].offset
		}
		return !events[i].begin && events[j].begin // ends before begins
	})
	covering := map[priority]int{}
	var out []Batch
	var prev int64
	var top *priority
	for i := 0; i < len(events); {
		off := events[i].offset
		if top != nil && off > prev {
			out = appendCoalesced(out, prev, off-1, *top)
		}
		for ; i < len(events) && events[i].offset == off; i++ {
			e := events[i]
			if e.begin {
				covering[e.prio]++
			} else if covering[e.prio]--; covering[e.prio] == 0 {
				delete(covering, e.prio)
			}
		}
		top = nil
		for p := range covering {
			if top == nil || p.above(*top) {
				top = &p
			}
		}
		prev = off
	}
	return out
}

// appendCoalesced appends [first, last] in p, extending the last batch
// when it ends just before first in the same state and count.
func appendCoalesced(out []Batch, first, last int64, p priority) []Batch {
	if n := len(out); n > 0 {
		b := &out[n-1]
		if b.LastOffset+1 == first && b.DeliveryState == p.state && b.DeliveryCount == p.count {
			b.LastOffset = last
			return out
		}
	}
	return append(out, Batch{FirstOffset: first, LastOffset: last, DeliveryState: p.state, DeliveryCount: p.count})
}
