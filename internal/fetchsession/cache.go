// Package fetchsession keeps incremental fetch sessions (KIP-227), as
// Kafka's FetchManager and FetchSessionCache do.
//
// A client that opens a session (session epoch 0) sends its partitions
// once; the broker remembers them with what it last answered for each
// (high watermark, log start offset) and gives the session an id. Later
// requests of the session (epoch 1, 2, ...) send only the partitions that
// changed (their fetch offset moved) and those to forget; the broker reads
// every partition of the session and answers only those with something
// new: records, a moved high watermark or log start offset, an error, a
// diverging epoch or a preferred read replica.
//
// The cache follows Kafka 4.4: it is split into 8 shards, each holding
// max.incremental.fetch.session.cache.slots / 8 sessions, and a new
// session goes to the next shard in turn. When its shard is full, a new
// session evicts the least recently used session unused for over 120 s
// (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, not a config);
// failing that, the least valuable session that is over 120 s old, if it
// is worth less than the new one (ordered by privileged, then partition
// count, then id). A follower's session is privileged: any follower
// session may evict a younger consumer session, never the reverse.
//
// Concurrency: a shard's mutex guards its sessions map and eviction
// order; a session's own mutex guards its partitions and epoch. The shard
// lock is never taken while holding a session lock.
package fetchsession

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Session ids and epochs with a fixed meaning (Kafka's FetchMetadata).
const (
	InvalidSessionID int32 = 0  // no session
	InitialEpoch     int32 = 0  // open a new session (a full request)
	FinalEpoch       int32 = -1 // close the session; a full request with no new session
)

// NumShards is how many shards the cache has (Kafka 4.4's
// NumFetchSessionCacheShards).
const NumShards = 8

// EvictionMs is how long a session must be unused (or alive) before a new
// session may evict it (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
const EvictionMs = 120_000

// NextEpoch is the epoch that follows epoch: after the largest int32 it
// wraps to 1, as Kafka's FetchMetadata.nextEpoch.
func NextEpoch(epoch int32) int32 {
	switch {
	case epoch < 0:
		return FinalEpoch
	case epoch == math.MaxInt32:
		return 1
	}
	return epoch + 1
}

// Cache holds the fetch sessions of a broker.
type Cache struct {
	shards [NumShards]*shard
	next   atomic.Uint32 // round-robin shard for new sessions
}

// NewCache returns a cache for at most slots sessions
// (max.incremental.fetch.session.cache.slots), slots/8 per shard.
func NewCache(slots int) *Cache {
	c := &Cache{}
	idRange := int32(math.MaxInt32 / NumShards)
	for i := range c.shards {
		c.shards[i] = &shard{num: int32(i), maxEntries: slots / NumShards, idRange: idRange,
			sessions: make(map[int32]*Session)}
	}
	return c
}

// shardOf is the shard that issued id.
func (c *Cache) shardOf(id int32) *shard {
	i := int(id / c.shards[0].idRange)
	if i < 0 || i >= NumShards {
		return nil
	}
	return c.shards[i]
}

// Len is how many sessions the cache holds.
func (c *Cache) Len() int {
	n := 0
	for _, s := range c.shards {
		s.mu.Lock()
		n += len(s.sessions)
		s.mu.Unlock()
	}
	return n
}

// Contains reports whether a session with id is cached.
func (c *Cache) Contains(id int32) bool {
	sh := c.shardOf(id)
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.sessions[id]
	return ok
}

// shard is one part of the cache; sessions never move between shards.
type shard struct {
	num        int32
	maxEntries int
	idRange    int32

	mu       sync.Mutex
	sessions map[int32]*Session
}

// newIDLocked picks a free random id in the shard's range.
func (sh *shard) newIDLocked() int32 {
	lo, hi := max(1, sh.num*sh.idRange), (sh.num+1)*sh.idRange
	for {
		id := lo + rand.Int32N(hi-lo)
		if _, taken := sh.sessions[id]; !taken && id != InvalidSessionID {
			return id
		}
	}
}

// create adds a session holding parts if the shard has room or can evict
// a session for it; it returns InvalidSessionID otherwise.
func (sh *shard) create(now int64, privileged, usesTopicIDs bool, parts []*cachedPartition) int32 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.sessions) >= sh.maxEntries && !sh.tryEvictLocked(privileged, len(parts), now) {
		return InvalidSessionID
	}
	s := &Session{id: sh.newIDLocked(), privileged: privileged, usesTopicIDs: usesTopicIDs,
		created: now}
	s.mu.epoch = NextEpoch(InitialEpoch)
	s.mu.parts = parts
	s.mu.index = make(map[Key]*cachedPartition, len(parts))
	for _, p := range parts {
		s.mu.index[p.key] = p
	}
	sh.sessions[s.id] = s
	sh.touchLocked(s, now, len(parts))
	return s.id
}

// tryEvictLocked makes room for a new session of size partitions: first
// the least recently used session if it is stale, else the least
// valuable evictable session if it is worth no more than the new one.
func (sh *shard) tryEvictLocked(privileged bool, size int, now int64) bool {
	var lru, victim *Session
	for _, s := range sh.sessions {
		if lru == nil || s.lastUsedBefore(lru) {
			lru = s
		}
		evictable := s.evictableByAll || privileged && s.evictableByPrivileged
		if evictable && (victim == nil || s.evictKey.less(victim.evictKey)) {
			victim = s
		}
	}
	switch {
	case lru == nil:
		return false
	case now-lru.lastUsed > EvictionMs:
		victim = lru
	case victim == nil:
		return false
	case (evictKey{privileged: privileged, size: size}).less(victim.evictKey):
		return false
	}
	delete(sh.sessions, victim.id)
	return true
}

// touchLocked records a use of s at now and recomputes where it stands
// for eviction, with the size (partition count) it has now.
func (sh *shard) touchLocked(s *Session, now int64, size int) {
	s.lastUsed = now
	s.evictKey = evictKey{privileged: s.privileged, size: size, id: s.id}
	old := now-s.created > EvictionMs
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

func (sh *shard) remove(id int32) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.sessions[id]
	delete(sh.sessions, id)
	return ok
}

func (sh *shard) get(id int32) *Session {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.sessions[id]
}

// evictKey orders sessions by how little they are worth keeping:
// unprivileged before privileged, then fewer partitions, then id.
type evictKey struct {
	privileged bool
	size       int
	id         int32
}

func (a evictKey) less(b evictKey) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}
