package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultGroup is Confluent's schema.registry.group.id default.
const DefaultGroup = "schema-registry"

// identity is a member's metadata in the group, Confluent's
// SchemaRegistryIdentity.
type identity struct {
	Version           int    `json:"version"`
	Host              string `json:"host"`
	Port              int    `json:"port"`
	MasterEligibility bool   `json:"master_eligibility"`
	Scheme            string `json:"scheme"`
}

func (id identity) url() string {
	return id.Scheme + "://" + net.JoinHostPort(id.Host, strconv.Itoa(id.Port))
}

// assignment is what the group leader gives every member: who the
// registry's leader is (Confluent's SchemaRegistryProtocol.Assignment).
type assignment struct {
	Version        int       `json:"version"`
	Error          int16     `json:"error"`
	Master         string    `json:"master"`
	MasterIdentity *identity `json:"master_identity"`
}

// election finds the registry's leader through a Kafka group of protocol
// type "sr", as Confluent's registries do: every instance joins, the
// group's leader picks one eligible member as the registry leader and
// tells everybody in the SyncGroup assignment. Only the registry leader
// writes to _schemas; the others forward writes to it.
type election struct {
	cl     *kgo.Client
	group  string
	self   identity
	onLead func(context.Context) error // run before this instance starts writing

	mu       sync.Mutex
	leader   string // the leader's URL; "" while unknown
	isLeader bool
	changed  chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
	// noLeave skips LeaveGroup on close, as a killed process would: the
	// group notices only when the session times out (tests).
	noLeave bool
}

func parseIdentity(rawURL string) (identity, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return identity{}, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || u.Hostname() == "" {
		return identity{}, errors.New("want scheme://host:port")
	}
	return identity{Version: 1, Host: u.Hostname(), Port: port, MasterEligibility: true, Scheme: u.Scheme}, nil
}

func startElection(cl *kgo.Client, group string, self identity, onLead func(context.Context) error) *election {
	ctx, cancel := context.WithCancel(context.Background())
	e := &election{cl: cl, group: group, self: self, onLead: onLead,
		changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go e.run(ctx)
	return e
}

func (e *election) set(leader string, isLeader bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leader != leader || e.isLeader != isLeader {
		e.leader, e.isLeader = leader, isLeader
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

// waitLeader returns the leader's URL, whether it is this instance, and a
// channel closed when that changes, waiting while there is no leader.
func (e *election) waitLeader(ctx context.Context) (string, bool, <-chan struct{}, error) {
	for {
		e.mu.Lock()
		leader, isLeader, changed := e.leader, e.isLeader, e.changed
		e.mu.Unlock()
		if leader != "" {
			return leader, isLeader, changed, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", false, nil, ctx.Err()
		}
	}
}

const (
	sessionTimeout   = 10 * time.Second
	heartbeatEvery   = 1 * time.Second
	electionBackoff  = 200 * time.Millisecond
	rebalanceTimeout = 10 * time.Second
)

func (e *election) run(ctx context.Context) {
	defer close(e.done)
	meta, _ := json.Marshal(e.self)
	memberID := ""
	for ctx.Err() == nil {
		gen, leaderMember, ok := e.join(ctx, meta, &memberID)
		if !ok {
			sleep(ctx, electionBackoff)
			continue
		}
		e.heartbeat(ctx, gen, memberID, leaderMember)
		e.set("", false)
	}
	if memberID != "" && !e.noLeave {
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group = e.group
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = memberID
		leave.Members = append(leave.Members, m)
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = leave.RequestWith(lctx, e.cl)
		cancel()
	}
}

// join runs one JoinGroup and SyncGroup round and publishes its outcome.
func (e *election) join(ctx context.Context, meta []byte, memberID *string) (gen int32, master string, ok bool) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = e.group
	req.SessionTimeoutMillis = int32(sessionTimeout / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(rebalanceTimeout / time.Millisecond)
	req.MemberID = *memberID
	req.ProtocolType = "sr"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "v0", meta
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, e.cl)
	if err != nil {
		return 0, "", false
	}
	switch err := kerr.ErrorForCode(resp.ErrorCode); {
	case errors.Is(err, kerr.MemberIDRequired):
		*memberID = resp.MemberID
		return 0, "", false
	case errors.Is(err, kerr.UnknownMemberID):
		*memberID = ""
		return 0, "", false
	case err != nil:
		return 0, "", false
	}
	*memberID = resp.MemberID
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = e.group, resp.Generation, resp.MemberID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("sr"), kmsg.StringPtr("v0")
	if resp.LeaderID == resp.MemberID {
		sync.GroupAssignment = e.assign(resp.Members)
	}
	sresp, err := sync.RequestWith(ctx, e.cl)
	if err != nil || sresp.ErrorCode != 0 {
		return 0, "", false
	}
	var a assignment
	if err := json.Unmarshal(sresp.MemberAssignment, &a); err != nil || a.Error != 0 || a.MasterIdentity == nil {
		// No eligible member, or an assignment we cannot read: no leader.
		return resp.Generation, "", true
	}
	isLeader := a.Master == resp.MemberID
	if isLeader && e.onLead != nil {
		// Everything the previous leader wrote is replayed before this
		// instance decides anything.
		if err := e.onLead(ctx); err != nil {
			return 0, "", false
		}
	}
	e.set(a.MasterIdentity.url(), isLeader)
	return resp.Generation, a.Master, true
}

// assign picks the registry leader: the current one if it is still an
// eligible member, otherwise the eligible member with the smallest id.
func (e *election) assign(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	e.mu.Lock()
	current := e.leader
	e.mu.Unlock()
	ids := map[string]identity{}
	var eligible []string
	for _, m := range members {
		var id identity
		if json.Unmarshal(m.ProtocolMetadata, &id) == nil && id.MasterEligibility {
			ids[m.MemberID] = id
			eligible = append(eligible, m.MemberID)
		}
	}
	slices.Sort(eligible)
	a := assignment{Version: 1}
	for _, m := range eligible {
		if ids[m].url() == current {
			a.Master = m
		}
	}
	if a.Master == "" && len(eligible) > 0 {
		a.Master = eligible[0]
	}
	if a.Master != "" {
		id := ids[a.Master]
		a.MasterIdentity = &id
	} else {
		a.Error = 1 // Confluent's DUPLICATE_URLS/no eligible leader: no leader this generation
	}
	b, _ := json.Marshal(a)
	var out []kmsg.SyncGroupRequestGroupAssignment
	for _, m := range members {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m.MemberID, b
		out = append(out, ga)
	}
	return out
}

// heartbeat keeps the membership until the group rebalances or ctx ends.
// An instance that cannot heartbeat for a session timeout steps down: by
// then the group may have chosen another leader.
func (e *election) heartbeat(ctx context.Context, gen int32, memberID, _ string) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = e.group, gen, memberID
		hctx, cancel := context.WithTimeout(ctx, sessionTimeout/2)
		resp, err := req.RequestWith(hctx, e.cl)
		cancel()
		switch {
		case err == nil && resp.ErrorCode == 0:
			lastOK = time.Now()
		case err == nil:
			return // rebalancing, fenced or unknown: join again
		case time.Since(lastOK) > sessionTimeout:
			return
		}
	}
}

func (e *election) close() {
	e.cancel()
	<-e.done
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
