package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Feature levels: what this build of Samsa implements, by Kafka's feature
// names, and the levels a new cluster starts at. The metadata log holds
// the finalized level of each feature as a FeatureLevelRecord (a missing
// feature is at level 0); ApiVersions reports both the supported ranges
// and the finalized levels, and clients switch behaviour on them (the
// Java client uses transactions v2 only at transaction.version 2), so a
// range here may only include levels whose behaviour Samsa has.

// Feature names, as Kafka spells them.
const (
	KRaftVersionFeature       = "kraft.version"
	GroupVersionFeature       = "group.version"
	TransactionVersionFeature = "transaction.version"
	ELRVersionFeature         = "eligible.leader.replicas.version"
	ShareVersionFeature       = "share.version"
	StreamsVersionFeature     = "streams.version"
)

// FeatureRange is the levels of a feature a node can run at.
type FeatureRange struct {
	Name     string
	Min, Max int16
}

// Contains reports whether level is in r.
func (r FeatureRange) Contains(level int16) bool { return level >= r.Min && level <= r.Max }

// MetadataVersionLatest is the newest metadata.version Samsa runs at (the
// level a new cluster starts at): Kafka 4.1's, IBP_4_1_IV1. Samsa's
// metadata log is read the same at every supported level.
const MetadataVersionLatest int16 = 27

// MetadataVersionMin is the oldest metadata.version a Kafka 4 cluster may
// run at, 3.3-IV3.
const MetadataVersionMin int16 = 7

// supportedFeatures is every feature Samsa knows, with what it
// implements:
//   - group.version 1: KIP-848 consumer groups.
//   - kraft.version 1: a dynamic quorum (KIP-853 voter changes); a
//     static one (controller.quorum.voters) runs at 0.
//   - transaction.version 0-2: 0 transactions v1; 1 adds the flexible
//     __transaction_state records; 2 is KIP-890 part 2 (an epoch bump per
//     transaction, partitions added by their leaders).
//   - share.version 1: KIP-932 share groups.
//   - streams.version 1: KIP-1071 streams groups.
//   - eligible.leader.replicas.version 1: KIP-966 eligible leader
//     replicas (the controller keeps the ELR and elects from it).
var supportedFeatures = []FeatureRange{
	{MetadataVersionFeature, MetadataVersionMin, MetadataVersionLatest},
	{KRaftVersionFeature, 0, 1},
	{GroupVersionFeature, 0, 1},
	{TransactionVersionFeature, 0, 2},
	{ELRVersionFeature, 0, 1},
	{ShareVersionFeature, 0, 1},
	{StreamsVersionFeature, 0, 1},
}

// SupportedFeatures lists the features this node supports, sorted by name.
func SupportedFeatures() []FeatureRange {
	fs := slices.Clone(supportedFeatures)
	slices.SortFunc(fs, func(a, b FeatureRange) int { return strings.Compare(a.Name, b.Name) })
	return fs
}

// SupportedFeature is the range of name; a feature this node does not
// know supports level 0 only (Kafka's "disabled").
func SupportedFeature(name string) (FeatureRange, bool) {
	for _, f := range supportedFeatures {
		if f.Name == name {
			return f, true
		}
	}
	return FeatureRange{Name: name}, false
}

// releaseFeatures are the feature levels `kafka-storage format
// --release-version R` writes for Kafka release R (its version-mapping).
var releaseFeatures = map[string]map[string]int16{
	"3.3": {MetadataVersionFeature: 7},
	"3.4": {MetadataVersionFeature: 8},
	"3.5": {MetadataVersionFeature: 11},
	"3.6": {MetadataVersionFeature: 14},
	"3.7": {MetadataVersionFeature: 19},
	"3.8": {MetadataVersionFeature: 20},
	"3.9": {MetadataVersionFeature: 21, KRaftVersionFeature: 1},
	"4.0": {MetadataVersionFeature: 25, KRaftVersionFeature: 1, TransactionVersionFeature: 2, GroupVersionFeature: 1},
	"4.1": {MetadataVersionFeature: 27, KRaftVersionFeature: 1, TransactionVersionFeature: 2, GroupVersionFeature: 1, ELRVersionFeature: 1},
	"4.2": {MetadataVersionFeature: 29, KRaftVersionFeature: 1, TransactionVersionFeature: 2, GroupVersionFeature: 1, ELRVersionFeature: 1, ShareVersionFeature: 1, StreamsVersionFeature: 1},
	"4.3": {MetadataVersionFeature: 30, KRaftVersionFeature: 1, TransactionVersionFeature: 2, GroupVersionFeature: 1, ELRVersionFeature: 1, ShareVersionFeature: 1, StreamsVersionFeature: 1},
	"4.4": {MetadataVersionFeature: 33, KRaftVersionFeature: 1, TransactionVersionFeature: 2, GroupVersionFeature: 1, ELRVersionFeature: 1, ShareVersionFeature: 2, StreamsVersionFeature: 1},
}

// InitialFeatures are the finalized levels a new cluster starts at, as
// `kafka-storage format` chooses them: release (a Kafka release such as
// "3.9" or "3.9-IV0"; empty for Samsa's newest levels) gives the
// defaults, and each of features ("name=level", as --feature) overrides
// one. A level Samsa does not implement is refused, naming the feature.
// Levels 0 are left out (a missing feature is at 0), and so is
// kraft.version: it is the quorum's, not a FeatureLevelRecord.
func InitialFeatures(release string, features []string) (map[string]int16, error) {
	levels := map[string]int16{MetadataVersionFeature: MetadataVersionLatest, GroupVersionFeature: 1, StreamsVersionFeature: 1, ShareVersionFeature: 1, TransactionVersionFeature: 2, ELRVersionFeature: 1}
	from := "Samsa's default"
	if release != "" {
		r, _, _ := strings.Cut(release, "-") // 3.9-IV0: the release's features
		rl, ok := releaseFeatures[r]
		if !ok {
			return nil, fmt.Errorf("--release-version %s: unknown release; Samsa knows %s", release, strings.Join(slices.Sorted(maps.Keys(releaseFeatures)), ", "))
		}
		levels = maps.Clone(rl)
		// Kafka's format sets kraft.version 1 only for a dynamic quorum
		// (--standalone, --initial-controllers); Samsa's is static.
		delete(levels, KRaftVersionFeature)
		from = "the default of release " + r
	}
	source := map[string]string{}
	for _, kv := range features {
		name, v, ok := strings.Cut(kv, "=")
		level, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("--feature %q: want name=level, such as group.version=1", kv)
		}
		name = strings.TrimSpace(name)
		if _, known := SupportedFeature(name); !known {
			return nil, fmt.Errorf("--feature %s: unknown feature; Samsa knows %s", kv, strings.Join(featureNames(), ", "))
		}
		levels[name] = int16(level)
		source[name] = "--feature " + kv
	}
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		f, _ := SupportedFeature(name)
		level := levels[name]
		if f.Contains(level) {
			continue
		}
		why := source[name]
		if why == "" {
			why = from
		}
		return nil, fmt.Errorf("%s=%d (%s) is not supported: Samsa implements %s levels %d to %d; choose one with --feature %s=N",
			name, level, why, name, f.Min, f.Max, name)
	}
	delete(levels, KRaftVersionFeature)
	for name, level := range levels {
		if level == 0 {
			delete(levels, name)
		}
	}
	return levels, nil
}

func featureNames() []string {
	var names []string
	for _, f := range SupportedFeatures() {
		names = append(names, f.Name)
	}
	return names
}

// ReleaseOfMetadataVersion is the Kafka release whose metadata.version is
// level ("4.1" for 27), or "" for a level between releases.
func ReleaseOfMetadataVersion(level int16) string {
	for r, levels := range releaseFeatures {
		if levels[MetadataVersionFeature] == level {
			return r
		}
	}
	return ""
}
