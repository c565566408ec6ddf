package group

import (
	"encoding/hex"
	"testing"
)

// Golden values were written by Kafka 4.4's own generated classes
// (MessageUtil.toVersionPrefixedByteBuffer / toCoordinatorTypePrefixedByteBuffer);
// Samsa must read them, and write the same bytes.
func TestStreamsRecordsMatchKafka(t *testing.T) {
	key := func(typ int16, group, member string) []byte {
		return (&sgRecord{typ: typ, group: group, member: member, del: true}).encode().Key
	}
	for _, c := range []struct {
		name string
		rec  *sgRecord
		kafk string // Kafka's value bytes
	}{
		{"member with endpoint and tags", &sgRecord{typ: sgMemberMetadataType, group: "g", member: "m", meta: &sgMemberMeta{
			rackID: "r1", clientID: "cid", clientHost: "/127.0.0.1", rebalanceTimeoutMs: 30000, topologyEpoch: 2, processID: "p1",
			endpointHost: "h", endpointPort: 8080, clientTags: [][2]string{{"k", "v"}},
		}}, "000000037231046369640b2f3132372e302e302e3100007530000000020370310102681f900002026b02760000"},
		{"member without endpoint", &sgRecord{typ: sgMemberMetadataType, group: "g", member: "m", meta: &sgMemberMeta{
			clientID: "cid", clientHost: "/h", rebalanceTimeoutMs: 1, processID: "p",
		}}, "0000000004636964032f6800000001000000000270ff0100"},
		{"current assignment", &sgRecord{typ: sgCurrentMemberType, group: "g", member: "m", cur: &sgMemberCur{
			epoch: 5, prevEpoch: 4, state: msUnrevoked,
			assigned: taskSet{active: tasks{"0": {0, 1}}, standby: tasks{}, warmup: tasks{}},
			pending:  taskSet{active: tasks{"1": {3}}, standby: tasks{}, warmup: tasks{}},
		}}, "0000000000050000000402020230030000000000000001000101020231020000000300010100"},
		{"group epoch", &sgRecord{typ: sgMetadataType, group: "g", epoch: 7, hash: 1234567890123}, "0000000000070000011f71fb04cb00"},
	} {
		kv := c.rec.encode()
		if got := hex.EncodeToString(kv.Value); got != c.kafk {
			t.Errorf("%s: wrote %s, Kafka writes %s", c.name, got, c.kafk)
		}
		want, _ := hex.DecodeString(c.kafk)
		r, err := decodeSGRecord(KV{Key: kv.Key, Value: want})
		if err != nil {
			t.Fatalf("%s: reading Kafka's bytes: %v", c.name, err)
		}
		if again := hex.EncodeToString(r.encode().Value); again != c.kafk {
			t.Errorf("%s: read and rewritten as %s", c.name, again)
		}
	}
	if got := hex.EncodeToString(key(sgCurrentMemberType, "g", "m")); got != "001600016700016d" {
		t.Errorf("current assignment key %s, Kafka writes 001600016700016d", got)
	}
}
