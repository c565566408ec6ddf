package txn

import (
	"testing"
)

// FuzzParseRecord: records read back from disk must never panic the
// loader, and what parses must survive a round trip.
func FuzzParseRecord(f *testing.F) {
	t := &txnMeta{id: "tx", producerID: 9, epoch: 3, timeoutMs: 1000, state: StateOngoing,
		partitions: map[TopicPartition]struct{}{{"a", 1}: {}, {"a", 0}: {}, {"b", 2}: {}}, startMs: 5, updateMs: 6}
	kv := txnRecord(t, 0)
	f.Add(kv.Key, kv.Value)
	f.Add(kv.Key, []byte(nil))
	v2 := t.clone()
	v2.prevProducerID, v2.nextProducerID, v2.clientTV = 8, 11, 2
	kv = txnRecord(v2, 2) // TxnMetadataValue v1, with the KIP-890 tags
	f.Add(kv.Key, kv.Value)
	f.Add([]byte{0, 1, 0}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, m, err := parseRecord(KV{Key: key, Value: value})
		if err != nil || m == nil {
			return
		}
		_, m2, err := parseRecord(txnRecord(m, 0))
		if err != nil || m2.id != id || m2.producerID != m.producerID || m2.epoch != m.epoch ||
			m2.state != m.state || len(m2.partitions) != len(m.partitions) {
			t.Fatalf("round trip: %+v vs %+v (%v)", m, m2, err)
		}
		_, m3, err := parseRecord(txnRecord(m, 1))
		if err != nil || m3.clientTV != m.clientTV || m3.nextProducerID != m.nextProducerID || m3.prevProducerID != m.prevProducerID {
			t.Fatalf("v1 round trip: %+v vs %+v (%v)", m, m3, err)
		}
	})
}
