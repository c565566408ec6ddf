package wire

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// VersionRange is the inclusive range of versions served for one API key.
type VersionRange struct {
	Key      kmsg.Key
	Min, Max int16
}

// VersionTable is the set of APIs a listener serves. It is built once, by
// the broker, from the handlers it has; ApiVersions answers from it.
//
// It may also list APIs the listener refuses: ones it does not serve but
// that a Kafka broker would accept, which are answered with an error
// (ErrorResponse) rather than by closing the connection. They are never
// advertised.
type VersionTable struct {
	ranges  map[int16]VersionRange
	refused map[int16][]VersionRange
}

// NewVersionTable builds a table. Each range's Max must be a version kmsg
// can encode.
func NewVersionTable(ranges ...VersionRange) *VersionTable {
	t := &VersionTable{ranges: make(map[int16]VersionRange, len(ranges))}
	for _, r := range ranges {
		if max := kmsg.RequestForKey(int16(r.Key)).MaxVersion(); r.Max > max {
			panic("wire: " + r.Key.Name() + " advertised beyond what kmsg encodes")
		}
		t.ranges[int16(r.Key)] = r
	}
	return t
}

// Refuse adds ranges of APIs the table refuses (see VersionTable) and
// returns t. A range must not overlap a served one, and its Max must be a
// version kmsg can decode.
func (t *VersionTable) Refuse(ranges ...VersionRange) *VersionTable {
	if t.refused == nil {
		t.refused = make(map[int16][]VersionRange)
	}
	for _, r := range ranges {
		if max := kmsg.RequestForKey(int16(r.Key)).MaxVersion(); r.Max > max {
			panic("wire: " + r.Key.Name() + " refused beyond what kmsg decodes")
		}
		if s, ok := t.ranges[int16(r.Key)]; ok && r.Min <= s.Max && s.Min <= r.Max {
			panic("wire: " + r.Key.Name() + " both served and refused")
		}
		t.refused[int16(r.Key)] = append(t.refused[int16(r.Key)], r)
	}
	return t
}

// Refuses reports whether key at version is refused with an error.
func (t *VersionTable) Refuses(key, version int16) bool {
	for _, r := range t.refused[key] {
		if version >= r.Min && version <= r.Max {
			return true
		}
	}
	return false
}

// Serves reports whether key at version is served.
func (t *VersionTable) Serves(key, version int16) bool {
	r, ok := t.ranges[key]
	return ok && version >= r.Min && version <= r.Max
}

// Range returns the served range of key.
func (t *VersionTable) Range(key int16) (VersionRange, bool) {
	r, ok := t.ranges[key]
	return r, ok
}

// All returns every served range, sorted by key.
func (t *VersionTable) All() []VersionRange {
	out := make([]VersionRange, 0, len(t.ranges))
	for _, r := range t.ranges {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
