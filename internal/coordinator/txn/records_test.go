package txn

import (
	"testing"
)

// FuzzParseRecord: records read back from disk must never panic the
// loader, and what parses must survive a round trip.
func FuzzParseRecord(f *testing.F) {
	t := &txnMeta{id: "tx", producerID: 9, epoch: 3, timeoutMs: 1000, state: StateOngoing,
		partitions: map[TopicPartition]struct{}{{"a", 1}: {}, {"a", 0}: {}, {"b", 2}: {}}, startMs: 5, updateMs: 6}
	kv := txnRecord(t)
	f.Add(kv.Key, kv.Value)
	f.Add(kv.Key, []byte(nil))
	f.Add([]byte{0, 1, 0}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, m, err := parseRecord(KV{Key: key, Value: value})
		if err != nil || m == nil {
			return
		}
		_, m2, err := parseRecord(txnRecord(m))
		if err != nil || m2.id != id || m2.producerID != m.producerID || m2.epoch != m.epoch ||
			m2.state != m.state || len(m2.partitions) != len(m.partitions) {
			t.Fatalf("round trip: %+v vs %+v (%v)", m, m2, err)
		}
	})
}
