package group

import (
	"slices"
)

// assignStreams is the sticky task assignor of streams groups (Kafka's
// StickyTaskAssignor, without rack awareness or warm-up tasks): every
// active task goes to exactly one member, members end up with task counts
// at most one apart, a task stays with the member that had it while that
// member is under its share, and the rest go to the least loaded member,
// preferring the least loaded process. Each task gets up to standbys
// standby replicas on members of other processes than its active one.
func assignStreams(members []*smember, all []taskID, prev map[string]taskSet, standbys int) map[string]taskSet {
	out := make(map[string]taskSet, len(members))
	if len(members) == 0 {
		return out
	}
	load := map[string]int{}
	procLoad := map[string]int{}
	byID := map[string]*smember{}
	for _, m := range members {
		out[m.id] = emptyTaskSet()
		byID[m.id] = m
	}
	quota := (len(all) + len(members) - 1) / len(members)
	prevActive := map[taskID]string{}
	prevStandby := map[taskID][]string{}
	for _, m := range members {
		p := prev[m.id]
		p.active.each(func(t taskID) { prevActive[t] = m.id })
		p.standby.each(func(t taskID) { prevStandby[t] = append(prevStandby[t], m.id) })
	}
	give := func(id string, t taskID, active bool) {
		if active {
			out[id].active.add(t)
		} else {
			out[id].standby.add(t)
		}
		load[id]++
		procLoad[byID[id].processID]++
	}
	var rest []taskID
	for _, t := range all {
		if id, ok := prevActive[t]; ok && load[id] < quota {
			give(id, t, true)
			continue
		}
		rest = append(rest, t)
	}
	leastLoaded := func(ok func(*smember) bool) *smember {
		var best *smember
		for _, m := range members {
			if !ok(m) {
				continue
			}
			if best == nil || load[m.id] < load[best.id] ||
				(load[m.id] == load[best.id] && procLoad[m.processID] < procLoad[best.processID]) {
				best = m
			}
		}
		return best
	}
	for _, t := range rest {
		give(leastLoaded(func(*smember) bool { return true }).id, t, true)
	}
	if standbys <= 0 {
		return out
	}
	activeOf := map[taskID]string{}
	for id, ts := range out {
		ts.active.each(func(t taskID) { activeOf[t] = id })
	}
	for _, t := range all {
		procs := map[string]bool{byID[activeOf[t]].processID: true}
		for range standbys {
			var pick *smember
			for _, id := range prevStandby[t] {
				if m := byID[id]; m != nil && !procs[m.processID] {
					pick = m
					break
				}
			}
			if pick == nil {
				pick = leastLoaded(func(m *smember) bool { return !procs[m.processID] })
			}
			if pick == nil {
				break
			}
			procs[pick.processID] = true
			give(pick.id, t, false)
			prevStandby[t] = slices.DeleteFunc(prevStandby[t], func(id string) bool { return id == pick.id })
		}
	}
	return out
}
