package group

import (
	"bytes"
	"testing"
)

// The records must be byte-compatible with Kafka's schemas so Kafka's
// tools (and Kafka itself) can read the partition.
func TestConsumerRecordBytes(t *testing.T) {
	id := [16]byte{15: 7}
	cur := &cgRecord{typ: cgCurrentMemberType, group: "g", member: "m", cur: &memberCur{
		epoch: 5, prevEpoch: 4, state: msUnrevoked, assigned: assignment{id: {0, 2}}, pending: assignment{id: {1}},
	}}
	kv := cur.encode()
	wantKey := []byte{0, 8, 0, 1, 'g', 0, 1, 'm'}
	if !bytes.Equal(kv.Key, wantKey) {
		t.Fatalf("key %v, want %v", kv.Key, wantKey)
	}
	wantValue := append([]byte{0, 0, 0, 0, 0, 5, 0, 0, 0, 4, 2, 2}, id[:]...)
	wantValue = append(wantValue, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2)
	wantValue = append(append(wantValue, id[:]...), 2, 0, 0, 0, 1, 0, 0)
	if !bytes.Equal(kv.Value, wantValue) {
		t.Fatalf("value\n%v, want\n%v", kv.Value, wantValue)
	}

	recs := []*cgRecord{
		cur,
		{typ: cgMetadataType, group: "g", epoch: 9, hash: -3},
		{typ: cgTargetMetadataType, group: "g", epoch: 8},
		{typ: cgTargetMemberType, group: "g", member: "m", target: assignment{id: {1, 3}}},
		{typ: cgMemberMetadataType, group: "g", member: "m", meta: &memberMeta{
			instanceID: "i", clientID: "c", clientHost: "/h", topics: []string{"a", "b"}, regex: "x.*", rebalanceTimeoutMs: 300, assignor: "range",
		}},
		{typ: cgMemberMetadataType, group: "g", member: "m", del: true},
	}
	for _, r := range recs {
		got, err := decodeCGRecord(r.encode())
		if err != nil {
			t.Fatalf("type %d: %v", r.typ, err)
		}
		if !bytes.Equal(got.encode().Value, r.encode().Value) || got.member != r.member || got.del != r.del || got.epoch != r.epoch || got.hash != r.hash {
			t.Fatalf("type %d did not round-trip: %+v", r.typ, got)
		}
	}
	// ConsumerGroupMetadataValue with MetadataHash as tagged field 0.
	md := (&cgRecord{typ: cgMetadataType, group: "g", epoch: 1, hash: 2}).encode().Value
	if want := []byte{0, 0, 0, 0, 0, 1, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 2}; !bytes.Equal(md, want) {
		t.Fatalf("metadata value %v, want %v", md, want)
	}
}

func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	a, b := [16]byte{1}, [16]byte{2}
	subs := map[string][]topicRef{
		"m1": {{"a", a, 4}, {"b", b, 3}},
		"m2": {{"a", a, 4}, {"b", b, 3}},
		"m3": {{"a", a, 4}},
	}
	prev := map[string]assignment{"m1": {a: {0, 1, 2, 3}, b: {0, 1, 2}}}
	out := assignUniform([]string{"m1", "m2", "m3"}, subs, prev)
	total := 0
	for m, as := range out {
		if n := as.size(); n < 2 || n > 3 {
			t.Fatalf("%s got %d partitions: %v", m, n, out)
		}
		total += as.size()
	}
	if total != 7 || len(out["m3"][b]) != 0 {
		t.Fatalf("assignment %v", out)
	}
	kept := 0
	prev["m1"].each(func(t tpid) {
		if out["m1"].has(t.id, t.p) {
			kept++
		}
	})
	if kept != out["m1"].size() {
		t.Fatalf("m1 lost partitions it could keep: %v", out)
	}
}
