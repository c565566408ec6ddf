package streams

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

type nodeKind int

const (
	sourceNode nodeKind = iota
	processorNode
	sinkNode
)

// node is one vertex of the topology as built; tasks instantiate it.
type node struct {
	name     string
	kind     nodeKind
	parents  []string
	children []string // filled by Build

	// Sources and sinks: topics, and whether they are internal
	// (repartition) topics that the runtime prefixes with the application id.
	topics   []string
	internal bool
	deser    func(topic string, k, v []byte) (key, value any, err error)
	ser      func(topic string, r rec) (k, v []byte, err error)

	newProc func() procUntyped
	stores  []string
}

func (n *node) hasStore(name string) bool { return slices.Contains(n.stores, name) }

// Builder builds a topology, through the Processor API (AddSource,
// AddProcessor, AddSink, AddStateStore) or the DSL (From and the Stream,
// Table and grouping operations), or both. It is not safe for concurrent use.
// Mistakes (a duplicate name, an unknown parent) are reported by Build.
type Builder struct {
	nodes   []*node
	byName  map[string]*node
	stores  map[string]StoreBuilder
	counter int
	errs    []error
}

// NewBuilder returns an empty topology builder.
func NewBuilder() *Builder {
	return &Builder{byName: map[string]*node{}, stores: map[string]StoreBuilder{}}
}

// newName is Kafka Streams' generated processor name: PREFIX-0000000007.
func (b *Builder) newName(prefix string) string {
	n := fmt.Sprintf("%s-%010d", prefix, b.counter)
	b.counter++
	return n
}

func (b *Builder) add(n *node) {
	if _, dup := b.byName[n.name]; dup {
		b.errs = append(b.errs, fmt.Errorf("processor name %q used twice", n.name))
		return
	}
	for _, p := range n.parents {
		if pn, ok := b.byName[p]; !ok {
			b.errs = append(b.errs, fmt.Errorf("processor %q: parent %q does not exist", n.name, p))
		} else if pn.kind == sinkNode {
			b.errs = append(b.errs, fmt.Errorf("processor %q: parent %q is a sink", n.name, p))
		}
	}
	b.nodes = append(b.nodes, n)
	b.byName[n.name] = n
}

// AddSource adds a source node reading topics with the given serdes.
func AddSource[K, V any](b *Builder, name string, ks Serde[K], vs Serde[V], topics ...string) {
	addSource(b, name, false, ks, vs, topics...)
}

func addSource[K, V any](b *Builder, name string, internal bool, ks Serde[K], vs Serde[V], topics ...string) {
	if len(topics) == 0 {
		b.errs = append(b.errs, fmt.Errorf("source %q: no topics", name))
	}
	b.add(&node{name: name, kind: sourceNode, topics: topics, internal: internal,
		deser: func(topic string, kb, vb []byte) (any, any, error) {
			k, err := ks.Deserialize(topic, kb)
			if err != nil {
				return nil, nil, fmt.Errorf("key: %w", err)
			}
			v, err := vs.Deserialize(topic, vb)
			if err != nil {
				return nil, nil, fmt.Errorf("value: %w", err)
			}
			return k, v, nil
		}})
}

// AddProcessor adds a processor node; supplier makes one Processor per task.
func AddProcessor[KI, VI, KO, VO any](b *Builder, name string, supplier func() Processor[KI, VI, KO, VO], parents ...string) {
	b.add(&node{name: name, kind: processorNode, parents: parents,
		newProc: func() procUntyped { return typedProc[KI, VI, KO, VO]{supplier()} }})
}

// AddSink adds a sink node writing to topic with the given serdes. Records go
// to the partition the murmur2 hash of their serialized key picks, as in
// Kafka's default partitioner.
func AddSink[K, V any](b *Builder, name, topic string, ks Serde[K], vs Serde[V], parents ...string) {
	addSink(b, name, topic, false, ks, vs, parents...)
}

func addSink[K, V any](b *Builder, name, topic string, internal bool, ks Serde[K], vs Serde[V], parents ...string) {
	b.add(&node{name: name, kind: sinkNode, parents: parents, topics: []string{topic}, internal: internal,
		ser: func(topic string, r rec) ([]byte, []byte, error) {
			t := fromRec[K, V](r)
			kb, err := ks.Serialize(topic, t.Key)
			if err != nil {
				return nil, nil, fmt.Errorf("key: %w", err)
			}
			vb, err := vs.Serialize(topic, t.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("value: %w", err)
			}
			return kb, vb, nil
		}})
}

// AddStateStore adds a store and connects it to the named processors.
func (b *Builder) AddStateStore(s StoreBuilder, processors ...string) {
	if _, dup := b.stores[s.Name()]; dup {
		b.errs = append(b.errs, fmt.Errorf("state store %q added twice", s.Name()))
		return
	}
	b.stores[s.Name()] = s
	for _, p := range processors {
		b.connect(s.Name(), p)
	}
}

// connect gives processor p access to store.
func (b *Builder) connect(store, p string) {
	n, ok := b.byName[p]
	if !ok || n.kind != processorNode {
		b.errs = append(b.errs, fmt.Errorf("state store %q: %q is not a processor", store, p))
		return
	}
	n.stores = append(n.stores, store)
}

// Topology is a built, immutable topology. Nodes connected by edges or a
// shared store form a sub-topology; each sub-topology runs as one task per
// partition of its source topics.
type Topology struct {
	nodes  map[string]*node
	stores map[string]StoreBuilder
	subs   []*subtopology
}

type subtopology struct {
	id      int
	nodes   []string // in insertion order, so parents come before children
	sources []*node
	sinks   []*node
	stores  []string
}

// topicRef is a topic as named in the topology: internal ones get the
// application id prefix at run time.
type topicRef struct {
	name     string
	internal bool
}

func (t topicRef) resolve(appID string) string {
	if t.internal {
		return appID + "-" + t.name
	}
	return t.name
}

func (s *subtopology) sourceTopics() []topicRef {
	var ts []topicRef
	for _, n := range s.sources {
		for _, t := range n.topics {
			ts = append(ts, topicRef{t, n.internal})
		}
	}
	return ts
}

// Build checks the topology and splits it into sub-topologies.
func (b *Builder) Build() (*Topology, error) {
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("streams: invalid topology: %w", errors.Join(b.errs...))
	}
	if len(b.nodes) == 0 {
		return nil, errors.New("streams: invalid topology: no nodes")
	}
	topicOwner := map[string]string{}
	for _, n := range b.nodes {
		n.children = nil
		if n.kind == sourceNode {
			for _, t := range n.topics {
				if o, dup := topicOwner[t]; dup {
					return nil, fmt.Errorf("streams: invalid topology: topic %q read by both %q and %q", t, o, n.name)
				}
				topicOwner[t] = n.name
			}
		}
	}
	for _, n := range b.nodes {
		for _, p := range n.parents {
			b.byName[p].children = append(b.byName[p].children, n.name)
		}
	}

	// Union-find over edges and shared stores.
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if parent[x] == "" || parent[x] == x {
			return x
		}
		r := find(parent[x])
		parent[x] = r
		return r
	}
	union := func(a, c string) {
		if ra, rc := find(a), find(c); ra != rc {
			parent[rc] = ra
		}
	}
	storeUser := map[string]string{}
	for _, n := range b.nodes {
		for _, p := range n.parents {
			union(p, n.name)
		}
		for _, s := range n.stores {
			if u, ok := storeUser[s]; ok {
				union(u, n.name)
			} else {
				storeUser[s] = n.name
			}
		}
	}
	t := &Topology{nodes: b.byName, stores: b.stores}
	byRoot := map[string]*subtopology{}
	for _, n := range b.nodes {
		r := find(n.name)
		s := byRoot[r]
		if s == nil {
			s = &subtopology{id: len(t.subs)}
			byRoot[r] = s
			t.subs = append(t.subs, s)
		}
		s.nodes = append(s.nodes, n.name)
		switch n.kind {
		case sourceNode:
			s.sources = append(s.sources, n)
		case sinkNode:
			s.sinks = append(s.sinks, n)
		}
		for _, st := range n.stores {
			if !slices.Contains(s.stores, st) {
				s.stores = append(s.stores, st)
			}
		}
	}
	for _, n := range b.nodes {
		for _, st := range n.stores {
			if _, ok := b.stores[st]; !ok {
				return nil, fmt.Errorf("streams: invalid topology: processor %q uses state store %q, which was never added", n.name, st)
			}
		}
	}
	for _, s := range t.subs {
		if len(s.sources) == 0 {
			return nil, fmt.Errorf("streams: invalid topology: processors %v have no source", s.nodes)
		}
		sort.Strings(s.stores)
	}
	return t, nil
}

// String describes the topology like Kafka Streams' TopologyDescription.
func (t *Topology) String() string {
	var out string
	for _, s := range t.subs {
		out += fmt.Sprintf("Sub-topology: %d\n", s.id)
		for _, name := range s.nodes {
			n := t.nodes[name]
			switch n.kind {
			case sourceNode:
				out += fmt.Sprintf("  Source: %s (topics: %v)\n", n.name, n.topics)
			case sinkNode:
				out += fmt.Sprintf("  Sink: %s (topic: %s)\n", n.name, n.topics[0])
			default:
				out += fmt.Sprintf("  Processor: %s (stores: %v)\n", n.name, n.stores)
			}
			if len(n.children) > 0 {
				out += fmt.Sprintf("    --> %v\n", n.children)
			}
		}
	}
	return out
}
