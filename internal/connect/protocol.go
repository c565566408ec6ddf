package connect

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
)

// Connect's group protocol bytes (Kafka's ConnectProtocol and
// IncrementalCooperativeConnectProtocol), all big-endian:
//
//	metadata V1 ("compatible"):
//	  version int16 | url string | config_offset int64 | allocation nullable bytes
//	  (allocation: the member's current assignment, encoded as below)
//	assignment V1:
//	  version int16 | error int16 | leader string | leader_url string |
//	  config_offset int64 | assignment [connector string, [task int32]] |
//	  revoked [connector string, [task int32]] | delay int32
//
// A string is an int16 length and bytes, an array an int32 count (-1:
// null), nullable bytes an int32 length (-1: null). Task -1 names the
// connector itself. V0 (eager "default") metadata ends after
// config_offset and its assignment after the first array; V2
// ("sessioned") has V1's layout.

const (
	connectProtocolV1 = 1
	connectorTaskID   = -1 // the task id that stands for the connector
)

// workerMeta is a member's JoinGroup metadata.
type workerMeta struct {
	url          string
	configOffset int64
	held         assignment // what the member runs now; nil: nothing known
}

// connectAssignment is one member's SyncGroup assignment: assigned holds
// only what is new for the member (it keeps what it ran minus revoked).
type connectAssignment struct {
	errCode           int16
	leader, leaderURL string
	configOffset      int64
	assigned, revoked assignment
	delay             int32 // ms until the member should rejoin (scheduled rebalance)
}

func encodeMetadata(m workerMeta) []byte {
	b := binary.BigEndian.AppendUint16(nil, connectProtocolV1)
	b = putString(b, m.url)
	b = binary.BigEndian.AppendUint64(b, uint64(m.configOffset))
	if m.held == nil {
		return binary.BigEndian.AppendUint32(b, ^uint32(0))
	}
	alloc := connectAssignment{configOffset: m.configOffset, assigned: m.held}.encode()
	b = binary.BigEndian.AppendUint32(b, uint32(len(alloc)))
	return append(b, alloc...)
}

func (a connectAssignment) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, connectProtocolV1)
	b = binary.BigEndian.AppendUint16(b, uint16(a.errCode))
	b = putString(b, a.leader)
	b = putString(b, a.leaderURL)
	b = binary.BigEndian.AppendUint64(b, uint64(a.configOffset))
	b = appendUnits(b, a.assigned)
	b = appendUnits(b, a.revoked)
	return binary.BigEndian.AppendUint32(b, uint32(a.delay))
}

func putString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// appendUnits writes units grouped by connector (sorted), the connector
// id first, then its tasks in order.
func appendUnits(b []byte, a assignment) []byte {
	byConn := map[string][]int{}
	for u := range a {
		byConn[u.conn] = append(byConn[u.conn], u.task)
	}
	names := make([]string, 0, len(byConn))
	for n := range byConn {
		names = append(names, n)
	}
	slices.Sort(names)
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		ids := byConn[n]
		slices.Sort(ids)
		b = putString(b, n)
		b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
		for _, id := range ids {
			b = binary.BigEndian.AppendUint32(b, uint32(int32(id)))
		}
	}
	return b
}

// reader decodes the protocol's types, remembering the first error.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("connect protocol: message too short")

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		if r.err == nil {
			r.err = errShort
		}
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	if p := r.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *reader) int32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *reader) int64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *reader) string() string {
	n := r.int16()
	return strings.Clone(string(r.take(int(n))))
}

func (r *reader) units() assignment {
	n := r.int32()
	if n < 0 || r.err != nil {
		return nil
	}
	out := assignment{}
	for range n {
		conn := r.string()
		m := r.int32()
		for range max(m, 0) {
			out[unit{conn, int(r.int32())}] = true
			if r.err != nil {
				return nil
			}
		}
	}
	return out
}

func decodeMetadata(b []byte) (workerMeta, error) {
	r := &reader{b: b}
	version := r.int16()
	m := workerMeta{url: r.string(), configOffset: r.int64()}
	if version >= connectProtocolV1 && r.err == nil && len(r.b) >= 4 {
		if n := r.int32(); n >= 0 {
			a, err := decodeAssignment(r.take(int(n)))
			if err != nil {
				return m, err
			}
			m.held = a.assigned
		}
	}
	if version < 0 {
		return m, errors.New("connect protocol: negative version")
	}
	return m, r.err
}

func decodeAssignment(b []byte) (connectAssignment, error) {
	r := &reader{b: b}
	version := r.int16()
	a := connectAssignment{errCode: r.int16(), leader: r.string(), leaderURL: r.string(), configOffset: r.int64()}
	a.assigned = r.units()
	if version >= connectProtocolV1 && len(r.b) > 0 {
		a.revoked = r.units()
		a.delay = r.int32()
	}
	if a.assigned == nil {
		a.assigned = assignment{}
	}
	if a.revoked == nil {
		a.revoked = assignment{}
	}
	return a, r.err
}
