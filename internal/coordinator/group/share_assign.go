package group

import (
	"maps"
	"slices"
)

// assignShareSimple is the share groups' "simple" assignor (Kafka's
// SimpleAssignor as of KIP-932's release): every partition of a subscribed
// topic goes to at least one of its subscribers, and the load is spread
// evenly. With fewer subscribers than partitions each partition has one
// member, round robin; with more, partitions are shared: subscriber j
// takes partition j mod n. Members are taken in id order and topics by
// name so that the result depends only on the group. Unknown topics are
// skipped until they exist. It returns a target for every member (empty
// when it gets nothing). When only is not nil, only its partitions of a
// topic are assigned (those with share state).
func assignShareSimple(v *topicView, members []*shareMember, only initTopics) map[string]assignment {
	out := make(map[string]map[[16]byte][]int32, len(members))
	for _, m := range members {
		out[m.id] = map[[16]byte][]int32{}
	}
	subs := map[string][]string{} // topic -> subscribed member ids
	for _, m := range members {
		for _, t := range m.topics {
			subs[t] = append(subs[t], m.id)
		}
	}
	next := 0 // rotates the first member per topic, to balance across topics
	for _, name := range slices.Sorted(maps.Keys(subs)) {
		info, ok := v.lookup(name)
		if !ok {
			continue
		}
		ids := subs[name]
		slices.SortFunc(ids, compareStrings)
		var parts []int32
		for p := range info.Partitions {
			if only == nil || slices.Contains(only[info.ID].partitions, p) {
				parts = append(parts, p)
			}
		}
		n := len(parts)
		if n == 0 {
			continue
		}
		if len(ids) <= n {
			for i, p := range parts {
				id := ids[(i+next)%len(ids)]
				out[id][info.ID] = append(out[id][info.ID], p)
			}
			next += n
		} else {
			for j, id := range ids {
				out[id][info.ID] = append(out[id][info.ID], parts[(j+next)%n])
			}
			next += len(ids)
		}
	}
	res := make(map[string]assignment, len(out))
	for id, a := range out {
		as := assignment{}
		for t, ps := range a {
			slices.Sort(ps)
			as[t] = ps
		}
		res[id] = as
	}
	return res
}
