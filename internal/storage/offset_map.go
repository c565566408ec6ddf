package storage

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap maps record keys to the latest offset seen for them, in a fixed
// amount of memory (Kafka's SkimpyOffsetMap). Keys are not stored: each slot
// holds the 16-byte MD5 of a key and an 8-byte offset, and lookups probe
// linearly from the slot the hash names. Two keys with the same MD5 would
// share an entry, so the older one's latest record could be cleaned away;
// Kafka accepts that risk (2^-128 per pair) and so do we.
//
// The cleaner fills the map only up to loadFactor of its slots, so probe
// chains stay short, and stops reading the dirty section where it is full
// (cleaning then covers only the part it read).
type offsetMap struct {
	slots    []byte // capacity * offsetMapSlotSize
	capacity int
	entries  int
	latest   int64 // largest offset put; -1 when empty
	// maxCapacity is the slot budget of log.cleaner.dedupe.buffer.size.
	// The map is sized per pass to what the dirty section can need, so a
	// broker that compacts small logs (__consumer_offsets) does not keep the
	// whole budget resident.
	maxCapacity int
}

const (
	offsetMapHashSize = md5.Size
	offsetMapSlotSize = offsetMapHashSize + 8
	// offsetMapLoadFactor is Kafka's log.cleaner.io.buffer.load.factor.
	offsetMapLoadFactor = 0.9
)

// newOffsetMap makes a map that may use up to about memory bytes (at least
// one slot). It allocates nothing until reset sizes it.
func newOffsetMap(memory int64) *offsetMap {
	return &offsetMap{maxCapacity: max(int(memory/offsetMapSlotSize), 1), latest: -1}
}

// reset empties the map and sizes it for at most need keys, within the
// memory budget. Its buffer is reused when large enough, and given back
// when four times larger than needed.
func (m *offsetMap) reset(need int) {
	n := min(max(int(float64(need)/offsetMapLoadFactor)+1, 1), m.maxCapacity)
	size := n * offsetMapSlotSize
	if cap(m.slots) < size || cap(m.slots) > 4*size {
		m.slots = make([]byte, size)
	} else {
		m.slots = m.slots[:size]
		clear(m.slots)
	}
	m.capacity, m.entries, m.latest = n, 0, -1
}

// maxEntries is how many keys the cleaner puts before it calls the map full.
func (m *offsetMap) maxEntries() int { return max(int(float64(m.capacity)*offsetMapLoadFactor), 1) }

func hashKey(key []byte) [offsetMapHashSize]byte { return md5.Sum(key) }

// slot finds the slot holding h, or the empty slot where it would go. An
// all-zero hash marks an empty slot; MD5 never yields it in practice.
func (m *offsetMap) slot(h *[offsetMapHashSize]byte) (i int, found bool) {
	i = int(binary.BigEndian.Uint64(h[:8]) % uint64(m.capacity))
	for {
		s := m.slots[i*offsetMapSlotSize : i*offsetMapSlotSize+offsetMapHashSize]
		if string(s) == string(h[:]) {
			return i, true
		}
		if isZero(s) {
			return i, false
		}
		if i++; i == m.capacity {
			i = 0
		}
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// put records offset as the latest for the key hashed to h. The caller
// keeps entries below capacity (maxEntries), so an empty slot always exists.
func (m *offsetMap) put(h [offsetMapHashSize]byte, offset int64) {
	i, found := m.slot(&h)
	p := i * offsetMapSlotSize
	if !found {
		copy(m.slots[p:], h[:])
		m.entries++
	}
	binary.BigEndian.PutUint64(m.slots[p+offsetMapHashSize:], uint64(offset))
	m.latest = max(m.latest, offset)
}

// get returns the latest offset recorded for the key hashed to h.
func (m *offsetMap) get(h [offsetMapHashSize]byte) (int64, bool) {
	i, found := m.slot(&h)
	if !found {
		return -1, false
	}
	p := i*offsetMapSlotSize + offsetMapHashSize
	return int64(binary.BigEndian.Uint64(m.slots[p:])), true
}
