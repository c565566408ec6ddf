package main

// `samsa feature`: the cluster's feature levels, what Kafka's
// kafka-features.sh does. describe reads them from a broker's ApiVersions
// (what it supports, what the cluster finalized); upgrade and downgrade
// send UpdateFeatures, which the controller checks against every broker.

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

const featureUsage = `usage: samsa feature <describe|upgrade|downgrade> [flags]

  describe    list the features a broker supports and the cluster's finalized levels
  upgrade     raise feature levels: --feature name=level ..., or --release-version R
  downgrade   lower feature levels: --feature name=level ... (--unsafe for a lossy one)

Run "samsa feature <subcommand> -h" for the flags of each.
`

func runFeature(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("feature", featureUsage, map[string]subcommand{
		"describe":  featureDescribe,
		"upgrade":   featureUpgrade,
		"downgrade": featureDowngrade,
	}, args, stdout, stderr)
}

func featureDescribe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("feature describe", "samsa feature describe [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	cl, err := cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("describe features: %w", err))
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tSUPPORTED\tFINALIZED")
	for _, f := range resp.SupportedFeatures {
		fmt.Fprintf(tw, "%s\t%s-%s\t%s\n", f.Name, featureLevel(f.Name, f.MinVersion), featureLevel(f.Name, f.MaxVersion), featureLevel(f.Name, finalized[f.Name]))
	}
	tw.Flush()
	fmt.Fprintf(stdout, "(finalized at metadata offset %d)\n", resp.FinalizedFeaturesEpoch)
	return exitOK
}

// featureLevel writes a level, with the Kafka release of a
// metadata.version, as kafka-features.sh shows it.
func featureLevel(name string, level int16) string {
	if name == metadata.MetadataVersionFeature {
		if r := metadata.ReleaseOfMetadataVersion(level); r != "" {
			return fmt.Sprintf("%d (%s)", level, r)
		}
	}
	return strconv.Itoa(int(level))
}

func featureUpgrade(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("feature upgrade", "samsa feature upgrade (--feature name=level ...|--release-version R) [--dry-run] [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	var features stringList
	fs.Var(&features, "feature", "raise feature `name=level` (repeatable), e.g. group.version=1")
	release := fs.String("release-version", "", "raise every feature to the level of Kafka `release` R (e.g. 4.1), where Samsa supports it")
	dryRun := fs.Bool("dry-run", false, "only check the change with the controller")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if len(features) == 0 && *release == "" {
		return usageError(fs, stderr, "nothing to upgrade: give --feature name=level or --release-version")
	}
	var levels map[string]int16
	var err error
	if *release != "" {
		levels, err = metadata.InitialFeatures(*release, features)
	} else {
		levels, err = parseFeatureLevels(features)
	}
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	return updateFeatures(&cf, levels, 1, *dryRun, "upgraded", stdout, stderr)
}

func featureDowngrade(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("feature downgrade", "samsa feature downgrade --feature name=level ... [--unsafe] [--dry-run] [flags]", stderr)
	var cf clientFlags
	cf.register(fs)
	var features stringList
	fs.Var(&features, "feature", "lower feature `name=level` (repeatable); level 0 turns the feature off")
	unsafe := fs.Bool("unsafe", false, "allow a downgrade that may lose metadata")
	dryRun := fs.Bool("dry-run", false, "only check the change with the controller")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	levels, err := parseFeatureLevels(features)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if len(levels) == 0 {
		return usageError(fs, stderr, "nothing to downgrade: give --feature name=level")
	}
	upgradeType := int8(2)
	if *unsafe {
		upgradeType = 3
	}
	return updateFeatures(&cf, levels, upgradeType, *dryRun, "downgraded", stdout, stderr)
}

// parseFeatureLevels reads --feature name=level flags.
func parseFeatureLevels(features []string) (map[string]int16, error) {
	levels := map[string]int16{}
	for _, kv := range features {
		name, v, ok := strings.Cut(kv, "=")
		level, err := strconv.ParseInt(v, 10, 16)
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("--feature %q: want name=level, such as group.version=1", kv)
		}
		levels[name] = int16(level)
	}
	return levels, nil
}

func updateFeatures(cf *clientFlags, levels map[string]int16, upgradeType int8, dryRun bool, verb string, stdout, stderr io.Writer) int {
	cl, err := cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := cf.ctx()
	defer cancel()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = int32(cf.timeout.Milliseconds()), dryRun
	names := slices.Sorted(maps.Keys(levels))
	for _, name := range names {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, levels[name], upgradeType
		u.AllowDowngrade = upgradeType != 1
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fail(stderr, fmt.Errorf("update features: %w", err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return fail(stderr, fmt.Errorf("update features: %w", kafkaErr(err, msg)))
	}
	for _, r := range resp.Results { // v0-v1
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fail(stderr, fmt.Errorf("update %s: %w", r.Feature, kafkaErr(err, msg)))
		}
	}
	for _, name := range names {
		if dryRun {
			fmt.Fprintf(stdout, "%s can be %s to %s\n", name, verb, featureLevel(name, levels[name]))
		} else {
			fmt.Fprintf(stdout, "%s was %s to %s\n", name, verb, featureLevel(name, levels[name]))
		}
	}
	return exitOK
}
