package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// Feature levels through franz-go: ApiVersions reports them, kadm's
// UpdateFeatures changes them, and KIP-848 groups follow group.version:
// refused with UNSUPPORTED_VERSION while it is 0, served again once it is
// back at 1.
func TestFeatureLevelsFranz(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	finalized := func() map[string]int16 {
		t.Helper()
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ApiVersions: %v %v", err, resp)
		}
		out := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			out[f.Name] = f.MaxVersionLevel
		}
		return out
	}
	// heartbeat retries while the group coordinator loads (a new
	// cluster's __consumer_offsets), as clients do.
	heartbeat := func(member string) error {
		t.Helper()
		for {
			hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "features", member, 0, 5000
			hb.SubscribedTopicNames, hb.Topics = []string{"features"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			resp, err := hb.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			err = kerr.ErrorForCode(resp.ErrorCode)
			if (err != kerr.CoordinatorLoadInProgress && err != kerr.CoordinatorNotAvailable) || ctx.Err() != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if f := finalized(); f["metadata.version"] != 27 || f["group.version"] != 1 || f["streams.version"] != 1 || f["share.version"] != 1 || f["transaction.version"] != 2 || f["eligible.leader.replicas.version"] != 1 || len(f) != 6 {
		t.Fatalf("finalized features %v, want metadata.version 27, group.version 1, streams.version 1, share.version 1, transaction.version 2 and eligible.leader.replicas.version 1", f)
	}
	if err := heartbeat("m1"); err != nil {
		t.Fatalf("KIP-848 heartbeat at group.version 1: %v", err)
	}

	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("downgrade group.version: %v", err)
	}
	if f := finalized(); f["group.version"] != 0 {
		t.Fatalf("group.version %d after the downgrade", f["group.version"])
	}
	if err := heartbeat("m2"); err != kerr.UnsupportedVersion {
		t.Fatalf("KIP-848 heartbeat at group.version 0: %v, want UNSUPPORTED_VERSION", err)
	}

	// An upgrade past what Samsa implements is refused whole.
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1},
		kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 2, UpgradeType: 1})
	if err == nil {
		err = res.Error()
	}
	if err != kerr.InvalidUpdateVersion {
		t.Fatalf("upgrade share.version: %v, want INVALID_UPDATE_VERSION", err)
	}
	if f := finalized(); f["group.version"] != 0 {
		t.Fatal("a refused request raised group.version")
	}
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("upgrade group.version: %v", err)
	}
	if err := heartbeat("m3"); err != nil {
		t.Fatalf("KIP-848 heartbeat after the upgrade: %v", err)
	}
}
