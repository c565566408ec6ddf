package config

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group configs: the keys a GROUP config resource may set
// (kafka-configs --entity-type groups), as Kafka names them. Only the
// share-group keys Samsa implements are accepted; a group without one
// takes the broker's group.share.* default.
var groupKeys = map[string]func(string) error{
	"share.record.lock.duration.ms": intIn("share.record.lock.duration.ms", 1000, 3600000),
	"share.delivery.count.limit":    intIn("share.delivery.count.limit", 2, 10),
	"share.auto.offset.reset":       oneOfValues("share.auto.offset.reset", "latest", "earliest"),
	"share.isolation.level":         oneOfValues("share.isolation.level", "read_uncommitted", "read_committed"),
}

func intIn(name string, lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be in the range [%d, %d]", v, name, lo, hi)
		}
		return nil
	}
}

func oneOfValues(name string, values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: %v", v, name, values)
	}
}

// ValidateGroupConfig checks one group-level setting, as IncrementalAlterConfigs
// of a GROUP resource must before accepting it.
func ValidateGroupConfig(name, value string) error {
	check, ok := groupKeys[name]
	if !ok {
		return fmt.Errorf("Unknown group config name: %s", name)
	}
	return check(value)
}

// ShareGroupConfig is the share configuration of one group: its GROUP
// config overrides on top of the broker's group.share.* defaults.
type ShareGroupConfig struct {
	RecordLockDurationMs int32
	DeliveryCountLimit   int32
	AutoOffsetReset      string // latest or earliest
	IsolationLevel       string // read_uncommitted or read_committed
}

// ShareGroupConfig returns a group's share configuration from its
// overrides (validated values; anything else keeps the default).
func (c *Config) ShareGroupConfig(overrides map[string]string) ShareGroupConfig {
	g := ShareGroupConfig{
		RecordLockDurationMs: c.GroupShareRecordLockDurationMs,
		DeliveryCountLimit:   c.GroupShareDeliveryCountLimit,
		AutoOffsetReset:      "latest",
		IsolationLevel:       "read_uncommitted",
	}
	for k, v := range overrides {
		if ValidateGroupConfig(k, v) != nil {
			continue
		}
		switch k {
		case "share.record.lock.duration.ms":
			n, _ := strconv.ParseInt(v, 10, 32)
			g.RecordLockDurationMs = int32(n)
		case "share.delivery.count.limit":
			n, _ := strconv.ParseInt(v, 10, 32)
			g.DeliveryCountLimit = int32(n)
		case "share.auto.offset.reset":
			g.AutoOffsetReset = v
		case "share.isolation.level":
			g.IsolationLevel = v
		}
	}
	return g
}

// DescribeGroup lists a group's configs for DescribeConfigs: each share.*
// key with its override (source GROUP_CONFIG) or the value the group
// takes from the broker (DEFAULT_CONFIG).
func (c *Config) DescribeGroup(overrides map[string]string) []Entry {
	eff := c.ShareGroupConfig(overrides)
	values := []struct {
		name, value, doc string
		typ              kmsg.ConfigType
	}{
		{"share.auto.offset.reset", eff.AutoOffsetReset, "Where a share partition of the group starts: latest or earliest.", kmsg.ConfigTypeString},
		{"share.delivery.count.limit", strconv.Itoa(int(eff.DeliveryCountLimit)), "Deliveries of a record before it is archived.", kmsg.ConfigTypeInt},
		{"share.isolation.level", eff.IsolationLevel, "read_committed skips aborted transactions' records.", kmsg.ConfigTypeString},
		{"share.record.lock.duration.ms", strconv.Itoa(int(eff.RecordLockDurationMs)), "How long a member holds the records it acquired.", kmsg.ConfigTypeInt},
	}
	var out []Entry
	for _, v := range values {
		src := kmsg.ConfigSourceDefaultConfig
		if _, ok := overrides[v.name]; ok {
			src = kmsg.ConfigSourceGroupConfig
		}
		val := v.value
		out = append(out, Entry{Name: v.name, Value: &val, Source: src, Type: v.typ, Documentation: v.doc,
			Synonyms: []Synonym{{Name: v.name, Value: &val, Source: src}}})
	}
	return out
}
