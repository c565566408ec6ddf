package streams

import (
	"encoding/binary"
	"maps"
	"slices"
	"strconv"
	"time"
)

// WindowStoreBuilder describes an in-memory window store: for each key and
// window start, a value. Its changelog <application.id>-<name>-changelog
// is compacted and deleted (cleanup.policy=compact,delete) with
// retention.ms = retention + 1 day, as Kafka Streams makes it
// (windowstore.changelog.additional.retention.ms); the store itself drops
// windows that start more than retention before the stream time. size is
// the windows' size, which Windowed keys read back from the store carry.
func WindowStoreBuilder[K, V any](name string, ks Serde[K], vs Serde[V], size, retention time.Duration) StoreBuilder {
	return &windowBuilder[K, V]{name: name, ks: ks, vs: vs, size: size.Milliseconds(), retention: retention.Milliseconds()}
}

type windowBuilder[K, V any] struct {
	name            string
	ks              Serde[K]
	vs              Serde[V]
	size, retention int64
}

func (b *windowBuilder[K, V]) Name() string { return b.name }
func (b *windowBuilder[K, V]) logged() bool { return true }
func (b *windowBuilder[K, V]) changelogConfigs() map[string]*string {
	ret := strconv.FormatInt(b.retention+24*time.Hour.Milliseconds(), 10)
	return map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": &ret}
}
func (b *windowBuilder[K, V]) build(topic string) (any, *kvStore) {
	raw := newKVStore()
	return &WindowStore[K, V]{name: b.name, topic: topic, ks: b.ks, vs: b.vs, raw: raw, size: b.size, retention: b.retention}, raw
}

func ptr(s string) *string { return &s }

// WindowStore is a task's typed view of a window store. Keys are stored as
// Kafka's window key schema: the key's bytes, the window start (8 bytes,
// big-endian) and a sequence number (4 bytes, always 0 here).
type WindowStore[K, V any] struct {
	name            string
	topic           string
	ks              Serde[K]
	vs              Serde[V]
	raw             *kvStore
	size, retention int64
}

// GetWindowStore returns the window store called name from a processor's
// context; it panics if the processor is not connected to it or the types
// differ.
func GetWindowStore[K, V any](ctx interface{ StateStore(string) any }, name string) *WindowStore[K, V] {
	s, ok := ctx.StateStore(name).(*WindowStore[K, V])
	if !ok {
		panic("streams: state store " + strconv.Quote(name) + " is not a WindowStore of these types")
	}
	return s
}

// Name is the store's name.
func (s *WindowStore[K, V]) Name() string { return s.name }

func (s *WindowStore[K, V]) key(k K, start int64) ([]byte, error) {
	kb, err := s.ks.Serialize(s.topic, k)
	if err != nil {
		return nil, err
	}
	b := binary.BigEndian.AppendUint64(append([]byte(nil), kb...), uint64(start))
	return binary.BigEndian.AppendUint32(b, 0), nil
}

// Fetch returns the value of k in the window starting at start.
func (s *WindowStore[K, V]) Fetch(k K, start int64) (V, bool, error) {
	v, _, ok, err := s.fetchTS(k, start)
	return v, ok, err
}

func (s *WindowStore[K, V]) fetchTS(k K, start int64) (V, int64, bool, error) {
	var zero V
	kb, err := s.key(k, start)
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

// Put sets k's value in the window starting at start, with the timestamp
// of the record being processed.
func (s *WindowStore[K, V]) Put(k K, v V, start int64) error {
	return s.putTS(k, v, start, s.raw.now())
}

func (s *WindowStore[K, V]) putTS(k K, v V, start, ts int64) error {
	kb, err := s.key(k, start)
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
	s.raw.putTS(kb, vb, ts)
	return nil
}

// Len is the number of (key, window) entries.
func (s *WindowStore[K, V]) Len() int { return len(s.raw.m) }

// All calls fn for every entry, in order of the stored key bytes, until fn
// returns false.
func (s *WindowStore[K, V]) All(fn func(Windowed[K], V) bool) error {
	for _, kb := range slices.Sorted(maps.Keys(s.raw.m)) {
		if len(kb) < 12 {
			continue
		}
		k, err := s.ks.Deserialize(s.topic, []byte(kb[:len(kb)-12]))
		if err != nil {
			return err
		}
		v, err := s.vs.Deserialize(s.topic, s.raw.m[kb])
		if err != nil {
			return err
		}
		start := int64(binary.BigEndian.Uint64([]byte(kb[len(kb)-12 : len(kb)-4])))
		if !fn(Windowed[K]{k, Window{start, start + s.size}}, v) {
			return nil
		}
	}
	return nil
}

// expire drops the windows that start before streamTime - retention + 1,
// as Kafka's window stores do; the changelog's own retention removes them
// there, so nothing is logged.
func (s *WindowStore[K, V]) expire(streamTime int64) {
	before := streamTime - s.retention + 1
	for kb := range s.raw.m {
		if len(kb) >= 12 && int64(binary.BigEndian.Uint64([]byte(kb[len(kb)-12:len(kb)-4]))) < before {
			s.raw.drop(kb)
		}
	}
}
