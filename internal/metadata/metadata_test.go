package metadata

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.golden")

func uuidN(n byte) Uuid { return Uuid{15: n, 0: 0x10} }

func ptr[T any](v T) *T { return &v }

// dump renders an image and delta as stable text for golden files.
func dump(w *strings.Builder, d *Delta, img *Image) {
	fmt.Fprintf(w, "image offset=%d cluster=%s features=%v nextPid=%d\n", img.Offset, img.ClusterID, img.Features(), img.NextProducerID())
	for _, b := range img.Brokers() {
		fmt.Fprintf(w, "  broker %d epoch=%d fenced=%v endpoints=%v\n", b.ID, b.Epoch, b.Fenced, b.Endpoints)
	}
	for _, t := range img.Topics() {
		fmt.Fprintf(w, "  topic %s id=%s configs=%v\n", t.Name, t.ID, img.Configs(ResourceTopic, t.Name))
		for _, p := range t.Partitions {
			fmt.Fprintf(w, "    p%d leader=%d epoch=%d pepoch=%d replicas=%v isr=%v\n", p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.ISR)
		}
	}
	ids := slices.SortedFunc(maps.Keys(img.ACLs()), func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		fmt.Fprintf(w, "  acl %s %+v\n", id, img.ACLs()[id])
	}
	var created, deleted []string
	for _, t := range d.CreatedTopics {
		created = append(created, t.Name)
	}
	for _, t := range d.DeletedTopics {
		deleted = append(deleted, fmt.Sprintf("%s(%d partitions)", t.Name, len(t.Partitions)))
	}
	parts := map[string][]int32{}
	for id, ps := range d.ChangedPartitions {
		name := "?"
		if t, ok := img.TopicByID(id); ok {
			name = t.Name
		}
		parts[name] = ps
	}
	for _, k := range img.ScramKeys() {
		c, _ := img.ScramCredential(k.Name, k.Mechanism)
		fmt.Fprintf(w, "  scram %s mechanism=%d iterations=%d salt=%q stored=%q server=%q\n", k.Name, k.Mechanism, c.Iterations, c.Salt, c.StoredKey, c.ServerKey)
	}
	fmt.Fprintf(w, "delta full=%v created=%v deleted=%v partitions=%v configs=%v brokers=%v features=%v pids=%v",
		d.Full, created, deleted, parts, d.ChangedConfigs, d.ChangedBrokers, d.FeaturesChanged, d.ProducerIDsChanged)
	if len(d.ChangedScram) > 0 {
		fmt.Fprintf(w, " scram=%v", d.ChangedScram)
	}
	if len(d.ChangedACLs) > 0 {
		fmt.Fprintf(w, " acls=%v", d.ChangedACLs)
	}
	fmt.Fprintln(w)
}

type recorder struct {
	out *strings.Builder
}

func (r recorder) Publish(d *Delta, img *Image) { dump(r.out, d, img) }

func TestApplyGolden(t *testing.T) {
	var out strings.Builder
	l := NewLoader("clu", nil)
	if err := l.Register(recorder{&out}); err != nil {
		t.Fatal(err)
	}
	foo, bar := uuidN(1), uuidN(2)
	steps := []struct {
		name string
		recs []Record
	}{
		{"bootstrap", []Record{&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27},
			&RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 2, IncarnationID: uuidN(9),
				Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}}}}},
		{"create foo with 2 partitions and a config", []Record{&TopicRecord{Name: "foo", TopicID: foo},
			&PartitionRecord{PartitionID: 0, TopicID: foo, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			&PartitionRecord{PartitionID: 1, TopicID: foo, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "foo", Name: "cleanup.policy", Value: ptr("compact")}}},
		{"add a partition to foo, create bar", []Record{
			&PartitionRecord{PartitionID: 2, TopicID: foo, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			&TopicRecord{Name: "bar", TopicID: bar},
			&PartitionRecord{PartitionID: 0, TopicID: bar, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		{"leader change on bar-0", []Record{&PartitionChangeRecord{PartitionID: 0, TopicID: bar, Leader: ptr(int32(-1)), ISR: []int32{}}}},
		{"set and delete configs", []Record{
			&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "foo", Name: "retention.ms", Value: ptr("1000")},
			&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "foo", Name: "cleanup.policy"}}},
		{"delete foo", []Record{&RemoveTopicRecord{TopicID: foo}}},
		{"recreate foo with a new id", []Record{&TopicRecord{Name: "foo", TopicID: uuidN(3)},
			&PartitionRecord{PartitionID: 0, TopicID: uuidN(3), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		{"producer ids", []Record{&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 2, NextProducerID: 1000}}},
		{"SCRAM credentials", []Record{
			&UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte("s1"), StoredKey: []byte("k1"), ServerKey: []byte("v1"), Iterations: 4096},
			&UserScramCredentialRecord{Name: "alice", Mechanism: 2, Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192},
			&UserScramCredentialRecord{Name: "bob", Mechanism: 1, Salt: []byte("s3"), StoredKey: []byte("k3"), ServerKey: []byte("v3"), Iterations: 4096}}},
		{"change one SCRAM credential, remove another", []Record{
			&UserScramCredentialRecord{Name: "bob", Mechanism: 1, Salt: []byte("s4"), StoredKey: []byte("k4"), ServerKey: []byte("v4"), Iterations: 5000},
			&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1}}},
		{"two ACLs", []Record{
			&AccessControlEntryRecord{ID: uuidN(20), ACL: ACL{ResourceType: 2, ResourceName: "foo", PatternType: 3,
				Principal: "User:alice", Host: "*", Operation: 3, Permission: 3}},
			&AccessControlEntryRecord{ID: uuidN(21), ACL: ACL{ResourceType: 4, ResourceName: "kafka-cluster", PatternType: 3,
				Principal: "User:bob", Host: "10.0.0.1", Operation: 2, Permission: 2}}}},
		{"remove one ACL, add and remove another in one batch", []Record{
			&RemoveAccessControlEntryRecord{ID: uuidN(21)},
			&AccessControlEntryRecord{ID: uuidN(22), ACL: ACL{ResourceType: 3, ResourceName: "g", PatternType: 4,
				Principal: "User:*", Host: "*", Operation: 2, Permission: 3}},
			&RemoveAccessControlEntryRecord{ID: uuidN(22)}}},
	}
	for i, s := range steps {
		fmt.Fprintf(&out, "\n# %s\n", s.name)
		data, err := EncodeBatch(s.recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(uint64(i+2), data); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	// Rejected batches leave the image alone (atomic) and publish nothing.
	bad := []struct {
		name string
		recs []Record
	}{
		{"duplicate topic name", []Record{&TopicRecord{Name: "bar", TopicID: uuidN(7)}}},
		{"partition gap", []Record{&PartitionRecord{PartitionID: 5, TopicID: bar}}},
		{"half-valid batch", []Record{&TopicRecord{Name: "baz", TopicID: uuidN(8)}, &RemoveTopicRecord{TopicID: uuidN(99)}}},
		{"producer ids going back", []Record{&ProducerIdsRecord{NextProducerID: 1000}}},
		{"removing a SCRAM credential that does not exist", []Record{&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1}}},
		{"removing an unknown ACL", []Record{&RemoveAccessControlEntryRecord{ID: uuidN(21)}}},
	}
	before := l.Image()
	for i, s := range bad {
		data, _ := EncodeBatch(s.recs)
		err := l.Apply(uint64(100+i), data)
		fmt.Fprintf(&out, "\n# rejected: %s\nerror: %v\n", s.name, err)
		if err == nil {
			t.Fatalf("%s: accepted", s.name)
		}
	}
	if _, ok := l.Image().Topic("baz"); ok || len(l.Image().Topics()) != len(before.Topics()) {
		t.Fatal("rejected batch changed the image")
	}
	if l.Image().Offset != 105 {
		t.Fatalf("offset %d, want 105 (rejected entries still advance it)", l.Image().Offset)
	}
	checkGolden(t, "apply.golden", out.String())
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Fatalf("%s differs (run with -rewrite to accept):\n--- got\n%s", path, got)
	}
}

func TestImagesAreCopyOnWrite(t *testing.T) {
	l := NewLoader("c", nil)
	a, b := uuidN(1), uuidN(2)
	apply(t, l, 2, &TopicRecord{Name: "a", TopicID: a}, &PartitionRecord{TopicID: a, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&TopicRecord{Name: "b", TopicID: b})
	old := l.Image()
	oldA, _ := old.Topic("a")
	oldB, _ := old.Topic("b")
	apply(t, l, 3, &PartitionChangeRecord{TopicID: a, PartitionID: 0, Leader: ptr(int32(2))})
	newA, _ := l.Image().Topic("a")
	newB, _ := l.Image().Topic("b")
	if oldA.Partitions[0].Leader != 1 || oldA.Partitions[0].LeaderEpoch != 0 {
		t.Fatalf("published image mutated: %+v", oldA.Partitions[0])
	}
	if newA.Partitions[0].Leader != 2 || newA.Partitions[0].LeaderEpoch != 1 || newA.Partitions[0].PartitionEpoch != 1 {
		t.Fatalf("new partition %+v", newA.Partitions[0])
	}
	if oldB != newB {
		t.Fatal("unchanged topic was copied")
	}
}

func apply(t *testing.T, l *Loader, index uint64, recs ...Record) {
	t.Helper()
	data, err := EncodeBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(index, data); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	l := NewLoader("clu", nil)
	foo := uuidN(1)
	apply(t, l, 5,
		&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 27},
		&RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 4, IncarnationID: uuidN(9), Rack: ptr("r1"),
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}},
		&TopicRecord{Name: "foo", TopicID: foo},
		&PartitionRecord{PartitionID: 0, TopicID: foo, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 7},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "foo", Name: "retention.ms", Value: ptr("5")},
		&ConfigRecord{ResourceType: ResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: ptr("9")},
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 4, NextProducerID: 2000},
		&UserScramCredentialRecord{Name: "alice", Mechanism: 2, Salt: []byte("salt"), StoredKey: []byte("sk"), ServerKey: []byte("vk"), Iterations: 4096},
		&AccessControlEntryRecord{ID: uuidN(30), ACL: ACL{ResourceType: 2, ResourceName: "f", PatternType: 4,
			Principal: "User:alice", Host: "*", Operation: 2, Permission: 3}})
	snap, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	l2 := NewLoader("clu", nil)
	var gotFull bool
	l2.Register(PublisherFunc(func(d *Delta, img *Image) { gotFull = d.Full && len(d.CreatedTopics) == 1 }))
	if err := l2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	var want, got strings.Builder
	dump(&want, &Delta{}, l.Image())
	dump(&got, &Delta{}, l2.Image())
	if want.String() != got.String() {
		t.Fatalf("restored image differs:\n%s\nwant\n%s", got.String(), want.String())
	}
	img := l2.Image()
	if img.Offset != 5 || img.NextProducerID() != 2000 || img.Configs(ResourceBroker, "")["log.retention.ms"] != "9" {
		t.Fatalf("restored offset=%d pid=%d", img.Offset, img.NextProducerID())
	}
	if b, _ := img.Broker(1); b.Rack == nil || *b.Rack != "r1" || b.Epoch != 4 {
		t.Fatalf("broker %+v", b)
	}
	if !gotFull {
		t.Fatal("restore should publish a full delta with the topic")
	}
	if a := img.ACLs()[uuidN(30)]; a.ResourceName != "f" || a.Principal != "User:alice" || len(img.ACLs()) != 1 {
		t.Fatalf("restored ACLs %v", img.ACLs())
	}
	snap2, _ := l2.Snapshot()
	if !bytes.Equal(snap, snap2) {
		t.Fatal("snapshot of restored image is not byte-identical")
	}
}

func TestLateRegisterGetsFullImage(t *testing.T) {
	l := NewLoader("c", nil)
	apply(t, l, 2, &TopicRecord{Name: "x", TopicID: uuidN(1)})
	var calls []string
	l.Register(PublisherFunc(func(d *Delta, img *Image) {
		calls = append(calls, fmt.Sprintf("full=%v created=%d offset=%d", d.Full, len(d.CreatedTopics), img.Offset))
	}))
	apply(t, l, 3, &TopicRecord{Name: "y", TopicID: uuidN(2)})
	want := "[full=true created=1 offset=2 full=false created=1 offset=3]"
	if fmt.Sprint(calls) != want {
		t.Fatalf("calls %v, want %s", calls, want)
	}
}

func TestWaitFor(t *testing.T) {
	l := NewLoader("c", nil)
	done := make(chan error, 1)
	go func() { done <- l.WaitFor(context.Background(), 3) }()
	apply(t, l, 2, &TopicRecord{Name: "x", TopicID: uuidN(1)})
	select {
	case <-done:
		t.Fatal("WaitFor(3) returned at offset 2")
	case <-time.After(20 * time.Millisecond):
	}
	apply(t, l, 3, &TopicRecord{Name: "y", TopicID: uuidN(2)})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitFor(ctx, 10); err != context.Canceled {
		t.Fatalf("err %v", err)
	}
}

func TestUuid(t *testing.T) {
	// Kafka prints Uuid(0x0001020304050607, 0x08090a0b0c0d0e0f) like this.
	u := Uuid{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if s := u.String(); s != "AAECAwQFBgcICQoLDA0ODw" {
		t.Fatalf("String = %s", s)
	}
	p, err := ParseUuid("AAECAwQFBgcICQoLDA0ODw")
	if err != nil || p != u {
		t.Fatalf("parse = %v %v", p, err)
	}
	if _, err := ParseUuid("AAEC"); err == nil {
		t.Fatal("short uuid accepted")
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[Uuid]bool{}
	for range 100 {
		id, err := RandomUuid(readerFunc(func(b []byte) (int, error) {
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return len(b), nil
		}))
		if err != nil || id.IsZero() || seen[id] || id[6]>>4 != 4 || id.String()[0] == '-' {
			t.Fatalf("bad random uuid %v %v", id, err)
		}
		seen[id] = true
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

func FuzzDecodeBatch(f *testing.F) {
	good, _ := EncodeBatch([]Record{&TopicRecord{Name: "a", TopicID: uuidN(1)}, &ConfigRecord{Name: "x"}})
	f.Add(good)
	f.Add([]byte{1, 5, 2, 0, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeBatch(b)
		if err != nil {
			return
		}
		again, err := EncodeBatch(recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeBatch(again); err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
	})
}

func TestBrokerRegistrationChange(t *testing.T) {
	l := NewLoader("clu", nil)
	var deltas []*Delta
	l.Register(PublisherFunc(func(d *Delta, img *Image) { deltas = append(deltas, d) }))
	apply(t, l, 3, &RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 3, Fenced: true},
		&RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 3})
	if b, _ := l.Image().Broker(1); !b.Fenced || b.RegistrationOffset != 3 || b.Eligible() {
		t.Fatalf("registered: %+v", b)
	}
	apply(t, l, 4, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 3, Fenced: ptr(false)})
	if b, _ := l.Image().Broker(1); b.Fenced || b.InControlledShutdown || !b.Eligible() {
		t.Fatalf("unfenced: %+v", b)
	}
	if d := deltas[len(deltas)-1]; fmt.Sprint(d.ChangedBrokers) != "[1]" {
		t.Fatalf("delta brokers %v", d.ChangedBrokers)
	}
	apply(t, l, 5, &BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 3, InControlledShutdown: ptr(true)},
		&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 3, Fenced: ptr(true)})
	img := l.Image()
	if b, _ := img.Broker(2); b.Fenced || !b.InControlledShutdown || b.Eligible() {
		t.Fatalf("shutting down: %+v", b)
	}
	// A change naming an old epoch or an unknown broker is rejected whole.
	if err := l.Apply(6, mustEncode(t, &BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 2, Fenced: ptr(true)})); err == nil {
		t.Fatal("stale epoch change applied")
	}
	if err := l.Apply(7, mustEncode(t, &BrokerRegistrationChangeRecord{BrokerID: 9, BrokerEpoch: 3, Fenced: ptr(true)})); err == nil {
		t.Fatal("unknown broker change applied")
	}
	if b, _ := l.Image().Broker(2); b.Fenced {
		t.Fatal("rejected change took effect")
	}

	snap, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	l2 := NewLoader("clu", nil)
	if err := l2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	b1, _ := l2.Image().Broker(1)
	b2, _ := l2.Image().Broker(2)
	if !b1.Fenced || b1.InControlledShutdown || b2.Fenced || !b2.InControlledShutdown || b2.RegistrationOffset != 7 {
		t.Fatalf("restored %+v %+v", b1, b2)
	}
}

func TestPartitionsWithReplica(t *testing.T) {
	l := NewLoader("clu", nil)
	a, b := uuidN(1), uuidN(2)
	apply(t, l, 1, &TopicRecord{Name: "b", TopicID: b}, &TopicRecord{Name: "a", TopicID: a},
		&PartitionRecord{PartitionID: 0, TopicID: b, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
		&PartitionRecord{PartitionID: 0, TopicID: a, Replicas: []int32{2, 3}, ISR: []int32{2}, Leader: 2},
		&PartitionRecord{PartitionID: 1, TopicID: a, Replicas: []int32{3, 1}, ISR: []int32{3}, Leader: 3})
	var got []string
	for _, r := range l.Image().PartitionsWithReplica(1) {
		got = append(got, fmt.Sprintf("%s-%d", r.Topic.Name, r.Partition.Partition))
	}
	if fmt.Sprint(got) != "[a-1 b-0]" {
		t.Fatalf("partitions of 1: %v", got)
	}
	if n := l.Image().LeaderCount(2); n != 1 {
		t.Fatalf("broker 2 leads %d", n)
	}
}

func mustEncode(t *testing.T, recs ...Record) []byte {
	t.Helper()
	data, err := EncodeBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The KIP-966 lists: a change record's nil list leaves them, an empty
// one clears them, records written before they existed read back as
// unchanged, and a snapshot keeps them.
func TestEligibleLeaderReplicasRecords(t *testing.T) {
	l := NewLoader("clu", nil)
	foo := uuidN(1)
	apply(t, l, 2, &TopicRecord{Name: "foo", TopicID: foo},
		&PartitionRecord{TopicID: foo, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1,
			EligibleLeaderReplicas: []int32{2}, LastKnownElr: []int32{3}})
	part := func() PartitionImage {
		t.Helper()
		ti, _ := l.Image().Topic("foo")
		return ti.Partitions[0]
	}
	if p := part(); !slices.Equal(p.ELR, []int32{2}) || !slices.Equal(p.LastKnownELR, []int32{3}) {
		t.Fatalf("after the partition record: %+v", p)
	}
	apply(t, l, 3, &PartitionChangeRecord{TopicID: foo, ISR: []int32{}})
	if p := part(); !slices.Equal(p.ELR, []int32{2}) || !slices.Equal(p.LastKnownELR, []int32{3}) {
		t.Fatalf("a change without the lists changed them: %+v", p)
	}
	// An older record, without the fields at all.
	if err := l.Apply(4, oldChangeBatch(t, foo)); err != nil {
		t.Fatal(err)
	}
	if p := part(); !slices.Equal(p.ELR, []int32{2}) {
		t.Fatalf("an old change record changed the ELR: %+v", p)
	}
	apply(t, l, 5, &PartitionChangeRecord{TopicID: foo, EligibleLeaderReplicas: []int32{1, 2}, LastKnownElr: []int32{}})
	if p := part(); !slices.Equal(p.ELR, []int32{1, 2}) || p.LastKnownELR != nil {
		t.Fatalf("after setting the ELR and clearing the last known leader: %+v", p)
	}
	snap, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	l2 := NewLoader("clu", nil)
	if err := l2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if ti, _ := l2.Image().Topic("foo"); !slices.Equal(ti.Partitions[0].ELR, []int32{1, 2}) {
		t.Fatalf("restored partition %+v", ti.Partitions[0])
	}
}

// oldChangeBatch is a batch of one PartitionChangeRecord as written
// before the ELR fields existed.
func oldChangeBatch(t *testing.T, topic Uuid) []byte {
	t.Helper()
	body := fmt.Sprintf(`{"PartitionID":0,"TopicID":%q,"ISR":[1],"Replicas":null,"AddingReplicas":null,"RemovingReplicas":null}`, topic.String())
	b := binary.AppendUvarint([]byte{batchFormatV1, 1, byte(TypePartitionChange), 0}, uint64(len(body)))
	return append(b, body...)
}
