package streams

import (
	"errors"
	"fmt"
	"time"
)

// collector receives what a task writes: sink records and changelog
// records. partition < 0 means "by key" (murmur2 of the key bytes).
type collector interface {
	send(topic string, partition int32, key, value []byte, ts int64, headers []Header)
}

// errSkip marks a record a deserialization handler chose to skip.
var errSkip = errors.New("skip")

// task runs one sub-topology for one partition: its own processor
// instances, stores and stream time. One goroutine drives it.
type task struct {
	id         TaskID
	appID      string
	sub        *subtopology
	nodes      map[string]*nodeCtx
	sources    map[string]*nodeCtx // by resolved topic
	stores     map[string]*storeInst
	out        collector
	streamTime int64
	current    *RecordMetadata
	currentTS  int64
	puncts     []*punctuation
	onDeserErr func(DeserializationContext, error) error // nil: fail
}

type storeInst struct {
	typed     any
	raw       *kvStore
	changelog string // "" when not logged
}

// nodeCtx is one node's runtime inside a task.
type nodeCtx struct {
	task     *task
	node     *node
	proc     procUntyped
	children []*nodeCtx
	topic    string // sinks: resolved topic
	err      error  // first error a forward down this node hit
}

type punctuation struct {
	typ       PunctuationType
	interval  int64 // ms
	next      int64 // ms on typ's clock
	fn        func(time.Time)
	cancelled bool
}

func (p *punctuation) Cancel() { p.cancelled = true }

func newTask(t *Topology, sub *subtopology, partition int32, appID string, out collector) *task {
	tk := &task{
		id: TaskID{sub.id, partition}, appID: appID, sub: sub,
		nodes: map[string]*nodeCtx{}, sources: map[string]*nodeCtx{}, stores: map[string]*storeInst{},
		out: out, streamTime: -1,
	}
	for _, name := range sub.stores {
		sb := t.stores[name]
		si := &storeInst{}
		si.typed, si.raw = sb.build(changelogTopic(appID, name))
		si.raw.now = func() int64 {
			if tk.current != nil {
				return tk.currentTS
			}
			return tk.streamTime
		}
		if sb.logged() {
			si.changelog = changelogTopic(appID, name)
			si.raw.log = func(k, v []byte, ts int64) { out.send(si.changelog, partition, k, v, ts, nil) }
		}
		tk.stores[name] = si
	}
	for _, name := range sub.nodes {
		n := t.nodes[name]
		nc := &nodeCtx{task: tk, node: n}
		if n.kind == processorNode {
			nc.proc = n.newProc()
		}
		if n.kind == sinkNode {
			nc.topic = topicRef{n.topics[0], n.internal}.resolve(appID)
		}
		tk.nodes[name] = nc
		if n.kind == sourceNode {
			for _, tp := range n.topics {
				tk.sources[topicRef{tp, n.internal}.resolve(appID)] = nc
			}
		}
	}
	for _, nc := range tk.nodes {
		for _, c := range nc.node.children {
			nc.children = append(nc.children, tk.nodes[c])
		}
	}
	return tk
}

func changelogTopic(appID, store string) string { return appID + "-" + store + "-changelog" }

// init calls every processor's Init, parents before children.
func (tk *task) init() error {
	for _, name := range tk.sub.nodes {
		nc := tk.nodes[name]
		if nc.proc != nil {
			if err := nc.proc.init(nc); err != nil {
				return fmt.Errorf("task %s: init %s: %w", tk.id, name, err)
			}
		}
	}
	return nil
}

func (tk *task) close() error {
	var errs []error
	for _, name := range tk.sub.nodes {
		if nc := tk.nodes[name]; nc.proc != nil {
			if err := nc.proc.close(); err != nil {
				errs = append(errs, fmt.Errorf("task %s: close %s: %w", tk.id, name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// process runs one input record through the sub-topology, then fires the
// stream-time punctuators it made due.
func (tk *task) process(topic string, partition int32, offset int64, key, value []byte, ts int64, headers []Header) error {
	src := tk.sources[topic]
	if src == nil {
		return fmt.Errorf("task %s: no source for topic %q", tk.id, topic)
	}
	k, v, err := src.node.deser(topic, key, value)
	if err != nil {
		err = fmt.Errorf("task %s: deserialize %s-%d@%d: %w", tk.id, topic, partition, offset, err)
		if tk.onDeserErr == nil {
			return err
		}
		return tk.onDeserErr(DeserializationContext{topic, partition, offset, key, value}, err)
	}
	tk.current = &RecordMetadata{topic, partition, offset}
	tk.currentTS = ts
	if ts > tk.streamTime {
		tk.streamTime = ts
	}
	err = src.forwardErr(rec{key: k, value: v, ts: ts, headers: headers}, nil)
	tk.current = nil
	if err != nil {
		return err
	}
	return tk.punctuate(StreamTime, tk.streamTime)
}

// forwardErr hands r to the children and returns the first error any
// processor below returned.
func (nc *nodeCtx) forwardErr(r rec, only []string) error {
	nc.forward(r, only)
	err := nc.err
	nc.err = nil
	return err
}

func (nc *nodeCtx) forward(r rec, only []string) {
	for _, c := range nc.children {
		if len(only) > 0 && !contains(only, c.node.name) {
			continue
		}
		if err := c.receive(r); err != nil && nc.err == nil {
			nc.err = err
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (nc *nodeCtx) receive(r rec) error {
	switch nc.node.kind {
	case sinkNode:
		k, v, err := nc.node.ser(nc.topic, r)
		if err != nil {
			return fmt.Errorf("sink %s: serialize: %w", nc.node.name, err)
		}
		nc.task.out.send(nc.topic, -1, k, v, r.ts, r.headers)
		return nil
	default:
		if err := nc.proc.process(r); err != nil {
			return fmt.Errorf("processor %s: %w", nc.node.name, err)
		}
		err := nc.err
		nc.err = nil
		return err
	}
}

func (tk *task) schedule(iv time.Duration, typ PunctuationType, fn func(time.Time)) Cancellable {
	ms := iv.Milliseconds()
	if ms < 1 {
		panic("streams: punctuation interval below 1ms")
	}
	p := &punctuation{typ: typ, interval: ms, fn: fn}
	if typ == WallClockTime {
		p.next = time.Now().UnixMilli() + ms
	}
	tk.puncts = append(tk.puncts, p)
	return p
}

// punctuate fires the punctuators of clock typ due at now. A punctuator
// that missed several intervals fires once and is rescheduled on its grid.
func (tk *task) punctuate(typ PunctuationType, now int64) error {
	if now < 0 {
		return nil
	}
	for _, p := range tk.puncts {
		if p.cancelled || p.typ != typ || now < p.next {
			continue
		}
		missed := (now - p.next) / p.interval
		p.next += (missed + 1) * p.interval
		p.fn(time.UnixMilli(now))
	}
	live := tk.puncts[:0]
	for _, p := range tk.puncts {
		if !p.cancelled {
			live = append(live, p)
		}
	}
	tk.puncts = live
	// Errors from Forward inside a punctuator surface on the nodes.
	for _, name := range tk.sub.nodes {
		if nc := tk.nodes[name]; nc.err != nil {
			err := nc.err
			nc.err = nil
			return err
		}
	}
	return nil
}
