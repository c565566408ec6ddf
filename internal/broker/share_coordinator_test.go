package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/servertest"
)

// FindCoordinator's share keys are for brokers: v6+ only, and only with
// CLUSTER_ACTION, which refuses the whole request as Kafka's AuthHelper
// does; a share key before v6 is INVALID_REQUEST whoever asks.
func TestFindShareCoordinatorRefusals(t *testing.T) {
	srv := servertest.Start(t, authzProps...)
	ctx := tctx(t)
	for _, c := range []struct {
		version int16
		want    *kerr.Error
	}{{6, kerr.ClusterAuthorizationFailed}, {5, kerr.InvalidRequest}} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(int16(kmsg.FindCoordinator), c.version)
		cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.MaxVersions(vs))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 2
		req.CoordinatorKeys = []string{"g:AQIDBAUGBwgJCgsMDQ4PEA:0"}
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != c.version || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != c.want.Code {
			t.Errorf("v%d: %+v, want %v", resp.Version, resp.Coordinators, c.want)
		}
	}
}
