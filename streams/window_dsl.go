package streams

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// TimeWindowedStream is a grouped stream cut into time windows, ready for a
// windowed aggregation (Kafka's TimeWindowedKStream).
type TimeWindowedStream[K, V any] struct {
	g Grouped[K, V]
	w TimeWindows
}

// WindowedBy cuts a grouped stream into the windows w.
func WindowedBy[K, V any](g Grouped[K, V], w TimeWindows) TimeWindowedStream[K, V] {
	if err := w.validate(); err != nil {
		g.s.b.errs = append(g.s.b.errs, fmt.Errorf("windowedBy: %w", err))
	}
	return TimeWindowedStream[K, V]{g: g, w: w}
}

// AggregateWindows folds each key's values in each window into an
// aggregate, starting from init(), kept in the window store called name
// (changelog <application.id>-<name>-changelog) for the windows' size plus
// grace. A record is added to every window holding its timestamp whose
// end is after the processor's stream time minus the grace; for the
// others (closed windows) it is dropped and logged. Every new aggregate is
// forwarded with its Windowed key.
func AggregateWindows[K, V, A any](s TimeWindowedStream[K, V], name string, init func() A, agg func(K, V, A) A, as Serde[A]) Table[Windowed[K], A] {
	return aggregateWindows(s, name, func(k K, v V) A { return agg(k, v, init()) }, agg, as)
}

// CountWindows counts each key's records per window.
func CountWindows[K, V any](s TimeWindowedStream[K, V], name string) Table[Windowed[K], int64] {
	return AggregateWindows(s, name, func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 }, Int64())
}

// ReduceWindows combines each key's values per window with fn; the first
// value of a key in a window is stored as is.
func ReduceWindows[K, V any](s TimeWindowedStream[K, V], name string, fn func(agg, v V) V) Table[Windowed[K], V] {
	return aggregateWindows(s, name, func(_ K, v V) V { return v }, func(_ K, v V, a V) V { return fn(a, v) }, s.g.vs)
}

func aggregateWindows[K, V, A any](s TimeWindowedStream[K, V], name string, first func(K, V) A, agg func(K, V, A) A, as Serde[A]) Table[Windowed[K], A] {
	g := s.g
	b := g.s.b
	parent := g.s.node
	if g.repartition {
		topic := name + "-repartition"
		addSink(b, b.newName("KSTREAM-SINK"), topic, true, g.ks, g.vs, parent)
		parent = b.newName("KSTREAM-SOURCE")
		addSource(b, parent, true, g.ks, g.vs, topic)
	}
	size, _, grace := s.w.ms()
	proc := b.newName("KSTREAM-AGGREGATE")
	AddProcessor(b, proc, func() Processor[K, V, Windowed[K], A] {
		return &windowAggProc[K, V, A]{store: name, w: s.w, first: first, agg: agg, observed: -1}
	}, parent)
	b.AddStateStore(WindowStoreBuilder(name, g.ks, as, s.w.Size, s.w.Size+s.w.Grace), proc)
	return Table[Windowed[K], A]{b: b, node: proc, store: name, windowed: true, windowSize: size, grace: grace, keySerde: any(g.ks)}
}

type windowAggProc[K, V, A any] struct {
	store      string
	w          TimeWindows
	first      func(K, V) A
	agg        func(K, V, A) A
	ctx        ProcessorContext[Windowed[K], A]
	ws         *WindowStore[K, A]
	observed   int64 // the largest timestamp this processor has seen
	nextExpiry int64
}

func (p *windowAggProc[K, V, A]) Init(ctx ProcessorContext[Windowed[K], A]) error {
	p.ctx = ctx
	p.ws = GetWindowStore[K, A](ctx, p.store)
	return nil
}

func (p *windowAggProc[K, V, A]) Process(r Record[K, V]) error {
	ts := r.Timestamp.UnixMilli()
	if ts < 0 {
		return nil // Kafka skips records with an invalid timestamp
	}
	_, advance, grace := p.w.ms()
	p.observed = max(p.observed, ts)
	if p.observed >= p.nextExpiry {
		// A sweep of the whole store, so at most once per advance of
		// stream time.
		p.ws.expire(p.observed)
		p.nextExpiry = p.observed + advance
	}
	closeTime := p.observed - grace
	for _, win := range p.w.windowsFor(ts) {
		if win.End <= closeTime {
			continue // the window has closed: a late record
		}
		old, oldTS, ok, err := p.ws.fetchTS(r.Key, win.Start)
		if err != nil {
			return err
		}
		var v A
		newTS := ts
		if ok {
			v = p.agg(r.Key, r.Value, old)
			newTS = max(ts, oldTS) // Kafka's: the window's latest record time
		} else {
			v = p.first(r.Key, r.Value)
		}
		if err := p.ws.putTS(r.Key, v, win.Start, newTS); err != nil {
			return err
		}
		p.ctx.Forward(Record[Windowed[K], A]{Key: Windowed[K]{r.Key, win}, Value: v, Timestamp: time.UnixMilli(newTS), Headers: r.Headers})
	}
	return nil
}

func (p *windowAggProc[K, V, A]) Close() error { return nil }

// SuppressUntilWindowCloses holds back a windowed table's updates and
// forwards only each window's final result, once the stream time (the
// largest timestamp of the updates seen) passes the window's end plus the
// grace (Kafka's suppress(Suppressed.untilWindowCloses(unbounded()))).
// Results go out in order of window end, then key bytes. The buffer is a
// key-value store called name, logged to its changelog, so a restarted
// task still emits what it held. t must come from a windowed aggregation;
// vs serializes its values in the buffer.
func SuppressUntilWindowCloses[K, V any](t Table[Windowed[K], V], name string, vs Serde[V]) Table[Windowed[K], V] {
	b := t.b
	ks, _ := t.keySerde.(Serde[K])
	if !t.windowed || ks == nil {
		b.errs = append(b.errs, fmt.Errorf("suppress %q: the table is not the result of a windowed aggregation", name))
		return t
	}
	wks := TimeWindowedSerde(ks, 0)
	proc := b.newName("KTABLE-SUPPRESS")
	AddProcessor(b, proc, func() Processor[Windowed[K], V, Windowed[K], V] {
		return &suppressProc[K, V]{store: name, grace: t.grace, size: t.windowSize, ks: ks, vs: vs, observed: -1}
	}, t.node)
	b.AddStateStore(KeyValueStoreBuilder(name, wks, Bytes()), proc)
	t.node, t.store = proc, name
	return t
}

type suppressProc[K, V any] struct {
	store       string
	grace, size int64
	ks          Serde[K]
	vs          Serde[V]
	ctx         ProcessorContext[Windowed[K], V]
	buf         *KeyValueStore[Windowed[K], []byte]
	observed    int64
}

func (p *suppressProc[K, V]) Init(ctx ProcessorContext[Windowed[K], V]) error {
	p.ctx = ctx
	p.buf = GetKeyValueStore[Windowed[K], []byte](ctx, p.store)
	return nil
}

// A buffered value is the record timestamp (8 bytes) and the value's bytes.
func (p *suppressProc[K, V]) Process(r Record[Windowed[K], V]) error {
	ts := r.Timestamp.UnixMilli()
	advanced := ts > p.observed
	p.observed = max(p.observed, ts)
	vb, err := p.vs.Serialize(p.buf.topic, r.Value)
	if err != nil {
		return err
	}
	if err := p.buf.Put(r.Key, append(binary.BigEndian.AppendUint64(nil, uint64(ts)), vb...)); err != nil {
		return err
	}
	if !advanced && r.Key.Window.End > p.observed-p.grace {
		return nil // nothing closed since the last look
	}
	return p.emit()
}

type buffered[K any] struct {
	key Windowed[K]
	kb  string
	val []byte
}

// emit forwards and removes every buffered window that has closed.
func (p *suppressProc[K, V]) emit() error {
	var due []buffered[K]
	for kb, vb := range p.buf.raw.m {
		if len(kb) < 8 {
			continue
		}
		start := int64(binary.BigEndian.Uint64([]byte(kb[len(kb)-8:])))
		if start+p.size > p.observed-p.grace {
			continue
		}
		k, err := p.ks.Deserialize(p.buf.topic, []byte(kb[:len(kb)-8]))
		if err != nil {
			return err
		}
		due = append(due, buffered[K]{Windowed[K]{k, Window{start, start + p.size}}, kb, vb})
	}
	slices.SortFunc(due, func(a, b buffered[K]) int {
		return cmp.Or(cmp.Compare(a.key.Window.End, b.key.Window.End), cmp.Compare(a.kb, b.kb))
	})
	for _, d := range due {
		v, err := p.vs.Deserialize(p.buf.topic, d.val[8:])
		if err != nil {
			return err
		}
		p.buf.raw.put([]byte(d.kb), nil)
		ts := int64(binary.BigEndian.Uint64(d.val[:8]))
		p.ctx.Forward(Record[Windowed[K], V]{Key: d.key, Value: v, Timestamp: time.UnixMilli(ts)})
	}
	return nil
}

func (p *suppressProc[K, V]) Close() error { return nil }
