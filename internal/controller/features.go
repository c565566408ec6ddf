package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// Upgrade types of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	upgradeUpgrade         int8 = 1
	upgradeSafeDowngrade   int8 = 2
	upgradeUnsafeDowngrade int8 = 3
)

// UpdateFeatures serves UpdateFeatures v0-v2 (Kafka's
// FeatureControlManager.updateFeatures).
//
// Behavior: each update is checked against the finalized levels; the
// first one refused fails the whole request with INVALID_UPDATE_VERSION
// and "The update failed for all features since the following feature
// had an error: Invalid update version N for feature F. <reason>", and
// nothing is written. An update is refused when its level is negative;
// when this controller or a registered broker does not support it
// ("Broker 2 only supports versions [0-1]", "Local controller 1 does not
// support this feature" for a feature known only at level 0); when it
// lowers a level as an upgrade or raises one as a downgrade; or when its
// upgrade type is unknown. metadata.version is never lowered: a safe
// downgrade "might delete metadata information", an unsafe one "is not
// supported in this version", as in Kafka 4. Otherwise the new levels
// are written as one batch of FeatureLevelRecords (level 0 removes a
// feature), unless validate_only. v0's allow_downgrade is a safe
// downgrade. Versions 0-1 list a result per feature on success; v2 has
// only the top-level code.
//
// The controllers are not checked one by one as Kafka's are (they do not
// register with Samsa's quorum): each is assumed to run this build.
func (c *Controller) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err == nil {
		var recs []metadata.Record
		if recs, err = decideFeatureUpdates(img, c.cfg.NodeID, req); err == nil && !req.ValidateOnly {
			if err = c.upgradeKRaftVersion(ctx, img, recs); err == nil {
				err = c.writeLocked(ctx, append(recs, clearELRs(img, recs)...))
			}
		}
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.ErrorCodeAndMessage(err)
		if resp.ErrorCode == kerr.InvalidUpdateVersion.Code && resp.ErrorMessage != nil {
			msg := "The update failed for all features since the following feature had an error: " + *resp.ErrorMessage
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			resp.Results = append(resp.Results, r)
		}
	}
	return resp
}

// decideFeatureUpdates is the records of req's updates, or the first
// refusal.
func decideFeatureUpdates(img *metadata.Image, nodeID int32, req *kmsg.UpdateFeaturesRequest) ([]metadata.Record, error) {
	current := img.Features()
	var recs []metadata.Record
	for _, u := range req.FeatureUpdates {
		upgrade := u.UpgradeType
		if req.Version == 0 {
			upgrade = upgradeUpgrade
			if u.AllowDowngrade {
				upgrade = upgradeSafeDowngrade
			}
		}
		if err := checkFeatureUpdate(img, nodeID, current[u.Feature], u.Feature, u.MaxVersionLevel, upgrade); err != nil {
			return nil, err
		}
		recs = append(recs, &metadata.FeatureLevelRecord{Name: u.Feature, FeatureLevel: u.MaxVersionLevel})
	}
	return recs, nil
}

func checkFeatureUpdate(img *metadata.Image, nodeID int32, current int16, name string, level int16, upgrade int8) error {
	invalid := func(format string, args ...any) error {
		return wire.Errorf(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. %s", level, name, fmt.Sprintf(format, args...))
	}
	if upgrade < upgradeUpgrade || upgrade > upgradeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	local, _ := metadata.SupportedFeature(name)
	if reason := notSupported(local, level, fmt.Sprintf("Local controller %d", nodeID)); reason != "" {
		return invalid("%s", reason)
	}
	for _, b := range img.Brokers() {
		if reason := notSupported(b.SupportedFeature(name), level, fmt.Sprintf("Broker %d", b.ID)); reason != "" {
			return invalid("%s", reason)
		}
	}
	switch {
	case level < current && upgrade == upgradeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && upgrade != upgradeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	case name == metadata.KRaftVersionFeature && level < current:
		// The level is the quorum's: 1 when it was formatted dynamic
		// or upgraded (upgradeKRaftVersion), 0 for a static quorum.
		return invalid("kraft.version cannot be downgraded: the quorum's voters are recorded in its log.")
	case name == metadata.MetadataVersionFeature && level < current && upgrade == upgradeUnsafeDowngrade:
		return wire.Errorf(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. Unsafe metadata downgrade is not supported in this version.", level)
	case name == metadata.MetadataVersionFeature && level < current:
		return wire.Errorf(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. Refusing to perform the requested downgrade because it might delete metadata information.", level)
	}
	return nil
}

// clearELRs is, when recs turn eligible.leader.replicas.version off,
// a change record for every partition with an ELR or a last known leader
// that empties both: the controller no longer keeps them up to date.
func clearELRs(img *metadata.Image, recs []metadata.Record) []metadata.Record {
	off := false
	for _, r := range recs {
		if f, ok := r.(*metadata.FeatureLevelRecord); ok && f.Name == metadata.ELRVersionFeature {
			off = f.FeatureLevel == 0 && img.Features()[f.Name] > 0
		}
	}
	if !off {
		return nil
	}
	return clearELRsOf(img, img.Topics())
}

// clearELRsOf is a change record for every partition of topics with an
// ELR or a last known leader that empties both.
func clearELRsOf(img *metadata.Image, topics []*metadata.TopicImage) []metadata.Record {
	var out []metadata.Record
	for _, t := range topics {
		for _, p := range t.Partitions {
			if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
				out = append(out, &metadata.PartitionChangeRecord{TopicID: t.ID, PartitionID: p.Partition,
					EligibleLeaderReplicas: []int32{}, LastKnownElr: []int32{}})
			}
		}
	}
	return out
}

// notSupported is why who, supporting r, cannot run at level ("" if it
// can), in Kafka's words.
func notSupported(r metadata.FeatureRange, level int16, who string) string {
	switch {
	case r.Contains(level):
		return ""
	case r.Max == 0:
		return who + " does not support this feature."
	}
	return fmt.Sprintf("%s only supports versions [%d-%d]", who, r.Min, r.Max)
}

// unsupportedFinalized is the first feature finalized at a level the
// broker registering with features cannot run (Kafka refuses such a
// registration), or nil.
func unsupportedFinalized(img *metadata.Image, features []metadata.FeatureRange) error {
	b := metadata.BrokerImage{Features: features}
	finalized := img.Features()
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		lvl := finalized[name]
		if r := b.SupportedFeature(name); !r.Contains(lvl) {
			return wire.Errorf(kerr.UnsupportedVersion, "Unable to register because the broker does not support finalized version %d of %s. The broker wants a version between %d and %d, inclusive.",
				lvl, name, r.Min, r.Max)
		}
	}
	return nil
}

// featureAPIs are features.go's rows of the API table (api.go).
func featureAPIs() []API {
	return []API{
		api(kmsg.UpdateFeatures, 0, 2, (*Controller).UpdateFeatures,
			func(req *kmsg.UpdateFeaturesRequest, err error) *kmsg.UpdateFeaturesResponse {
				r := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
				r.ErrorCode, r.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
				return r
			},
			func(r *kmsg.UpdateFeaturesResponse) bool { return r.ErrorCode == notController }),
	}
}
