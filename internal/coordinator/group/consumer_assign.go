package group

import (
	"hash/fnv"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"
)

// This file computes target assignments: topic resolution (names and
// regexes), the subscription metadata hash, and the two server-side
// assignors, "uniform" and "range".

// TopicInfo is what the coordinator needs to know of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// topicView is one consistent look at the cluster's topics for a decision.
type topicView struct {
	byName map[string]TopicInfo // nil: Config.Topics is unset, probe instead
	c      *Coordinator
	byID   map[[16]byte]string
}

func (c *Coordinator) topics() *topicView {
	v := &topicView{c: c}
	if c.cfg.Topics != nil {
		v.byName = c.cfg.Topics()
		if v.byName == nil {
			v.byName = map[string]TopicInfo{}
		}
	}
	return v
}

func (v *topicView) lookup(name string) (TopicInfo, bool) {
	if v.byName != nil {
		t, ok := v.byName[name]
		return t, ok && t.Partitions > 0
	}
	// Without a topic listing, name subscriptions still work through the
	// per-topic lookups the offset APIs use.
	if v.c.cfg.TopicID == nil || v.c.cfg.PartitionExists == nil {
		return TopicInfo{}, false
	}
	id, ok := v.c.cfg.TopicID(name)
	if !ok {
		return TopicInfo{}, false
	}
	var n int32
	for v.c.cfg.PartitionExists(name, n) {
		n++
	}
	return TopicInfo{ID: id, Partitions: n}, n > 0
}

func (v *topicView) nameOf(id [16]byte) (string, bool) {
	if v.byName == nil {
		if v.c.cfg.TopicName == nil {
			return "", false
		}
		return v.c.cfg.TopicName(id)
	}
	if v.byID == nil {
		v.byID = make(map[[16]byte]string, len(v.byName))
		for n, t := range v.byName {
			v.byID[t.ID] = n
		}
	}
	n, ok := v.byID[id]
	return n, ok
}

// compileRegex compiles a SubscribedTopicRegex with Kafka's semantics: the
// whole topic name must match (RE2J's Matcher.matches). Go's regexp is RE2,
// the syntax RE2J implements. Like Kafka's coordinator
// (GroupMetadataManager.refreshRegularExpressions scans every topic of the
// image), a regex matches internal topics too: excluding them is the
// client's business (the Java client's exclude.internal.topics applies to
// its own classic regex subscriptions only).
func compileRegex(re string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + re + ")$")
}

// subscribedNames resolves m's subscription to the existing topics it
// covers, sorted.
func (v *topicView) subscribedNames(m *memberMeta) []string {
	set := map[string]bool{}
	for _, t := range m.topics {
		if _, ok := v.lookup(t); ok {
			set[t] = true
		}
	}
	if m.regex != "" && v.byName != nil {
		if re, err := compileRegex(m.regex); err == nil {
			for n, t := range v.byName {
				if t.Partitions > 0 && re.MatchString(n) {
					set[n] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// metadataHash summarizes the topics a group subscribes to (names, ids and
// partition counts). Any change, such as added partitions or a deleted and
// recreated topic, changes it and so bumps the group epoch. Kafka 4.1
// stores such a hash (KIP-1101); ours is FNV-64a, so only Samsa compares it.
func (v *topicView) metadataHash(members []*memberMeta) int64 {
	set := map[string]bool{}
	for _, m := range members {
		for _, n := range v.subscribedNames(m) {
			set[n] = true
		}
	}
	if len(set) == 0 {
		return 0
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	h := fnv.New64a()
	var buf []byte
	for _, n := range names {
		t, _ := v.lookup(n)
		buf = kbin.AppendString(buf[:0], n)
		buf = kbin.AppendUuid(buf, t.ID)
		buf = kbin.AppendInt32(buf, t.Partitions)
		h.Write(buf)
	}
	return int64(h.Sum64())
}

// topicRef is a resolved subscribed topic.
type topicRef struct {
	name       string
	id         [16]byte
	partitions int32
}

// assignFunc computes a target assignment. members is sorted by id; subs
// holds each member's resolved topics; prev is the current target, for
// stickiness. Every member gets an entry, possibly empty.
type assignFunc func(members []string, subs map[string][]topicRef, prev map[string]assignment) map[string]assignment

// assignors are the server-side assignors Samsa implements, by the names
// clients send in ServerAssignor.
var assignors = map[string]assignFunc{
	"uniform": assignUniform,
	"range":   assignRange,
}

// assignUniform is a balanced, sticky assignment in the spirit of Kafka's
// UniformAssignor: every partition of a subscribed topic goes to one
// subscriber; partitions stay with their current target owner where the
// balance allows; no member can take a partition from another and end up
// with fewer than the other minus one. With identical subscriptions that
// means partition counts differ by at most one.
func assignUniform(members []string, subs map[string][]topicRef, prev map[string]assignment) map[string]assignment {
	subscribers := map[[16]byte][]string{} // in member order
	var all []tpid
	seen := map[[16]byte]bool{}
	var refs []topicRef
	for _, m := range members {
		for _, t := range subs[m] {
			subscribers[t.id] = append(subscribers[t.id], m)
			if !seen[t.id] {
				seen[t.id] = true
				refs = append(refs, t)
			}
		}
	}
	slices.SortFunc(refs, func(a, b topicRef) int { return strings.Compare(a.name, b.name) })
	for _, t := range refs {
		for p := range t.partitions {
			all = append(all, tpid{t.id, p})
		}
	}
	isSub := func(m string, id [16]byte) bool { return slices.Contains(subscribers[id], m) }

	owner := map[tpid]string{}
	count := map[string]int{}
	owned := map[string][]tpid{}
	give := func(m string, t tpid) {
		owner[t] = m
		count[m]++
		owned[m] = append(owned[m], t)
	}
	// 1. Stickiness: keep every still-valid partition of the current target.
	for _, m := range members {
		for _, id := range prev[m].topicIDs() {
			for _, p := range prev[m][id] {
				t := tpid{id, p}
				if _, taken := owner[t]; !taken && seen[id] && p < partitionsOf(refs, id) && isSub(m, id) {
					give(m, t)
				}
			}
		}
	}
	// 2. Unowned partitions go to their least loaded subscriber.
	for _, t := range all {
		if _, ok := owner[t]; ok {
			continue
		}
		best := ""
		for _, m := range subscribers[t.id] {
			if best == "" || count[m] < count[best] {
				best = m
			}
		}
		give(best, t)
	}
	// 3. Balance: move partitions from a member to a subscriber holding at
	// least two fewer until no such move exists. Each move lowers the sum
	// of squared counts, so this ends.
	for moved := true; moved; {
		moved = false
		order := slices.Clone(members)
		slices.SortStableFunc(order, func(a, b string) int { return count[b] - count[a] })
		for _, from := range order {
			ts := owned[from]
			for i := len(ts) - 1; i >= 0; i-- { // give away the newest first
				t := ts[i]
				to := ""
				for _, m := range subscribers[t.id] {
					if m != from && (to == "" || count[m] < count[to]) {
						to = m
					}
				}
				if to == "" || count[to] >= count[from]-1 {
					continue
				}
				owned[from] = slices.Delete(owned[from], i, i+1)
				count[from]--
				give(to, t)
				moved = true
			}
			if moved {
				break
			}
		}
	}
	return toAssignments(members, owned)
}

func partitionsOf(refs []topicRef, id [16]byte) int32 {
	for _, t := range refs {
		if t.id == id {
			return t.partitions
		}
	}
	return 0
}

// assignRange is Kafka's range assignment per topic: the topic's
// subscribers, sorted by member id, get contiguous ranges; the first
// (partitions mod subscribers) of them get one partition more.
func assignRange(members []string, subs map[string][]topicRef, _ map[string]assignment) map[string]assignment {
	subscribers := map[[16]byte][]string{}
	var refs []topicRef
	for _, m := range members {
		for _, t := range subs[m] {
			if subscribers[t.id] == nil {
				refs = append(refs, t)
			}
			subscribers[t.id] = append(subscribers[t.id], m)
		}
	}
	owned := map[string][]tpid{}
	for _, t := range refs {
		ms := subscribers[t.id]
		per, extra := int(t.partitions)/len(ms), int(t.partitions)%len(ms)
		p := int32(0)
		for i, m := range ms {
			n := per
			if i < extra {
				n++
			}
			for range n {
				owned[m] = append(owned[m], tpid{t.id, p})
				p++
			}
		}
	}
	return toAssignments(members, owned)
}

func toAssignments(members []string, owned map[string][]tpid) map[string]assignment {
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		a := assignment{}
		for _, t := range owned[m] {
			a[t.id] = append(a[t.id], t.p)
		}
		for id := range a {
			slices.Sort(a[id])
		}
		out[m] = a
	}
	return out
}

// preferredAssignor is Kafka's ConsumerGroup.computePreferredServerAssignor:
// the assignor most members asked for, else the default (the first
// configured). Ties go to the earlier configured assignor.
func (c *Coordinator) preferredAssignor(members []*cmember) string {
	votes := map[string]int{}
	for _, m := range members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := c.cfg.ConsumerAssignors[0]
	for _, a := range c.cfg.ConsumerAssignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

// computeTarget runs the group's assignor over members (sorted by id).
func (c *Coordinator) computeTarget(v *topicView, members []*cmember, prev map[string]assignment) map[string]assignment {
	ids := make([]string, len(members))
	subs := make(map[string][]topicRef, len(members))
	for i, m := range members {
		ids[i] = m.id
		for _, n := range v.subscribedNames(&m.memberMeta) {
			t, _ := v.lookup(n)
			subs[m.id] = append(subs[m.id], topicRef{name: n, id: t.ID, partitions: t.Partitions})
		}
	}
	return assignors[c.preferredAssignor(members)](ids, subs, prev)
}
