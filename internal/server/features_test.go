package server

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// --release-version picks a Kafka release's feature levels for a new
// metadata log, as kafka-storage format does: at 3.9 the cluster runs
// metadata.version 21 without group.version, so KIP-848 heartbeats are
// answered UNSUPPORTED_VERSION; a release whose levels Samsa does not
// implement stops start-up naming the feature; on an existing log the
// flags change nothing.
func TestReleaseVersionAtFormat(t *testing.T) {
	dir := t.TempDir()
	cfg := loadCluster(t, "log.dirs="+dir, "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0")
	cfg.ReleaseVersion = "4.2"
	if _, err := Start(cfg, quiet(), nil); err == nil || !strings.Contains(err.Error(), "(the default of release 4.2) is not supported") {
		t.Fatalf("start with --release-version 4.2: %v", err)
	}
	cfg.ReleaseVersion = "3.9"
	s := start(t, cfg)
	defer s.Close()
	if got, want := s.loader.Image().Features(), map[string]int16{"metadata.version": 21}; !maps.Equal(got, want) {
		t.Fatalf("features %v, want %v", got, want)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "m", 0, 5000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if kerr.ErrorForCode(resp.ErrorCode) != kerr.UnsupportedVersion {
		t.Fatalf("KIP-848 heartbeat at release 3.9: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(resp.ErrorCode))
	}
	s.Close()

	cfg.ReleaseVersion, cfg.Features = "", []string{"group.version=1"}
	s = start(t, cfg)
	defer s.Close()
	if got := s.loader.Image().Features(); got["metadata.version"] != 21 || got["group.version"] != 0 {
		t.Fatalf("features after restarting with other flags: %v", got)
	}
}
