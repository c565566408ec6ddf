package streams

import "time"

// The DSL: typed streams and tables over the Processor API. Operations that
// keep the key and value types are methods; those that change them are
// functions (Go methods cannot take type parameters).

// Stream is a KStream: an unbounded sequence of records, each one an event.
type Stream[K, V any] struct {
	b    *Builder
	node string
	// keyChanged marks a stream whose key was set by an operation
	// (Map, FlatMap, SelectKey), so a later aggregation must repartition.
	keyChanged bool
}

// Table is a KTable: for each key its latest value, kept in a state store.
// Every update is forwarded downstream (Kafka Streams with record caching
// off, cache.max.bytes.buffering=0).
type Table[K, V any] struct {
	b     *Builder
	node  string
	store string
	// Set by windowed aggregations, for SuppressUntilWindowCloses.
	windowed          bool
	windowSize, grace int64 // ms
	keySerde          any   // Serde of the Windowed key's inner key
}

// Grouped is a stream grouped by key, ready to aggregate.
type Grouped[K, V any] struct {
	s           Stream[K, V]
	ks          Serde[K]
	vs          Serde[V]
	repartition bool
}

// From reads topics as a stream with the given serdes.
func From[K, V any](b *Builder, ks Serde[K], vs Serde[V], topics ...string) Stream[K, V] {
	name := b.newName("KSTREAM-SOURCE")
	AddSource(b, name, ks, vs, topics...)
	return Stream[K, V]{b: b, node: name}
}

// addStateless adds a processor node running fn for every record.
func addStateless[KI, VI, KO, VO any](b *Builder, prefix, parent string, fn ProcessorFunc[KI, VI, KO, VO]) string {
	name := b.newName(prefix)
	AddProcessor(b, name, func() Processor[KI, VI, KO, VO] { return &funcProc[KI, VI, KO, VO]{fn: fn} }, parent)
	return name
}

func (s Stream[K, V]) with(node string) Stream[K, V] {
	return Stream[K, V]{b: s.b, node: node, keyChanged: s.keyChanged}
}

// Filter keeps the records pred accepts.
func (s Stream[K, V]) Filter(pred func(K, V) bool) Stream[K, V] {
	return s.with(addStateless(s.b, "KSTREAM-FILTER", s.node, func(ctx ProcessorContext[K, V], r Record[K, V]) error {
		if pred(r.Key, r.Value) {
			ctx.Forward(r)
		}
		return nil
	}))
}

// FilterNot drops the records pred accepts.
func (s Stream[K, V]) FilterNot(pred func(K, V) bool) Stream[K, V] {
	return s.Filter(func(k K, v V) bool { return !pred(k, v) })
}

// Peek calls fn for every record and passes it on unchanged.
func (s Stream[K, V]) Peek(fn func(K, V)) Stream[K, V] {
	return s.with(addStateless(s.b, "KSTREAM-PEEK", s.node, func(ctx ProcessorContext[K, V], r Record[K, V]) error {
		fn(r.Key, r.Value)
		ctx.Forward(r)
		return nil
	}))
}

// Foreach calls fn for every record; the stream ends here.
func (s Stream[K, V]) Foreach(fn func(K, V)) {
	addStateless(s.b, "KSTREAM-FOREACH", s.node, func(_ ProcessorContext[K, V], r Record[K, V]) error {
		fn(r.Key, r.Value)
		return nil
	})
}

// Branch splits the stream: each record goes to the branch of the first
// predicate that accepts it, and is dropped if none does (Kafka's
// KStream#split with one branch per predicate and no default branch; add a
// last predicate that always returns true for a default).
func (s Stream[K, V]) Branch(preds ...func(K, V) bool) []Stream[K, V] {
	branch := s.b.newName("KSTREAM-BRANCH")
	children := make([]string, len(preds))
	for i := range preds {
		children[i] = s.b.newName("KSTREAM-BRANCHCHILD")
	}
	AddProcessor(s.b, branch, func() Processor[K, V, K, V] {
		return &funcProc[K, V, K, V]{fn: func(ctx ProcessorContext[K, V], r Record[K, V]) error {
			for i, p := range preds {
				if p(r.Key, r.Value) {
					ctx.Forward(r, children[i])
					return nil
				}
			}
			return nil
		}}
	}, s.node)
	out := make([]Stream[K, V], len(preds))
	for i, c := range children {
		addPassThrough[K, V](s.b, c, branch)
		out[i] = s.with(c)
	}
	return out
}

func addPassThrough[K, V any](b *Builder, name, parent string) {
	AddProcessor(b, name, func() Processor[K, V, K, V] {
		return &funcProc[K, V, K, V]{fn: func(ctx ProcessorContext[K, V], r Record[K, V]) error {
			ctx.Forward(r)
			return nil
		}}
	}, parent)
}

// Merge is the union of s and o, in no defined order between them.
func (s Stream[K, V]) Merge(o Stream[K, V]) Stream[K, V] {
	name := s.b.newName("KSTREAM-MERGE")
	AddProcessor(s.b, name, func() Processor[K, V, K, V] {
		return &funcProc[K, V, K, V]{fn: func(ctx ProcessorContext[K, V], r Record[K, V]) error {
			ctx.Forward(r)
			return nil
		}}
	}, s.node, o.node)
	return Stream[K, V]{b: s.b, node: name, keyChanged: s.keyChanged || o.keyChanged}
}

// To writes the stream to topic.
func (s Stream[K, V]) To(topic string, ks Serde[K], vs Serde[V]) {
	AddSink(s.b, s.b.newName("KSTREAM-SINK"), topic, ks, vs, s.node)
}

// Map replaces each record's key and value. A later aggregation repartitions.
func Map[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) (K2, V2)) Stream[K2, V2] {
	n := addStateless(s.b, "KSTREAM-MAP", s.node, func(ctx ProcessorContext[K2, V2], r Record[K, V]) error {
		k, v := fn(r.Key, r.Value)
		ctx.Forward(Record[K2, V2]{Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
		return nil
	})
	return Stream[K2, V2]{b: s.b, node: n, keyChanged: true}
}

// MapValues replaces each record's value; the key, and so the partitioning,
// stays.
func MapValues[K, V, V2 any](s Stream[K, V], fn func(K, V) V2) Stream[K, V2] {
	n := addStateless(s.b, "KSTREAM-MAPVALUES", s.node, func(ctx ProcessorContext[K, V2], r Record[K, V]) error {
		ctx.Forward(Record[K, V2]{Key: r.Key, Value: fn(r.Key, r.Value), Timestamp: r.Timestamp, Headers: r.Headers})
		return nil
	})
	return Stream[K, V2]{b: s.b, node: n, keyChanged: s.keyChanged}
}

// FlatMap turns each record into zero or more records.
func FlatMap[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) []KeyValue[K2, V2]) Stream[K2, V2] {
	n := addStateless(s.b, "KSTREAM-FLATMAP", s.node, func(ctx ProcessorContext[K2, V2], r Record[K, V]) error {
		for _, kv := range fn(r.Key, r.Value) {
			ctx.Forward(Record[K2, V2]{Key: kv.Key, Value: kv.Value, Timestamp: r.Timestamp, Headers: r.Headers})
		}
		return nil
	})
	return Stream[K2, V2]{b: s.b, node: n, keyChanged: true}
}

// FlatMapValues turns each value into zero or more values under the same key.
func FlatMapValues[K, V, V2 any](s Stream[K, V], fn func(K, V) []V2) Stream[K, V2] {
	n := addStateless(s.b, "KSTREAM-FLATMAPVALUES", s.node, func(ctx ProcessorContext[K, V2], r Record[K, V]) error {
		for _, v := range fn(r.Key, r.Value) {
			ctx.Forward(Record[K, V2]{Key: r.Key, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
		}
		return nil
	})
	return Stream[K, V2]{b: s.b, node: n, keyChanged: s.keyChanged}
}

// SelectKey sets each record's key. A later aggregation repartitions.
func SelectKey[K, V, K2 any](s Stream[K, V], fn func(K, V) K2) Stream[K2, V] {
	n := addStateless(s.b, "KSTREAM-KEY-SELECT", s.node, func(ctx ProcessorContext[K2, V], r Record[K, V]) error {
		ctx.Forward(Record[K2, V]{Key: fn(r.Key, r.Value), Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers})
		return nil
	})
	return Stream[K2, V]{b: s.b, node: n, keyChanged: true}
}

// Process runs a Processor API processor on the stream, connected to the
// named stores (added with Builder.AddStateStore).
func Process[K, V, K2, V2 any](s Stream[K, V], supplier func() Processor[K, V, K2, V2], stores ...string) Stream[K2, V2] {
	name := s.b.newName("KSTREAM-PROCESSOR")
	AddProcessor(s.b, name, supplier, s.node)
	for _, st := range stores {
		s.b.connect(st, name)
	}
	return Stream[K2, V2]{b: s.b, node: name, keyChanged: true}
}

// GroupByKey groups by the current key; ks and vs serialize the repartition
// topic if the key was changed upstream.
func GroupByKey[K, V any](s Stream[K, V], ks Serde[K], vs Serde[V]) Grouped[K, V] {
	return Grouped[K, V]{s: s, ks: ks, vs: vs, repartition: s.keyChanged}
}

// GroupBy groups by a new key computed from each record; the aggregation
// reads it back through a repartition topic.
func GroupBy[K, V, K2 any](s Stream[K, V], fn func(K, V) K2, ks Serde[K2], vs Serde[V]) Grouped[K2, V] {
	sel := SelectKey(s, fn)
	return Grouped[K2, V]{s: sel, ks: ks, vs: vs, repartition: true}
}

// Aggregate folds each key's values into an aggregate kept in the store
// called name (changelog <application.id>-<name>-changelog; repartition
// topic, when needed, <application.id>-<name>-repartition), starting from
// init(). The table forwards every new aggregate.
func Aggregate[K, V, A any](g Grouped[K, V], name string, init func() A, agg func(K, V, A) A, as Serde[A]) Table[K, A] {
	return aggregate(g, name, func(k K, v V) A { return agg(k, v, init()) }, agg, as)
}

// aggregate stores first(k, v) for a new key and agg(k, v, old) after.
func aggregate[K, V, A any](g Grouped[K, V], name string, first func(K, V) A, agg func(K, V, A) A, as Serde[A]) Table[K, A] {
	b := g.s.b
	parent := g.s.node
	if g.repartition {
		topic := name + "-repartition"
		addSink(b, b.newName("KSTREAM-SINK"), topic, true, g.ks, g.vs, parent)
		parent = b.newName("KSTREAM-SOURCE")
		addSource(b, parent, true, g.ks, g.vs, topic)
	}
	proc := b.newName("KSTREAM-AGGREGATE")
	AddProcessor(b, proc, func() Processor[K, V, K, A] {
		return &aggProc[K, V, A]{store: name, first: first, agg: agg}
	}, parent)
	b.AddStateStore(KeyValueStoreBuilder(name, g.ks, as), proc)
	return Table[K, A]{b: b, node: proc, store: name}
}

type aggProc[K, V, A any] struct {
	store string
	first func(K, V) A
	agg   func(K, V, A) A
	ctx   ProcessorContext[K, A]
	kv    *KeyValueStore[K, A]
}

func (p *aggProc[K, V, A]) Init(ctx ProcessorContext[K, A]) error {
	p.ctx = ctx
	p.kv = GetKeyValueStore[K, A](ctx, p.store)
	return nil
}

// Process forwards the new aggregate with the larger of the record's
// timestamp and the old aggregate's, as Kafka's KStreamAggregate does.
func (p *aggProc[K, V, A]) Process(r Record[K, V]) error {
	old, oldTS, ok, err := p.kv.getTS(r.Key)
	if err != nil {
		return err
	}
	var v A
	ts := r.Timestamp.UnixMilli()
	if ok {
		v = p.agg(r.Key, r.Value, old)
		ts = max(ts, oldTS)
	} else {
		v = p.first(r.Key, r.Value)
	}
	if err := p.kv.putTS(r.Key, v, ts); err != nil {
		return err
	}
	p.ctx.Forward(Record[K, A]{Key: r.Key, Value: v, Timestamp: time.UnixMilli(ts), Headers: r.Headers})
	return nil
}

func (p *aggProc[K, V, A]) Close() error { return nil }

// Count counts each key's records into the store called name.
func Count[K, V any](g Grouped[K, V], name string) Table[K, int64] {
	return Aggregate(g, name, func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 }, Int64())
}

// Reduce combines each key's values with fn into the store called name; the
// first value of a key is stored as is.
func Reduce[K, V any](g Grouped[K, V], name string, fn func(agg, v V) V) Table[K, V] {
	return aggregate(g, name, func(_ K, v V) V { return v }, func(_ K, v V, agg V) V { return fn(agg, v) }, g.vs)
}

// ToStream is the table's stream of updates.
func (t Table[K, V]) ToStream() Stream[K, V] {
	return Stream[K, V]{b: t.b, node: t.node}
}

// StoreName is the name of the table's state store.
func (t Table[K, V]) StoreName() string { return t.store }
