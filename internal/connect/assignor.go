package connect

import (
	"cmp"
	"slices"
	"time"
)

// assignor is the group leader's incremental cooperative assignor (the
// idea of Kafka's IncrementalCooperativeAssignor, KIP-415): members keep
// running what they hold across rebalances; a round only revokes (units
// deleted, held twice, or taken away to balance the load) or assigns
// (units nobody holds), never both for one unit, so no unit ever runs on
// two workers. Units held by a worker that left are "lost": they stay
// unassigned for up to scheduled.rebalance.max.delay.ms, so a worker that
// restarts quickly finds its work again, and are then spread over the
// workers present.
//
// The assignor lives in the leader's member goroutine; it remembers the
// previous round. A new leader starts without memory and assigns what
// nobody holds at once.
type assignor struct {
	maxDelay time.Duration
	now      func() time.Time

	previous map[unit]string // the units of the previous round and their owners
	deadline time.Time       // when lost units get reassigned; zero: none lost
}

// member is one worker as the leader sees it in a round.
type member struct {
	id   string
	meta workerMeta
}

// plan is a round's decision for one member.
type plan struct{ assigned, revoked assignment }

// assign decides a round: configured are the units of the config log.
// It returns each member's plan and how long until lost units are
// reassigned (0: none are waiting).
func (a *assignor) assign(members []member, configured assignment) (map[string]*plan, time.Duration) {
	slices.SortFunc(members, func(x, y member) int { return cmp.Compare(x.id, y.id) })
	plans := map[string]*plan{}
	holder := map[unit]string{}
	revokedAny := false
	for _, m := range members {
		p := &plan{assigned: assignment{}, revoked: assignment{}}
		plans[m.id] = p
		for _, u := range sortedUnits(m.meta.held) {
			if !configured[u] || holder[u] != "" {
				p.revoked[u] = true // deleted, or already run by another member
				revokedAny = true
				continue
			}
			holder[u] = m.id
		}
	}

	// Lost units: the previous round gave them out, nobody holds them now.
	lost := assignment{}
	for u := range a.previous {
		if configured[u] && holder[u] == "" {
			lost[u] = true
		}
	}
	var delay time.Duration
	waiting := assignment{}
	switch {
	case len(lost) == 0 || a.maxDelay <= 0:
		a.deadline = time.Time{}
	case a.deadline.IsZero():
		a.deadline = a.now().Add(a.maxDelay)
		waiting, delay = lost, a.maxDelay
	case a.now().Before(a.deadline):
		waiting, delay = lost, a.deadline.Sub(a.now())
	default:
		a.deadline = time.Time{} // the delay is over: spread them below
	}

	load := func(id string, connectors bool) int {
		n := 0
		for u, h := range holder {
			if h == id && (u.task == connectorTaskID) == connectors {
				n++
			}
		}
		return n
	}
	for _, u := range sortedUnits(configured) {
		if holder[u] != "" || waiting[u] || len(members) == 0 {
			continue
		}
		connectors := u.task == connectorTaskID
		best := members[0].id
		for _, m := range members[1:] {
			if load(m.id, connectors) < load(best, connectors) {
				best = m.id
			}
		}
		holder[u] = best
		plans[best].assigned[u] = true
	}

	// Balance only in a quiet round: nothing revoked already and nothing
	// waiting for a lost worker to come back.
	if !revokedAny && len(waiting) == 0 && len(members) > 1 {
		for _, connectors := range []bool{true, false} {
			a.balance(members, holder, plans, connectors, load)
		}
	}

	a.previous = map[unit]string{}
	for u, h := range holder {
		a.previous[u] = h
	}
	for u := range waiting {
		a.previous[u] = "" // still lost next round
	}
	return plans, delay
}

// balance revokes units held (not just assigned) by members above their
// share; the next round gives them to the others.
func (a *assignor) balance(members []member, holder map[unit]string, plans map[string]*plan, connectors bool, load func(string, bool) int) {
	total := 0
	for u := range holder {
		if (u.task == connectorTaskID) == connectors {
			total++
		}
	}
	order := slices.Clone(members)
	slices.SortStableFunc(order, func(x, y member) int { return load(y.id, connectors) - load(x.id, connectors) })
	n := len(order)
	for i, m := range order {
		target := total / n
		if i < total%n {
			target++
		}
		excess := load(m.id, connectors) - target
		if excess <= 0 {
			continue
		}
		for _, u := range sortedUnits(m.meta.held) {
			if excess == 0 {
				break
			}
			if holder[u] == m.id && (u.task == connectorTaskID) == connectors {
				plans[m.id].revoked[u] = true
				delete(holder, u)
				excess--
			}
		}
	}
}

func sortedUnits(a assignment) []unit {
	out := make([]unit, 0, len(a))
	for u := range a {
		out = append(out, u)
	}
	slices.SortFunc(out, func(x, y unit) int {
		if c := cmp.Compare(x.conn, y.conn); c != 0 {
			return c
		}
		return cmp.Compare(x.task, y.task)
	})
	return out
}
