package streams

import (
	"fmt"
	"maps"
	"slices"
)

// StoreBuilder describes a state store; each task builds its own instance.
type StoreBuilder interface {
	Name() string
	// logged says whether writes go to the changelog topic.
	logged() bool
	// changelogConfigs are the topic configs of the changelog.
	changelogConfigs() map[string]*string
	// build makes a task's instance; the task sets raw's log and now.
	build(changelogTopic string) (typed any, raw *kvStore)
}

// KeyValueStoreBuilder describes an in-memory key-value store whose writes
// go to the compacted changelog topic <application.id>-<name>-changelog and
// which is restored from that topic when a task starts.
func KeyValueStoreBuilder[K, V any](name string, ks Serde[K], vs Serde[V]) StoreBuilder {
	return &kvBuilder[K, V]{name: name, ks: ks, vs: vs, log: true}
}

type kvBuilder[K, V any] struct {
	name string
	ks   Serde[K]
	vs   Serde[V]
	log  bool
}

func (b *kvBuilder[K, V]) Name() string { return b.name }
func (b *kvBuilder[K, V]) logged() bool { return b.log }
func (b *kvBuilder[K, V]) changelogConfigs() map[string]*string {
	return map[string]*string{"cleanup.policy": ptr("compact")}
}
func (b *kvBuilder[K, V]) build(topic string) (any, *kvStore) {
	raw := newKVStore()
	return &KeyValueStore[K, V]{name: b.name, topic: topic, ks: b.ks, vs: b.vs, raw: raw}, raw
}

// kvStore holds a task's store as serialized bytes, the same bytes its
// changelog holds, so restoring is copying. Each value has a timestamp (the
// changelog record's), which aggregations forward as Kafka's timestamped
// stores do.
type kvStore struct {
	m   map[string][]byte
	ts  map[string]int64
	log func(k, v []byte, ts int64) // nil: not logged
	now func() int64                // the timestamp of a plain put
}

func newKVStore() *kvStore {
	return &kvStore{m: map[string][]byte{}, ts: map[string]int64{}, now: func() int64 { return -1 }}
}

// put writes k with the timestamp of the record being processed.
func (s *kvStore) put(k, v []byte) { s.putTS(k, v, s.now()) }

func (s *kvStore) putTS(k, v []byte, ts int64) {
	s.restore(k, v, ts)
	if s.log != nil {
		s.log(k, v, ts)
	}
}

// restore applies one changelog record; a nil value is a tombstone.
func (s *kvStore) restore(k, v []byte, ts int64) {
	if v == nil {
		delete(s.m, string(k))
		delete(s.ts, string(k))
		return
	}
	s.m[string(k)] = v
	s.ts[string(k)] = ts
}

// drop removes k locally, without a changelog record (expiry).
func (s *kvStore) drop(k string) {
	delete(s.m, k)
	delete(s.ts, k)
}

// KeyValueStore is a task's typed view of a key-value store.
type KeyValueStore[K, V any] struct {
	name  string
	topic string // serdes see the changelog topic, as in Kafka Streams
	ks    Serde[K]
	vs    Serde[V]
	raw   *kvStore
}

// GetKeyValueStore returns the store called name from a processor's context.
// It panics if the processor is not connected to that store or the store's
// types differ, both programming errors.
func GetKeyValueStore[K, V any](ctx interface{ StateStore(string) any }, name string) *KeyValueStore[K, V] {
	s, ok := ctx.StateStore(name).(*KeyValueStore[K, V])
	if !ok {
		panic(fmt.Sprintf("streams: state store %q is not a KeyValueStore of these types", name))
	}
	return s
}

// Name is the store's name.
func (s *KeyValueStore[K, V]) Name() string { return s.name }

// Get returns the value for k and whether it is present.
func (s *KeyValueStore[K, V]) Get(k K) (V, bool, error) {
	v, _, ok, err := s.getTS(k)
	return v, ok, err
}

// getTS is Get with the value's timestamp.
func (s *KeyValueStore[K, V]) getTS(k K) (V, int64, bool, error) {
	var zero V
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return zero, 0, false, err
	}
	vb, ok := s.raw.m[string(kb)]
	if !ok {
		return zero, 0, false, nil
	}
	v, err := s.vs.Deserialize(s.topic, vb)
	return v, s.raw.ts[string(kb)], err == nil, err
}

// Put sets k to v, with the timestamp of the record being processed.
func (s *KeyValueStore[K, V]) Put(k K, v V) error {
	kb, vb, err := s.encode(k, v)
	if err != nil {
		return err
	}
	s.raw.put(kb, vb)
	return nil
}

// putTS is Put with a timestamp of the caller's.
func (s *KeyValueStore[K, V]) putTS(k K, v V, ts int64) error {
	kb, vb, err := s.encode(k, v)
	if err != nil {
		return err
	}
	s.raw.putTS(kb, vb, ts)
	return nil
}

func (s *KeyValueStore[K, V]) encode(k K, v V) ([]byte, []byte, error) {
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return nil, nil, err
	}
	vb, err := s.vs.Serialize(s.topic, v)
	if err != nil {
		return nil, nil, err
	}
	if vb == nil {
		vb = []byte{} // a nil value would be a tombstone
	}
	return kb, vb, nil
}

// Delete removes k.
func (s *KeyValueStore[K, V]) Delete(k K) error {
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return err
	}
	s.raw.put(kb, nil)
	return nil
}

// Len is the number of keys.
func (s *KeyValueStore[K, V]) Len() int { return len(s.raw.m) }

// All calls fn for every entry in order of the serialized keys' bytes, until
// fn returns false.
func (s *KeyValueStore[K, V]) All(fn func(K, V) bool) error {
	for _, kb := range slices.Sorted(maps.Keys(s.raw.m)) {
		k, err := s.ks.Deserialize(s.topic, []byte(kb))
		if err != nil {
			return err
		}
		v, err := s.vs.Deserialize(s.topic, s.raw.m[kb])
		if err != nil {
			return err
		}
		if !fn(k, v) {
			return nil
		}
	}
	return nil
}
