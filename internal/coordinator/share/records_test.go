package share

import (
	"github.com/samsa-io/samsa/internal/coordinator"

	"encoding/hex"
	"reflect"
	"testing"
)

// The bytes Kafka 4.4's ShareCoordinatorRecordSerde writes for these
// records (generated once with the kafka-share-coordinator-4.4.0 jar).
const (
	kafkaSnapshotKey   = "0000000267310102030405060708090a0b0c0d0e0f1000000003"
	kafkaSnapshotValue = "0000000000020000000100000005000000000000000a00000000000003e800000000000007d002000000000000000a000000000000000c0200010001000400000004"
	kafkaUpdateKey     = "0001000267310102030405060708090a0b0c0d0e0f1000000003"
	kafkaUpdateValue   = "000000000002ffffffffffffffffffffffff02000000000000000d00000000000000140000020000"
)

var goldenKey = Key{GroupID: "g1", TopicID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Partition: 3}

func TestRecordsMatchKafka(t *testing.T) {
	snap := snapshotRecord(goldenKey, value{SnapshotEpoch: 2, StateEpoch: 1, LeaderEpoch: 5, StartOffset: 10, DeliveryCompleteCount: 4,
		CreateTimestamp: 1000, WriteTimestamp: 2000, Batches: []Batch{{10, 12, 2, 1}}})
	upd := updateRecord(goldenKey, value{SnapshotEpoch: 2, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1,
		Batches: []Batch{{13, 20, 0, 2}}})
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"snapshot key", snap.Key, kafkaSnapshotKey},
		{"snapshot value", snap.Value, kafkaSnapshotValue},
		{"update key", upd.Key, kafkaUpdateKey},
		{"update value", upd.Value, kafkaUpdateValue},
	} {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestDecodeKafkaRecords(t *testing.T) {
	dec := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	typ, k, v, err := decodeRecord(kvOf(dec(kafkaSnapshotKey), dec(kafkaSnapshotValue)))
	if err != nil || typ != typeSnapshot || k != goldenKey {
		t.Fatalf("snapshot: type %d key %+v err %v", typ, k, err)
	}
	want := &value{snapshot: true, SnapshotEpoch: 2, StateEpoch: 1, LeaderEpoch: 5, StartOffset: 10, DeliveryCompleteCount: 4,
		CreateTimestamp: 1000, WriteTimestamp: 2000, Batches: []Batch{{10, 12, 2, 1}}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("snapshot value %+v, want %+v", v, want)
	}
	typ, _, v, err = decodeRecord(kvOf(dec(kafkaUpdateKey), dec(kafkaUpdateValue)))
	if err != nil || typ != typeUpdate {
		t.Fatalf("update: type %d err %v", typ, err)
	}
	want = &value{SnapshotEpoch: 2, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1, Batches: []Batch{{13, 20, 0, 2}}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("update value %+v, want %+v", v, want)
	}
	if _, _, v, err := decodeRecord(tombstoneRecord(goldenKey)); err != nil || v != nil {
		t.Fatalf("tombstone: value %+v err %v", v, err)
	}
	// Truncated values fail rather than load half a state.
	if _, _, _, err := decodeRecord(kvOf(dec(kafkaSnapshotKey), dec(kafkaSnapshotValue)[:20])); err == nil {
		t.Fatal("truncated snapshot value decoded")
	}
}

func TestKeyString(t *testing.T) {
	if s := goldenKey.String(); s != "g1:AQIDBAUGBwgJCgsMDQ4PEA:3" {
		t.Fatalf("key %q", s)
	}
	k, err := ParseKey("a:b:AQIDBAUGBwgJCgsMDQ4PEA:3")
	if err != nil || k.GroupID != "a:b" || k.TopicID != goldenKey.TopicID || k.Partition != 3 {
		t.Fatalf("parse: %+v %v", k, err)
	}
	for _, bad := range []string{"", "g:AQIDBAUGBwgJCgsMDQ4PEA", " :AQIDBAUGBwgJCgsMDQ4PEA:1", "g:notauuid:1", "g:AQIDBAUGBwgJCgsMDQ4PEA:x", "g:AQIDBAUGBwgJCgsMDQ4PEA:1::"} {
		if _, err := ParseKey(bad); err == nil && bad != "g:AQIDBAUGBwgJCgsMDQ4PEA:1::" {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	// Java's split drops trailing empty fields, so this one is valid.
	if k, err := ParseKey("g:AQIDBAUGBwgJCgsMDQ4PEA:1::"); err != nil || k.Partition != 1 {
		t.Errorf("trailing colons: %+v %v", k, err)
	}
}

func kvOf(k, v []byte) coordinatorKV { return coordinatorKV{Key: k, Value: v} }

type coordinatorKV = coordinator.KV

// FuzzDecodeRecord feeds the decoder records as a load reads them from
// __share_group_state: it must never panic, and what it accepts must
// encode to bytes that decode to the same record. (Like Kafka's reader,
// it ignores bytes after a record and tagged fields it does not know.)
func FuzzDecodeRecord(f *testing.F) {
	dec := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	f.Add(dec(kafkaSnapshotKey), dec(kafkaSnapshotValue))
	f.Add(dec(kafkaUpdateKey), dec(kafkaUpdateValue))
	f.Add(dec(kafkaSnapshotKey), []byte(nil))
	f.Fuzz(func(t *testing.T, key, val []byte) {
		typ, k, v, err := decodeRecord(kvOf(key, val))
		if err != nil || v == nil {
			return
		}
		typ2, k2, v2, err := decodeRecord(kvOf(encodeKey(typ, k), encodeValue(v)))
		if err != nil || typ2 != typ || k2 != k || !reflect.DeepEqual(v2, v) {
			t.Fatalf("%d %+v %+v re-decodes as %d %+v %+v (%v)", typ, k, v, typ2, k2, v2, err)
		}
	})
}
