package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a classic group's state (Kafka's ClassicGroupState).
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String is the name Kafka reports in DescribeGroups and ListGroups.
func (s state) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

const consumerProtocolType = "consumer"

type protocol struct {
	name     string
	metadata []byte
}

// member is one member of a classic group. Fields are guarded by shard.mu.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	rebalanceTimeout     time.Duration
	sessionTimeout       time.Duration
	protocolType         string
	protocols            []protocol
	assignment           []byte
	seq                  uint64 // join order; Kafka keeps members in insertion order

	// joinCh is non-nil while the member waits in JoinGroup for the rebalance
	// to complete; syncCh while it waits in SyncGroup for the leader.
	joinCh chan *kmsg.JoinGroupResponse
	syncCh chan syncResult

	sessionTimer *time.Timer
	timerSeq     uint64 // invalidates a timer that fired while being replaced
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// sameProtocols reports whether a rejoin changes nothing the leader assigned
// from, so Kafka can answer it without a rebalance.
func (m *member) sameProtocols(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	})
}

// group is one classic group. Fields are guarded by shard.mu.
type group struct {
	id           string
	state        state
	protocolType string
	protocol     string // selected protocol name; "" before the first generation
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string      // instance id -> member id
	pending      map[string]*time.Timer // member ids handed out by MEMBER_ID_REQUIRED, not yet joined
	pendingSync  map[string]bool        // members of this generation that have not sent SyncGroup
	offsets      map[tp]offsetEntry
	stateTime    time.Time // when state last changed; drives offset expiry of empty groups
	nextSeq      uint64

	// Rebalance bookkeeping. rebalanceSeq invalidates stale timers.
	rebalanceTimer   *time.Timer
	syncTimer        *time.Timer
	rebalanceSeq     uint64
	initialDelay     bool // the pending join uses group.initial.rebalance.delay.ms
	newMemberAdded   bool
	delayRemaining   time.Duration
	subscribedTopics map[string]bool // nil: unknown (not a consumer group or undecodable)

	// cg is set while the id is a KIP-848 consumer group; the classic
	// fields above are then unused, except offsets.
	cg *consumerGroup
	// sg is set while the id is a KIP-1071 streams group (streams_*.go).
	sg *streamsGroup
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:          id,
		state:       stateEmpty,
		members:     map[string]*member{},
		static:      map[string]string{},
		pending:     map[string]*time.Timer{},
		pendingSync: map[string]bool{},
		offsets:     map[tp]offsetEntry{},
		stateTime:   now,
	}
}

func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return int(a.seq) - int(b.seq) })
	return ms
}

// candidateProtocols are the protocols every member supports, ordered by
// the first member's preference.
func (g *group) candidateProtocols() []string {
	var out []string
	first := true
	for _, m := range g.sortedMembers() {
		if first {
			for _, p := range m.protocols {
				out = append(out, p.name)
			}
			first = false
			continue
		}
		out = slices.DeleteFunc(out, func(n string) bool { return !hasProtocol(m.protocols, n) })
	}
	return out
}

func hasProtocol(ps []protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p protocol) bool { return p.name == name })
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols: a new group
// needs a type and a protocol; otherwise the type must match and the member
// must support one protocol that every current member supports.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, c := range g.candidateProtocols() {
		if hasProtocol(ps, c) {
			return true
		}
	}
	return false
}

// selectProtocol is Kafka's vote: every member votes for its most preferred
// candidate; the most votes wins. Ties go to the first member's preference
// so the choice is deterministic.
func (g *group) selectProtocol() string {
	cands := g.candidateProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(cands, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	for _, c := range cands {
		if votes[c] > bestVotes {
			best, bestVotes = c, votes[c]
		}
	}
	return best
}

func (g *group) allMembersJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return false
		}
	}
	return true
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// updateSubscriptions decodes the consumer protocol metadata of every member
// so OffsetDelete and offset expiry know which topics are still consumed.
func (g *group) updateSubscriptions() {
	g.subscribedTopics = nil
	if g.protocolType != consumerProtocolType || g.protocol == "" {
		return
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return // unknown subscription: treat every topic as possibly subscribed
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	g.subscribedTopics = topics
}

func (g *group) isSubscribed(topic string) bool {
	return g.subscribedTopics == nil || g.subscribedTopics[topic]
}
