package streams

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
)

// SessionWindows group a key's records into sessions: records less than
// Gap apart (by timestamp) are in one session, whose window runs from its
// first to its last record, both included. A record may join two sessions
// into one. Grace is how long, by stream time, after a session's end a
// record may still extend it (Kafka's SessionWindows.ofInactivityGapAndGrace).
type SessionWindows struct {
	Gap, Grace time.Duration
}

// Nullable makes a serde of *T out of one of T: nil is Kafka's null (a
// tombstone). Session aggregations forward nil for a session that was
// merged into another.
func Nullable[T any](s Serde[T]) Serde[*T] {
	return SerdeFuncs[*T]{
		Ser: func(topic string, v *T) ([]byte, error) {
			if v == nil {
				return nil, nil
			}
			return s.Serialize(topic, *v)
		},
		Deser: func(topic string, b []byte) (*T, error) {
			if b == nil {
				return nil, nil
			}
			v, err := s.Deserialize(topic, b)
			return &v, err
		},
	}
}

// SessionStoreBuilder describes an in-memory session store: for each key
// and session window, a value. Keys are Kafka's session key schema (the
// key's bytes, the end, the start, each 8 bytes big-endian); the changelog
// is compact,delete with retention.ms = retention + 1 day. Sessions that
// ended more than retention before the stream time are dropped.
func SessionStoreBuilder[K, V any](name string, ks Serde[K], vs Serde[V], retention time.Duration) StoreBuilder {
	return &sessionBuilder[K, V]{name: name, ks: ks, vs: vs, retention: retention.Milliseconds()}
}

type sessionBuilder[K, V any] struct {
	name      string
	ks        Serde[K]
	vs        Serde[V]
	retention int64
}

func (b *sessionBuilder[K, V]) Name() string { return b.name }
func (b *sessionBuilder[K, V]) logged() bool { return true }
func (b *sessionBuilder[K, V]) changelogConfigs() map[string]*string {
	ret := strconv.FormatInt(b.retention+24*time.Hour.Milliseconds(), 10)
	return map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": &ret}
}
func (b *sessionBuilder[K, V]) build(topic string) (any, *kvStore) {
	raw := newKVStore()
	return &SessionStore[K, V]{name: b.name, topic: topic, ks: b.ks, vs: b.vs, raw: raw, retention: b.retention}, raw
}

// SessionStore is a task's typed view of a session store.
type SessionStore[K, V any] struct {
	name      string
	topic     string
	ks        Serde[K]
	vs        Serde[V]
	raw       *kvStore
	retention int64
	// byKey indexes the sessions of each serialized key; built on first
	// use (after the restore), then kept up to date by Put and Remove.
	byKey map[string]map[Window]struct{}
}

// GetSessionStore returns the session store called name from a
// processor's context; it panics if the processor is not connected to it
// or the types differ.
func GetSessionStore[K, V any](ctx interface{ StateStore(string) any }, name string) *SessionStore[K, V] {
	s, ok := ctx.StateStore(name).(*SessionStore[K, V])
	if !ok {
		panic("streams: state store " + strconv.Quote(name) + " is not a SessionStore of these types")
	}
	return s
}

// Name is the store's name.
func (s *SessionStore[K, V]) Name() string { return s.name }

func sessionKey(kb []byte, w Window) []byte {
	b := binary.BigEndian.AppendUint64(append([]byte(nil), kb...), uint64(w.End))
	return binary.BigEndian.AppendUint64(b, uint64(w.Start))
}

func (s *SessionStore[K, V]) index() {
	if s.byKey != nil {
		return
	}
	s.byKey = map[string]map[Window]struct{}{}
	for k := range s.raw.m {
		if len(k) < 16 {
			continue
		}
		b := []byte(k)
		w := Window{Start: int64(binary.BigEndian.Uint64(b[len(b)-8:])), End: int64(binary.BigEndian.Uint64(b[len(b)-16 : len(b)-8]))}
		s.indexAdd(k[:len(k)-16], w)
	}
}

func (s *SessionStore[K, V]) indexAdd(kb string, w Window) {
	if s.byKey[kb] == nil {
		s.byKey[kb] = map[Window]struct{}{}
	}
	s.byKey[kb][w] = struct{}{}
}

// FindSessions calls fn for each session of k that ends at or after
// earliestEnd and starts at or before latestStart, in order of start.
func (s *SessionStore[K, V]) FindSessions(k K, earliestEnd, latestStart int64, fn func(Window, V) error) error {
	s.index()
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return err
	}
	var ws []Window
	for w := range s.byKey[string(kb)] {
		if w.End >= earliestEnd && w.Start <= latestStart {
			ws = append(ws, w)
		}
	}
	sortWindows(ws)
	for _, w := range ws {
		v, err := s.vs.Deserialize(s.topic, s.raw.m[string(sessionKey(kb, w))])
		if err != nil {
			return err
		}
		if err := fn(w, v); err != nil {
			return err
		}
	}
	return nil
}

func sortWindows(ws []Window) {
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && (ws[j].Start < ws[j-1].Start || ws[j].Start == ws[j-1].Start && ws[j].End < ws[j-1].End); j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}

// Put sets the value of k's session w.
func (s *SessionStore[K, V]) Put(k K, w Window, v V) error {
	s.index()
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return err
	}
	vb, err := s.vs.Serialize(s.topic, v)
	if err != nil {
		return err
	}
	if vb == nil {
		vb = []byte{}
	}
	s.raw.put(sessionKey(kb, w), vb)
	s.indexAdd(string(kb), w)
	return nil
}

// Remove deletes k's session w (a tombstone in the changelog).
func (s *SessionStore[K, V]) Remove(k K, w Window) error {
	s.index()
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return err
	}
	s.raw.put(sessionKey(kb, w), nil)
	delete(s.byKey[string(kb)], w)
	if len(s.byKey[string(kb)]) == 0 {
		delete(s.byKey, string(kb))
	}
	return nil
}

// expire drops sessions that ended before streamTime - retention.
func (s *SessionStore[K, V]) expire(streamTime int64) {
	s.index()
	before := streamTime - s.retention
	for kb, ws := range s.byKey {
		for w := range ws {
			if w.End < before {
				delete(ws, w)
				s.raw.drop(string(sessionKey([]byte(kb), w)))
			}
		}
		if len(ws) == 0 {
			delete(s.byKey, kb)
		}
	}
}

// SessionWindowedStream is a grouped stream cut into sessions, ready for a
// session aggregation (Kafka's SessionWindowedKStream).
type SessionWindowedStream[K, V any] struct {
	g Grouped[K, V]
	w SessionWindows
}

// SessionWindowedBy cuts a grouped stream into sessions.
func SessionWindowedBy[K, V any](g Grouped[K, V], w SessionWindows) SessionWindowedStream[K, V] {
	if w.Gap.Milliseconds() < 1 || w.Grace < 0 {
		g.s.b.errs = append(g.s.b.errs, fmt.Errorf("session windows: gap %v (want at least 1ms), grace %v (want >= 0)", w.Gap, w.Grace))
	}
	return SessionWindowedStream[K, V]{g: g, w: w}
}

// AggregateSessions aggregates each key's records per session into the
// session store called name. A record extends or starts a session; when
// it joins sessions, their aggregates are combined with merge and the
// joined sessions are removed: the table forwards nil for each of them
// (Kafka's tombstone) and then the new session's aggregate. A record whose
// session would end before the stream time minus the grace is dropped.
func AggregateSessions[K, V, A any](s SessionWindowedStream[K, V], name string, init func() A, agg func(K, V, A) A, merge func(k K, a, b A) A, as Serde[A]) Table[Windowed[K], *A] {
	return aggregateSessions(s, name,
		func() *A { a := init(); return &a },
		func(k K, v V, a *A) A { return agg(k, v, *a) },
		func(k K, a *A, b A) *A { m := merge(k, *a, b); return &m }, as)
}

// ReduceSessions combines each key's values per session with fn: a
// session's first value is kept as is, and joined sessions' values are
// combined with fn, earliest first (Kafka's SessionWindowedKStream.reduce).
func ReduceSessions[K, V any](s SessionWindowedStream[K, V], name string, fn func(agg, v V) V) Table[Windowed[K], *V] {
	return aggregateSessions(s, name,
		func() *V { return nil },
		func(_ K, v V, a *V) V {
			if a == nil {
				return v
			}
			return fn(*a, v)
		},
		func(_ K, a *V, b V) *V {
			if a == nil {
				return &b
			}
			m := fn(*a, b)
			return &m
		}, s.g.vs)
}

// aggregateSessions: init is the aggregate before any value (nil: none),
// merge folds a joined session's aggregate into it, agg adds the record.
func aggregateSessions[K, V, A any](s SessionWindowedStream[K, V], name string, init func() *A, agg func(K, V, *A) A, merge func(K, *A, A) *A, as Serde[A]) Table[Windowed[K], *A] {
	g := s.g
	b := g.s.b
	parent := g.s.node
	if g.repartition {
		topic := name + "-repartition"
		addSink(b, b.newName("KSTREAM-SINK"), topic, true, g.ks, g.vs, parent)
		parent = b.newName("KSTREAM-SOURCE")
		addSource(b, parent, true, g.ks, g.vs, topic)
	}
	proc := b.newName("KSTREAM-SESSION-AGGREGATE")
	AddProcessor(b, proc, func() Processor[K, V, Windowed[K], *A] {
		return &sessionAggProc[K, V, A]{store: name, gap: s.w.Gap.Milliseconds(), grace: s.w.Grace.Milliseconds(),
			init: init, agg: agg, merge: merge, observed: -1}
	}, parent)
	b.AddStateStore(SessionStoreBuilder(name, g.ks, as, s.w.Gap+s.w.Grace), proc)
	return Table[Windowed[K], *A]{b: b, node: proc, store: name}
}

// CountSessions counts each key's records per session.
func CountSessions[K, V any](s SessionWindowedStream[K, V], name string) Table[Windowed[K], *int64] {
	return AggregateSessions(s, name, func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 },
		func(_ K, a, b int64) int64 { return a + b }, Int64())
}

type sessionAggProc[K, V, A any] struct {
	store      string
	gap, grace int64
	init       func() *A
	agg        func(K, V, *A) A
	merge      func(K, *A, A) *A
	ctx        ProcessorContext[Windowed[K], *A]
	ss         *SessionStore[K, A]
	observed   int64
	nextExpiry int64
}

func (p *sessionAggProc[K, V, A]) Init(ctx ProcessorContext[Windowed[K], *A]) error {
	p.ctx = ctx
	p.ss = GetSessionStore[K, A](ctx, p.store)
	return nil
}

func (p *sessionAggProc[K, V, A]) Process(r Record[K, V]) error {
	ts := r.Timestamp.UnixMilli()
	if ts < 0 {
		return nil
	}
	p.observed = max(p.observed, ts)
	if p.observed >= p.nextExpiry {
		p.ss.expire(p.observed)
		p.nextExpiry = p.observed + p.gap
	}
	closeTime := p.observed - p.grace
	single := Window{ts, ts}
	merged := single
	acc := p.init()
	var joined []Window
	err := p.ss.FindSessions(r.Key, ts-p.gap, ts+p.gap, func(w Window, v A) error {
		joined = append(joined, w)
		acc = p.merge(r.Key, acc, v)
		merged = Window{min(merged.Start, w.Start), max(merged.End, w.End)}
		return nil
	})
	if err != nil {
		return err
	}
	if merged.End < closeTime {
		return nil // a late record: its session has closed
	}
	if merged != single {
		for _, w := range joined {
			if err := p.ss.Remove(r.Key, w); err != nil {
				return err
			}
			p.ctx.Forward(Record[Windowed[K], *A]{Key: Windowed[K]{r.Key, w}, Timestamp: time.UnixMilli(w.End)})
		}
	}
	v := p.agg(r.Key, r.Value, acc)
	if err := p.ss.Put(r.Key, merged, v); err != nil {
		return err
	}
	// Kafka forwards session updates with the session's end as timestamp
	// and no headers.
	p.ctx.Forward(Record[Windowed[K], *A]{Key: Windowed[K]{r.Key, merged}, Value: &v, Timestamp: time.UnixMilli(merged.End)})
	return nil
}

func (p *sessionAggProc[K, V, A]) Close() error { return nil }

// SessionWindowedSerde serializes a session-windowed key as Kafka's
// SessionWindowedSerializer does: the inner key's bytes, then the session's
// end and start, each 8 bytes big-endian.
func SessionWindowedSerde[K any](inner Serde[K]) Serde[Windowed[K]] {
	return SerdeFuncs[Windowed[K]]{
		Ser: func(topic string, v Windowed[K]) ([]byte, error) {
			kb, err := inner.Serialize(topic, v.Key)
			if err != nil {
				return nil, err
			}
			return sessionKey(kb, v.Window), nil
		},
		Deser: func(topic string, b []byte) (Windowed[K], error) {
			var w Windowed[K]
			if len(b) < 16 {
				return w, fmt.Errorf("session windowed key serde: %d bytes from topic %q, want at least 16", len(b), topic)
			}
			k, err := inner.Deserialize(topic, b[:len(b)-16])
			if err != nil {
				return w, err
			}
			end := int64(binary.BigEndian.Uint64(b[len(b)-16 : len(b)-8]))
			start := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
			return Windowed[K]{Key: k, Window: Window{start, end}}, nil
		},
	}
}
