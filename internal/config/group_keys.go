package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group configs: the keys a GROUP config resource may set (kafka-configs
// --entity-type groups), as Kafka 4.4 names, types and checks them. A group
// without an override takes the broker's group.* default. Overrides are
// checked in two stages, as Kafka does: each value against its type (and
// the type's lower bound), then the set against the broker's
// group.*.min/max bounds. The error texts are Kafka's, so that tools
// matching on them behave the same.

// groupKey is one GROUP config key.
type groupKey struct {
	name string
	typ  Type
	// broker is the broker key whose value a group without an override
	// takes; "" when the default is def.
	broker string
	def    string
	// min is the type check's lower bound (ints and longs), when hasMin.
	min      int64
	hasMin   bool
	internal bool // accepted, not described (Kafka's internal keys)
	doc      string
}

func gk(name string, t Type, broker, def string, doc string) groupKey {
	return groupKey{name: name, typ: t, broker: broker, def: def, doc: doc}
}

func (k groupKey) atLeast(n int64) groupKey { k.min, k.hasMin = n, true; return k }
func (k groupKey) hidden() groupKey         { k.internal = true; return k }

// groupKeyList is every GROUP config key in Kafka's definition order (the
// order its type checks run in).
var groupKeyList = []groupKey{
	gk("consumer.session.timeout.ms", Int, "group.consumer.session.timeout.ms", "", "Session timeout of the group's consumer-protocol (KIP-848) members.").atLeast(1),
	gk("consumer.heartbeat.interval.ms", Int, "group.consumer.heartbeat.interval.ms", "", "Heartbeat interval given to the group's consumer-protocol members.").atLeast(1),
	gk("consumer.assignment.interval.ms", Int, "group.consumer.assignment.interval.ms", "", "Least time between two assignment computations of the consumer group (accepted; Samsa assigns at once).").atLeast(0),
	gk("consumer.assignor.offload.enable", Boolean, "group.consumer.assignor.offload.enable", "", "Compute the group's assignments on a background thread (accepted; no effect in Samsa).").hidden(),
	gk("share.session.timeout.ms", Int, "group.share.session.timeout.ms", "", "Session timeout of the share group's members.").atLeast(1),
	gk("share.heartbeat.interval.ms", Int, "group.share.heartbeat.interval.ms", "", "Heartbeat interval given to the share group's members.").atLeast(1),
	gk("share.record.lock.duration.ms", Int, "group.share.record.lock.duration.ms", "", "How long a share group member holds the records it acquired.").atLeast(1000),
	gk("share.delivery.count.limit", Int, "group.share.delivery.count.limit", "", "Deliveries of a record to the share group before it is archived.").atLeast(2),
	gk("share.partition.max.record.locks", Int, "group.share.partition.max.record.locks", "", "Most records in flight in one share partition of the group.").atLeast(100),
	gk("share.auto.offset.reset", String, "", "latest", "Where a share partition of the group starts when it has no state: latest, earliest, or by_duration:<ISO-8601 duration> (the first record no older than that)."),
	gk("share.assignment.interval.ms", Int, "group.share.assignment.interval.ms", "", "Least time between two assignment computations of the share group (accepted; Samsa assigns at once).").atLeast(0),
	gk("share.assignor.offload.enable", Boolean, "group.share.assignor.offload.enable", "", "Compute the group's assignments on a background thread (accepted; no effect in Samsa).").hidden(),
	gk("streams.session.timeout.ms", Int, "group.streams.session.timeout.ms", "", "Session timeout of the streams group's members.").atLeast(1),
	gk("streams.heartbeat.interval.ms", Int, "group.streams.heartbeat.interval.ms", "", "Heartbeat interval given to the streams group's members.").atLeast(1),
	gk("streams.num.standby.replicas", Int, "group.streams.num.standby.replicas", "", "Standby replicas of each task of the streams group.").atLeast(0),
	gk("streams.initial.rebalance.delay.ms", Int, "group.streams.initial.rebalance.delay.ms", "", "Wait for more members before the first assignment of the new streams group.").atLeast(0),
	gk("streams.assignment.interval.ms", Int, "group.streams.assignment.interval.ms", "", "Least time between two assignment computations of the streams group (accepted; Samsa assigns at once).").atLeast(0),
	gk("streams.rack.aware.assignment.tags", List, "group.streams.rack.aware.assignment.tags", "", "Client tag keys over which standby tasks are spread (accepted; Samsa's assignor ignores tags)."),
	gk("streams.assignor.offload.enable", Boolean, "group.streams.assignor.offload.enable", "", "Compute the group's assignments on a background thread (accepted; no effect in Samsa).").hidden(),
	gk("streams.task.offset.interval.ms", Int, "group.streams.task.offset.interval.ms", "", "How often the streams group's members report their changelog offsets.").atLeast(1).hidden(),
	gk("streams.num.warmup.replicas", Int, "group.streams.num.warmup.replicas", "", "Most warm-up task replicas of the streams group (accepted; Samsa plans no warm-up tasks).").atLeast(0).hidden(),
	gk("streams.acceptable.recovery.lag", Long, "group.streams.acceptable.recovery.lag", "", "Largest changelog lag at which a task counts as caught up.").atLeast(0).hidden(),
	gk("streams.assignor.name", String, "group.streams.assignors", "", "The task assignor of the streams group, by name; unset: the first of group.streams.assignors."),
	gk("share.isolation.level", String, "", "read_uncommitted", "read_committed: the share group gets only committed transactional records; read_uncommitted: all records."),
	gk("share.renew.acknowledge.enable", Boolean, "", "true", "Whether the share group's members may renew their acquisition locks (accepted; no effect in Samsa)."),
	gk("errors.deadletterqueue.topic.name", String, "", "", "Dead-letter topic of the share group; blank: none (accepted; Samsa writes no dead-letter records)."),
	gk("errors.deadletterqueue.copy.record.enable", Boolean, "", "false", "Whether dead-letter records copy the original record (accepted; Samsa writes no dead-letter records)."),
}

var groupKeys = func() map[string]groupKey {
	m := make(map[string]groupKey, len(groupKeyList))
	for _, k := range groupKeyList {
		m[k.name] = k
	}
	return m
}()

// isoDuration is the PnDTnHnMn.nS form share.auto.offset.reset's
// by_duration takes (java.time.Duration.parse), without a sign.
var isoDuration = regexp.MustCompile(`^[Pp](?:(\d+)[Dd])?(?:[Tt](?:(\d+)[Hh])?(?:(\d+)[Mm])?(?:(\d+)(?:[.,](\d{0,9}))?[Ss])?)?$`)

// ParseShareResetDuration returns the duration of a by_duration:<ISO 8601>
// share.auto.offset.reset value; ok is false for any other value.
func ParseShareResetDuration(v string) (d time.Duration, ok bool) {
	rest, found := strings.CutPrefix(v, "by_duration:")
	if !found {
		return 0, false
	}
	m := isoDuration.FindStringSubmatch(strings.TrimSpace(rest))
	if m == nil || strings.HasSuffix(strings.ToUpper(rest), "T") || len(rest) < 3 {
		return 0, false
	}
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	d = time.Duration(num(m[1]))*24*time.Hour + time.Duration(num(m[2]))*time.Hour +
		time.Duration(num(m[3]))*time.Minute + time.Duration(num(m[4]))*time.Second
	if m[5] != "" {
		frac := m[5] + strings.Repeat("0", 9-len(m[5]))
		d += time.Duration(num(frac))
	}
	return d, true
}

// checkType is Kafka's ConfigDef parse of one value: its type, then the
// type's lower bound (and, for the two enumerations, their values).
func (k groupKey) checkType(v string) error {
	bad := func(why string) error {
		return fmt.Errorf("Invalid value %s for configuration %s: %s", v, k.name, why)
	}
	s := strings.TrimSpace(v)
	switch k.typ {
	case Int, Long:
		bits, name := 32, "INT"
		if k.typ == Long {
			bits, name = 64, "LONG"
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return bad("Not a number of type " + name)
		}
		if k.hasMin && n < k.min {
			return fmt.Errorf("Invalid value %d for configuration %s: Value must be at least %d", n, k.name, k.min)
		}
	case Boolean:
		if l := strings.ToLower(s); l != "true" && l != "false" {
			return bad("Expected value to be either true or false")
		}
	case String:
		switch k.name {
		case "share.auto.offset.reset":
			if _, ok := ParseShareResetDuration(s); !ok && s != "latest" && s != "earliest" {
				return bad(fmt.Sprintf("Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", s, k.name))
			}
		case "share.isolation.level":
			if s != "read_committed" && s != "read_uncommitted" {
				return bad("String must be one of: read_committed, read_uncommitted")
			}
		}
	}
	return nil
}

// groupBound is one check of a group's overrides against the broker:
// the key's value must lie within the broker keys lo and hi (either may
// be "" for no bound).
type groupBound struct{ key, lo, hi string }

// groupBounds are Kafka's checks against the broker's bounds, in its order.
var groupBounds = []groupBound{
	{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{"consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms"},
	{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{"share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{"share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{"share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	{"share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"},
	{"streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
	{"streams.num.standby.replicas", "", "group.streams.max.standby.replicas"},
	{"streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"},
	{"streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", ""},
	{"streams.num.warmup.replicas", "", "group.streams.max.warmup.replicas"},
}

// sessionHeartbeat pairs each session timeout with its heartbeat interval:
// the effective session timeout must exceed the effective interval.
var sessionHeartbeat = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

// ValidateGroupConfigs checks the complete set of overrides one group would
// have, as a broker checks an AlterConfigs or IncrementalAlterConfigs of a
// GROUP resource; the error's text is Kafka's, for INVALID_CONFIG.
func (c *Config) ValidateGroupConfigs(configs map[string]string) error {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range configs {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if _, ok := groupKeys[n]; !ok {
			return fmt.Errorf("Unknown group config name: %s", n)
		}
	}
	if v, ok := configs["streams.rack.aware.assignment.tags"]; ok {
		tags := splitList(v)
		for i, t := range tags {
			if t != "" && slices.Contains(tags[:i], t) {
				return fmt.Errorf("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
			}
		}
	}
	for _, k := range groupKeyList {
		if v, ok := configs[k.name]; ok {
			if err := k.checkType(v); err != nil {
				return err
			}
		}
	}
	for _, b := range groupBounds {
		v, ok := configs[b.key]
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case b.lo != "" && b.hi != "":
			lo, hi := c.groupBroker(b.lo), c.groupBroker(b.hi)
			if n < lo || n > hi {
				return fmt.Errorf("%s must be in the range %d to %d inclusive.", b.key, lo, hi)
			}
		case b.hi != "":
			if hi := c.groupBroker(b.hi); n > hi {
				return fmt.Errorf("%s must be less than or equal to %d", b.key, hi)
			}
		default:
			if lo := c.groupBroker(b.lo); n < lo {
				return fmt.Errorf("%s must be greater than or equal to %d", b.key, lo)
			}
		}
	}
	if v, ok := configs["streams.assignor.name"]; ok {
		if names := c.list("group.streams.assignors"); !slices.Contains(names, strings.TrimSpace(v)) {
			return fmt.Errorf("streams.assignor.name '%s' is not a registered task assignor. Registered assignors are: [%s].", strings.TrimSpace(v), strings.Join(names, ", "))
		}
	}
	g := c.groupValues(configs)
	for _, p := range sessionHeartbeat {
		_, s := configs[p[0]]
		_, h := configs[p[1]]
		if (s || h) && g.num(p[0]) <= g.num(p[1]) {
			return fmt.Errorf("%s must be greater than %s", p[0], p[1])
		}
	}
	if v := configs["errors.deadletterqueue.topic.name"]; strings.HasPrefix(strings.TrimSpace(v), "__") {
		return fmt.Errorf("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
	}
	return nil
}

// groupBroker is an int broker key bounding group configs.
func (c *Config) groupBroker(name string) int64 {
	switch v := c.values[name].(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// groupDefault is the value a group without an override takes for k.
func (c *Config) groupDefault(k groupKey) string {
	if k.broker == "" {
		return k.def
	}
	if k.name == "streams.assignor.name" {
		if l := c.list(k.broker); len(l) > 0 {
			return l[0]
		}
		return ""
	}
	if v, ok := c.values[k.broker]; ok {
		return format(k.typ, v)
	}
	return ""
}

// groupValues are a group's effective values by key: each valid override
// capped to the broker's current bounds (which may have narrowed since it
// was set), else the broker default.
type groupValues map[string]string

func (g groupValues) num(name string) int64 {
	n, _ := strconv.ParseInt(g[name], 10, 64)
	return n
}

func (c *Config) groupValues(overrides map[string]string) groupValues {
	g := make(groupValues, len(groupKeyList))
	for _, k := range groupKeyList {
		g[k.name] = c.groupDefault(k)
		if v, ok := overrides[k.name]; ok && k.checkType(v) == nil {
			g[k.name] = strings.TrimSpace(v)
		}
	}
	for _, b := range groupBounds {
		if _, ok := overrides[b.key]; !ok {
			continue
		}
		n := g.num(b.key)
		if b.lo != "" {
			n = max(n, c.groupBroker(b.lo))
		}
		if b.hi != "" {
			n = min(n, c.groupBroker(b.hi))
		}
		g[b.key] = strconv.FormatInt(n, 10)
	}
	return g
}

// GroupConfig is one group's effective configuration: its GROUP config
// overrides over the broker's group.* defaults, capped to the broker's
// bounds. Samsa acts on these; the other keys are accepted and described
// only (see docs/compatibility.md).
type GroupConfig struct {
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration

	ShareSessionTimeout, ShareHeartbeatInterval time.Duration
	ShareRecordLockDurationMs                   int32
	ShareDeliveryCountLimit                     int32
	ShareAutoOffsetReset                        string // latest, earliest or by_duration:<ISO 8601>
	ShareIsolationLevel                         string // read_uncommitted or read_committed

	StreamsSessionTimeout, StreamsHeartbeatInterval time.Duration
	StreamsNumStandbyReplicas                       int
	StreamsInitialRebalanceDelay                    time.Duration
	StreamsTaskOffsetInterval                       time.Duration
	StreamsAcceptableRecoveryLag                    int64
}

// GroupConfig returns a group's effective configuration from its overrides.
func (c *Config) GroupConfig(overrides map[string]string) GroupConfig {
	g := c.groupValues(overrides)
	ms := func(k string) time.Duration { return time.Duration(g.num(k)) * time.Millisecond }
	return GroupConfig{
		ConsumerSessionTimeout:       ms("consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval:    ms("consumer.heartbeat.interval.ms"),
		ShareSessionTimeout:          ms("share.session.timeout.ms"),
		ShareHeartbeatInterval:       ms("share.heartbeat.interval.ms"),
		ShareRecordLockDurationMs:    int32(g.num("share.record.lock.duration.ms")),
		ShareDeliveryCountLimit:      int32(g.num("share.delivery.count.limit")),
		ShareAutoOffsetReset:         g["share.auto.offset.reset"],
		ShareIsolationLevel:          g["share.isolation.level"],
		StreamsSessionTimeout:        ms("streams.session.timeout.ms"),
		StreamsHeartbeatInterval:     ms("streams.heartbeat.interval.ms"),
		StreamsNumStandbyReplicas:    int(g.num("streams.num.standby.replicas")),
		StreamsInitialRebalanceDelay: ms("streams.initial.rebalance.delay.ms"),
		StreamsTaskOffsetInterval:    ms("streams.task.offset.interval.ms"),
		StreamsAcceptableRecoveryLag: g.num("streams.acceptable.recovery.lag"),
	}
}

// DescribeGroup lists a group's configs for DescribeConfigs as Kafka does:
// every non-internal key, sorted by name, with its effective value; an
// override reports GROUP_CONFIG, anything else DEFAULT_CONFIG, and the
// synonyms are the override then the broker key (or the key itself when
// its default has no broker key).
func (c *Config) DescribeGroup(overrides map[string]string) []Entry {
	g := c.groupValues(overrides)
	var out []Entry
	for _, k := range groupKeyList {
		if k.internal {
			continue
		}
		val := g[k.name]
		e := Entry{Name: k.name, Value: &val, Source: kmsg.ConfigSourceDefaultConfig,
			Type: kmsg.ConfigType(k.typ), Documentation: k.doc}
		if o, ok := overrides[k.name]; ok {
			e.Source = kmsg.ConfigSourceGroupConfig
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.name, Value: ptr(o), Source: kmsg.ConfigSourceGroupConfig})
		}
		synName, def := k.broker, c.groupDefault(k)
		if synName == "" {
			synName = k.name
		}
		if k.name == "streams.assignor.name" {
			def = strings.Join(c.list(k.broker), ",")
		}
		e.Synonyms = append(e.Synonyms, Synonym{Name: synName, Value: ptr(def), Source: kmsg.ConfigSourceDefaultConfig})
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}
