package fetchsession

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Key names a partition of a session: by topic id in sessions of Fetch
// v13+ (Topic is then empty), by topic name before.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Request is what a fetch asks of one partition.
type Request struct {
	FetchOffset        int64
	LogStartOffset     int64 // the follower's; -1 for consumers
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Partition is one partition to read, with what was asked of it.
type Partition struct {
	Key
	Request
}

// Result is what the broker answered for a partition: the facts that
// decide whether an incremental response must carry it.
type Result struct {
	RecordBytes      int
	HighWatermark    int64
	LogStartOffset   int64
	ErrorCode        int16
	PreferredReplica int32 // -1: none
	Diverging        bool
}

// cachedPartition is a partition of a session: what was last asked and
// what was last answered.
type cachedPartition struct {
	key Key
	req Request
	// highWatermark and logStartOffset were last sent to the client; -1
	// after an error, so the partition is sent again when it clears.
	highWatermark, logStartOffset int64
	moved                         bool // scratch for Respond
}

// mustRespond is Kafka's rule (CachedPartition.maybeUpdateResponseData)
// for an incremental response: a partition goes in it when it has
// records, its high watermark or log start offset moved since last sent,
// it names a preferred read replica, it has an error or a diverging
// epoch. With update, the cache takes the new values.
func (p *cachedPartition) mustRespond(r Result, update bool) bool {
	must := r.RecordBytes > 0 || r.PreferredReplica >= 0 || r.Diverging
	if p.highWatermark != r.HighWatermark {
		must = true
		if update {
			p.highWatermark = r.HighWatermark
		}
	}
	if p.logStartOffset != r.LogStartOffset {
		must = true
		if update {
			p.logStartOffset = r.LogStartOffset
		}
	}
	if r.ErrorCode != 0 {
		must = true
		if update {
			p.highWatermark = -1
		}
	}
	return must
}

// Session is one incremental fetch session.
type Session struct {
	id           int32
	privileged   bool // a follower's
	usesTopicIDs bool // opened with Fetch v13+
	created      int64

	// Guarded by the shard's lock.
	lastUsed                              int64
	evictKey                              evictKey
	evictableByAll, evictableByPrivileged bool

	mu struct {
		sync.Mutex
		epoch int32 // the epoch the next request must carry
		// parts is the order partitions are read and answered in;
		// those that return records move to the end, so that the
		// others get their turn at the response's byte limit.
		parts []*cachedPartition
		index map[Key]*cachedPartition
	}
}

func (s *Session) lastUsedBefore(o *Session) bool {
	if s.lastUsed != o.lastUsed {
		return s.lastUsed < o.lastUsed
	}
	return s.id < o.id
}

// updateLocked applies an incremental request: partitions it names are
// added or take the new request values; forgotten ones leave.
func (s *Session) updateLocked(fetch []Partition, forget []Key) {
	for _, f := range fetch {
		if p, ok := s.mu.index[f.Key]; ok {
			p.req = f.Request
			continue
		}
		p := &cachedPartition{key: f.Key, req: f.Request, highWatermark: -1, logStartOffset: -1}
		s.mu.parts = append(s.mu.parts, p)
		s.mu.index[f.Key] = p
	}
	removed := false
	for _, k := range forget {
		if _, ok := s.mu.index[k]; ok {
			delete(s.mu.index, k)
			removed = true
		}
	}
	if removed {
		kept := s.mu.parts[:0]
		for _, p := range s.mu.parts {
			if s.mu.index[p.key] == p {
				kept = append(kept, p)
			}
		}
		clear(s.mu.parts[len(kept):])
		s.mu.parts = kept
	}
}

// Kind is how a fetch request relates to sessions.
type Kind int

const (
	// Sessionless: a full request that opens no session (epoch -1, or
	// before Fetch v7), or an incremental one that emptied its session.
	Sessionless Kind = iota
	// Full: a full request that opens a session if the cache has room.
	Full
	// Incremental: a request of an open session.
	Incremental
	// Error: the session is unknown or out of step; the response carries
	// only the error.
	Error
)

// Context is one fetch request's view of its session, made by
// NewContext before the partitions are read and completed by Respond.
type Context struct {
	Kind Kind
	// ErrorCode is the response's top-level error for Kind Error.
	ErrorCode int16
	// Partitions are the partitions to read, in the order the response
	// lists them: the request's for Full and Sessionless, the session's
	// for Incremental.
	Partitions []Partition

	cache        *Cache
	session      *Session
	epoch        int32 // the session epoch this request moved it to
	privileged   bool
	usesTopicIDs bool
}

// NewContext is Kafka's FetchManager.newContext: version, sessionID and
// epoch are the request's, follower whether a replica sent it, fetch its
// partitions in request order and forget its forgotten partitions. now
// is in milliseconds.
func (c *Cache) NewContext(version int16, sessionID, epoch int32, follower bool, fetch []Partition, forget []Key, now int64) *Context {
	if version < 7 {
		return &Context{Kind: Sessionless, Partitions: fetch}
	}
	if epoch == InitialEpoch || epoch == FinalEpoch {
		// A full request closes the session it names.
		if sessionID != InvalidSessionID {
			if sh := c.shardOf(sessionID); sh != nil {
				sh.remove(sessionID)
			}
		}
		if epoch == FinalEpoch {
			return &Context{Kind: Sessionless, Partitions: fetch}
		}
		return &Context{Kind: Full, Partitions: fetch, cache: c, privileged: follower, usesTopicIDs: version >= 13}
	}
	sh := c.shardOf(sessionID)
	if sh == nil {
		return &Context{Kind: Error, ErrorCode: kerr.FetchSessionIDNotFound.Code}
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[sessionID]
	if s == nil {
		return &Context{Kind: Error, ErrorCode: kerr.FetchSessionIDNotFound.Code}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mu.epoch != epoch:
		return &Context{Kind: Error, ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	case s.usesTopicIDs != (version >= 13):
		return &Context{Kind: Error, ErrorCode: kerr.FetchSessionTopicIDError.Code}
	}
	s.updateLocked(fetch, forget)
	if len(s.mu.parts) == 0 {
		delete(sh.sessions, s.id)
		return &Context{Kind: Sessionless, Partitions: fetch}
	}
	sh.touchLocked(s, now, len(s.mu.parts))
	s.mu.epoch = NextEpoch(s.mu.epoch)
	ctx := &Context{Kind: Incremental, session: s, epoch: s.mu.epoch, Partitions: make([]Partition, len(s.mu.parts))}
	for i, p := range s.mu.parts {
		ctx.Partitions[i] = Partition{Key: p.key, Request: p.req}
	}
	return ctx
}

// Respond completes the request with the results of reading
// c.Partitions (one for each, in order). It returns the response's
// session id and top-level error code, and which partitions the response
// carries: nil for all of them; an incremental response leaves out those
// with nothing new. A full request opens its session here, if
// its shard has room.
func (c *Context) Respond(results []Result, now int64) (sessionID int32, errorCode int16, include []bool) {
	switch c.Kind {
	case Error:
		return InvalidSessionID, c.ErrorCode, nil
	case Sessionless:
		return InvalidSessionID, 0, nil
	case Full:
		parts := make([]*cachedPartition, len(c.Partitions))
		for i, p := range c.Partitions {
			parts[i] = &cachedPartition{key: p.Key, req: p.Request,
				highWatermark: results[i].HighWatermark, logStartOffset: results[i].LogStartOffset}
		}
		sh := c.cache.shards[(c.cache.next.Add(1)-1)%NumShards]
		return sh.create(now, c.privileged, c.usesTopicIDs, parts), 0, nil
	}
	s := c.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.epoch != c.epoch {
		// Another request of the session came in meanwhile.
		return s.id, kerr.InvalidFetchSessionEpoch.Code, nil
	}
	include = make([]bool, len(results))
	var moved []*cachedPartition
	for i, r := range results {
		p := s.mu.index[c.Partitions[i].Key]
		if p == nil {
			continue
		}
		include[i] = p.mustRespond(r, true)
		if include[i] && r.RecordBytes > 0 {
			p.moved = true
			moved = append(moved, p)
		}
	}
	if len(moved) > 0 {
		kept := make([]*cachedPartition, 0, len(s.mu.parts))
		for _, p := range s.mu.parts {
			if !p.moved {
				kept = append(kept, p)
			}
		}
		for _, p := range moved {
			p.moved = false
		}
		s.mu.parts = append(kept, moved...)
	}
	return s.id, 0, include
}
