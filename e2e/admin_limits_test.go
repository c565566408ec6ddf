package e2e

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Admin requests that must not harm the cluster: a topic named like the
// metadata log, and topics of absurd partition counts.

// The metadata log's name is refused by CreateTopics and by auto-creation,
// produce to it finds no partition, and after a restart every topic and
// record is still there (a user topic of that name used to share the
// metadata log's directory and wipe the metadata).
func TestMetadataLogNameIsReserved(t *testing.T) {
	ctx := testContext(t)
	r := restartableBroker(t)
	adm := newKadm(t, r.Addr())
	franzCreate(t, ctx, adm, "kept", 1, nil)
	cl := newKgo(t, r.Addr())
	produced := franzProduce(t, ctx, cl, "kept", genRecords(1, 20), true)

	cr, err := adm.CreateTopics(ctx, 1, 1, nil, "__cluster_metadata")
	if err != nil {
		t.Fatal(err)
	}
	resp := cr["__cluster_metadata"]
	if !errors.Is(resp.Err, kerr.InvalidRequest) || resp.ErrMessage != "Creation of internal topic __cluster_metadata is prohibited." {
		t.Fatalf("CreateTopics __cluster_metadata: %v (%q), want INVALID_REQUEST", resp.Err, resp.ErrMessage)
	}

	// A Metadata request that allows auto-creation does not create it.
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	name := "__cluster_metadata"
	mt.Topic = &name
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata with auto-create for __cluster_metadata: %+v", mresp.Topics)
	}

	br := leaderBroker(t, ctx, newKgo(t, r.Addr(), produceByName()))
	p := rawProduce(t, ctx, br, "__cluster_metadata", 0, newBatch(1, nil, "x"))
	wantCode(t, "produce to __cluster_metadata", p.ErrorCode, kerr.UnknownTopicOrPartition)

	r.Restart(t)
	adm = newKadm(t, r.Addr())
	ends := franzEnds(t, ctx, adm, "kept")
	if ends[0] != 20 {
		t.Fatalf("after restart kept ends at %d, want 20", ends[0])
	}
	got := franzConsume(t, ctx, r.Addr(), "kept", len(produced))
	checkConsumed(t, 1, produced, got, ends, checkOpts{})
}

// CreateTopics and CreatePartitions of billions of partitions are refused
// with POLICY_VIOLATION, validate-only or not, and the broker keeps serving
// (such a request used to run the controller out of memory).
func TestHugePartitionCountsRefused(t *testing.T) {
	ctx := testContext(t)
	addr := startBroker(t)
	adm := newKadm(t, addr)
	for _, n := range []int32{2147483647, 1_000_000} {
		v, err := adm.ValidateCreateTopics(ctx, n, 1, nil, "huge")
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(v["huge"].Err, kerr.PolicyViolation) {
			t.Fatalf("validate-only create of %d partitions: %v, want POLICY_VIOLATION", n, v["huge"].Err)
		}
		c, err := adm.CreateTopics(ctx, n, 1, nil, "huge")
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(c["huge"].Err, kerr.PolicyViolation) {
			t.Fatalf("create of %d partitions: %v, want POLICY_VIOLATION", n, c["huge"].Err)
		}
	}
	franzCreate(t, ctx, adm, "grow", 1, nil)
	g, err := adm.CreatePartitions(ctx, 2147483646, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(g["grow"].Err, kerr.PolicyViolation) {
		t.Fatalf("adding 2^31-2 partitions: %v, want POLICY_VIOLATION", g["grow"].Err)
	}
	// Still serving, and nothing of the refused requests exists.
	cl := newKgo(t, addr)
	produced := franzProduce(t, ctx, cl, "grow", genRecords(2, 10), true)
	got := franzConsume(t, ctx, addr, "grow", len(produced))
	checkConsumed(t, 1, produced, got, franzEnds(t, ctx, adm, "grow"), checkOpts{})
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if td.Has("huge") || len(td["grow"].Partitions) != 1 {
		t.Fatalf("topics after refusals: %v", td.Names())
	}
}
