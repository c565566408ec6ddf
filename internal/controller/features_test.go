package controller

import (
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

func featureUpdate(name string, level int16, upgradeType int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
	return u
}

func (h *harness) updateFeatures(t *testing.T, version int16, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.FeatureUpdates, req.ValidateOnly = version, updates, validateOnly
	return h.c.UpdateFeatures(ctx(t), req)
}

func TestBootstrapFeatureLevels(t *testing.T) {
	h := start(t, t.TempDir(), 0)
	want := map[string]int16{"metadata.version": 27, "group.version": 1, "share.version": 1, "streams.version": 1, "transaction.version": 2, "eligible.leader.replicas.version": 1}
	if got := h.loader.Image().Features(); !maps.Equal(got, want) {
		t.Fatalf("bootstrapped features %v, want %v", got, want)
	}
}

func TestUpdateFeatures(t *testing.T) {
	h := start(t, t.TempDir(), 3)
	levels := func() map[string]int16 { return h.loader.Image().Features() }
	refused := func(resp *kmsg.UpdateFeaturesResponse, wantMsg string) {
		t.Helper()
		if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, wantMsg) {
			t.Fatalf("response %d %v, want INVALID_UPDATE_VERSION with %q", resp.ErrorCode, resp.ErrorMessage, wantMsg)
		}
		if !strings.HasPrefix(*resp.ErrorMessage, "The update failed for all features since the following feature had an error: Invalid ") {
			t.Fatalf("message %q does not start as Kafka's", *resp.ErrorMessage)
		}
		if len(resp.Results) != 0 {
			t.Fatalf("a refused update lists results %+v", resp.Results)
		}
	}
	for _, tc := range []struct {
		name string
		u    kmsg.UpdateFeaturesRequestFeatureUpdate
		want string
	}{
		{"downgrade as upgrade", featureUpdate("group.version", 0, 1), "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"upgrade as downgrade", featureUpdate("metadata.version", 27, 2), ""},
		{"unsupported level", featureUpdate("transaction.version", 3, 1), "Local controller 1 only supports versions [0-2]"},
		{"unknown feature", featureUpdate("no.such.version", 1, 1), "Local controller 1 does not support this feature."},
		{"newer metadata.version", featureUpdate("metadata.version", 28, 1), "Local controller 1 only supports versions [7-27]"},
		{"older metadata.version", featureUpdate("metadata.version", 26, 2), "Invalid metadata.version 26. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"unsafe metadata.version", featureUpdate("metadata.version", 26, 3), "Unsafe metadata downgrade is not supported in this version."},
		{"unknown upgrade type", featureUpdate("group.version", 1, 0), "The controller does not support the given upgrade type."},
		{"negative level", featureUpdate("group.version", -1, 2), "A feature version cannot be less than 0."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.updateFeatures(t, 1, false, tc.u)
			if tc.want == "" {
				if resp.ErrorCode != 0 {
					t.Fatalf("no-op update: %d %v", resp.ErrorCode, resp.ErrorMessage)
				}
				return
			}
			refused(resp, tc.want)
		})
	}
	// One refused update fails the request whole.
	refused(h.updateFeatures(t, 1, false, featureUpdate("group.version", 0, 2), featureUpdate("share.version", 2, 1)), "feature share.version")
	if levels()["group.version"] != 1 {
		t.Fatalf("a refused request changed group.version: %v", levels())
	}

	// validate_only writes nothing; then a safe downgrade removes the
	// feature, and an upgrade brings it back. v1 lists each feature, v2
	// only the top-level code.
	if resp := h.updateFeatures(t, 1, true, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 || levels()["group.version"] != 1 {
		t.Fatalf("validate only: %d %v, features %v", resp.ErrorCode, resp.ErrorMessage, levels())
	}
	resp := h.updateFeatures(t, 1, false, featureUpdate("group.version", 0, 2))
	if resp.ErrorCode != 0 || len(resp.Results) != 1 || resp.Results[0].Feature != "group.version" || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("safe downgrade: %+v", resp)
	}
	if _, ok := levels()["group.version"]; ok {
		t.Fatalf("group.version still finalized after downgrading to 0: %v", levels())
	}
	// v0 upgrades unless allow_downgrade.
	v0 := featureUpdate("group.version", 1, 0)
	if resp := h.updateFeatures(t, 0, false, v0); resp.ErrorCode != 0 || levels()["group.version"] != 1 {
		t.Fatalf("v0 upgrade: %d %v, features %v", resp.ErrorCode, resp.ErrorMessage, levels())
	}
	v0.MaxVersionLevel = 0
	refused(h.updateFeatures(t, 0, false, v0), "Can't downgrade the version of this feature")
	v0.AllowDowngrade = true
	if resp := h.updateFeatures(t, 0, false, v0); resp.ErrorCode != 0 || levels()["group.version"] != 0 {
		t.Fatalf("v0 allow_downgrade: %d %v, features %v", resp.ErrorCode, resp.ErrorMessage, levels())
	}
	if resp := h.updateFeatures(t, 2, false, featureUpdate("group.version", 1, 1)); resp.ErrorCode != 0 || len(resp.Results) != 0 || levels()["group.version"] != 1 {
		t.Fatalf("v2 upgrade: %+v, features %v", resp, levels())
	}
	if resp := h.updateFeatures(t, 2, false, featureUpdate("group.version", 0, 2)); resp.ErrorCode != 0 {
		t.Fatalf("v2 downgrade: %+v", resp)
	}

	// A broker that cannot run group.version 1 registers only while it is
	// 0, and then holds the upgrade back.
	narrow := supportedFeatures()
	for i := range narrow {
		if narrow[i].Name == "group.version" {
			narrow[i].MaxSupportedVersion = 0
		}
	}
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID, reg.Features = 9, "test-cluster", metadata.Uuid{9}, narrow
	if r := h.c.BrokerRegistration(ctx(t), reg); r.ErrorCode != 0 {
		t.Fatalf("register a group.version 0 broker while the level is 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	refused(h.updateFeatures(t, 1, false, featureUpdate("group.version", 1, 1)), "Invalid update version 1 for feature group.version. Broker 9 does not support this feature.")
}

// A broker registering without support for a finalized level is refused,
// naming the feature.
func TestRegistrationNeedsFinalizedLevels(t *testing.T) {
	h := start(t, t.TempDir(), 0)
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID, reg.IncarnationID = 1, "test-cluster", metadata.Uuid{1}
	f := kmsg.NewBrokerRegistrationRequestFeature()
	f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = "metadata.version", 7, 27
	reg.Features = append(reg.Features, f)
	if r := h.c.BrokerRegistration(ctx(t), reg); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("registration: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(r.ErrorCode))
	}
	// The response has no message; the controller's reason is Kafka's.
	err := unsupportedFinalized(h.loader.Image(), []metadata.FeatureRange{{Name: "metadata.version", Min: 7, Max: 27}})
	want := "Unable to register because the broker does not support finalized version 1 of eligible.leader.replicas.version. The broker wants a version between 0 and 0, inclusive."
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reason %v, want %q", err, want)
	}
	if _, ok := h.loader.Image().Broker(1); ok {
		t.Fatal("the refused broker is registered")
	}
}
