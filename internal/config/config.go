package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// EmbeddedDefaults is the server.properties that `samsa server` runs when it
// is given no file: one combined broker+controller node on loopback, with
// internal topics at replication factor 1 so a single node can serve them.
// It differs from Kafka's defaults only where Kafka has no usable default.
const EmbeddedDefaults = `node.id=1
process.roles=broker,controller
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
controller.quorum.voters=1@127.0.0.1:9093
log.dirs=./data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
schema.registry.listeners=http://127.0.0.1:8081
rest.proxy.listeners=http://127.0.0.1:8082
`

// Config is a node's static configuration. The typed fields are what the
// code uses; every other known key is reachable through Value. Durations are
// milliseconds and sizes bytes, as in Kafka.
type Config struct {
	// Explicit holds every property set by the file (or the embedded
	// defaults) and the overrides, unknown keys included, as written. A key
	// present here is reported with source STATIC_BROKER_CONFIG.
	Explicit map[string]string

	NodeID       int32
	ProcessRoles []string // "broker", "controller"

	Listeners []Listener
	// AdvertisedListeners is advertised.listeners, or Listeners when unset.
	AdvertisedListeners []Listener
	// ListenerSecurityProtocolMap maps listener names to PLAINTEXT, SSL,
	// SASL_PLAINTEXT or SASL_SSL. When listener.security.protocol.map is not
	// set, controller listeners missing from it map to PLAINTEXT, as in Kafka.
	ListenerSecurityProtocolMap map[string]string
	ControllerListenerNames     []string
	// InterBrokerListenerName is inter.broker.listener.name, or the
	// listener named after security.inter.broker.protocol.
	InterBrokerListenerName          string
	ControllerQuorumVoters           []Voter
	ControllerQuorumBootstrapServers []string
	BrokerRack                       string
	// AuthorizerClassName is authorizer.class.name; empty disables
	// authorization (internal/server accepts only Kafka's
	// StandardAuthorizer).
	AuthorizerClassName string
	// SuperUsers is super.users: principals ("User:admin") allowed
	// everything, split on ';' and trimmed as Kafka does, empty entries
	// dropped. Each must be Type:Name.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: the
	// answer for a resource no ACL applies to.
	AllowEveryoneIfNoACLFound bool
	// ConnectionFailedAuthenticationDelayMs is
	// connection.failed.authentication.delay.ms: how long a connection
	// that failed authentication stays open (answered, but not read)
	// before it is closed. The rest of the SASL keys are per listener:
	// SASLListener.
	ConnectionFailedAuthenticationDelayMs int32
	// SASLMechanismInterBrokerProtocol is
	// sasl.mechanism.inter.broker.protocol and
	// SASLMechanismControllerProtocol sasl.mechanism.controller.protocol:
	// the mechanisms this node authenticates with when it dials a SASL
	// inter-broker or controller listener (Kafka's default, GSSAPI, is
	// refused by internal/server when it would be used).
	SASLMechanismInterBrokerProtocol string
	SASLMechanismControllerProtocol  string
	// ClusterID is not a property: `samsa server --cluster-id` sets it to
	// format fresh data directories with a cluster id shared by every node
	// (Kafka's `kafka-storage format -t`). Empty: generate one, which only
	// a single-voter cluster can do.
	ClusterID string
	// AddScram is not a property either: `samsa server --add-scram`
	// arguments (Kafka's `kafka-storage format --add-scram`), SCRAM
	// credentials written into the metadata log when it is bootstrapped,
	// in security.ParseScramArg's form. Ignored once the log exists.
	AddScram []string
	// ReleaseVersion and Features are not properties either: `samsa
	// server --release-version` and `--feature name=level` (Kafka's
	// `kafka-storage format` flags), the feature levels a new metadata
	// log starts at (metadata.InitialFeatures). Ignored once it exists.
	ReleaseVersion string
	Features       []string
	// Quorum is not a property either: how a controller of a dynamic
	// quorum (no controller.quorum.voters, KIP-853) formats a new
	// metadata log, from `samsa server --standalone`,
	// `--initial-controllers` or `--no-initial-controllers` (Kafka's
	// `kafka-storage format` flags). Ignored once the log exists.
	Quorum QuorumFormat
	// HTTPDefault is not a property either: `samsa server` sets it when
	// it serves http.listeners at DefaultHTTPListener because it runs
	// from the embedded defaults; a port taken there is then a warning,
	// not a failure.
	HTTPDefault bool

	LogDirs        []string // log.dirs, or log.dir when unset
	MetadataLogDir string   // metadata.log.dir, or LogDirs[0] when unset

	NumNetworkThreads            int
	NumIOThreads                 int
	NumRecoveryThreadsPerDataDir int
	QueuedMaxRequests            int
	QueuedMaxRequestBytes        int64

	// QuotaWindowNum and QuotaWindowSize are quota.window.num and
	// quota.window.size.seconds: client quota rates are measured over
	// that many samples of that length.
	QuotaWindowNum  int
	QuotaWindowSize time.Duration

	SocketSendBufferBytes    int // -1: OS default
	SocketReceiveBufferBytes int // -1: OS default
	SocketRequestMaxBytes    int32
	ConnectionsMaxIdleMs     int64

	NumPartitions            int32
	DefaultReplicationFactor int16
	MinInsyncReplicas        int
	AutoCreateTopicsEnable   bool
	// MaxRequestPartitionSizeLimit bounds a DescribeTopicPartitions
	// response (max.request.partition.size.limit).
	MaxRequestPartitionSizeLimit int32
	DeleteTopicEnable            bool
	MessageMaxBytes              int32
	CompressionType              string
	UncleanLeaderElectionEnable  bool
	ReplicaLagTimeMaxMs          int64

	ReplicaFetchWaitMaxMs                    int32
	ReplicaFetchMinBytes                     int32
	ReplicaFetchResponseMaxBytes             int32
	ReplicaFetchMaxBytes                     int32
	ReplicaFetchBackoffMs                    int32
	MaxIncrementalFetchSessionCacheSlots     int
	ReplicaHighWatermarkCheckpointIntervalMs int64

	BrokerHeartbeatIntervalMs           int32
	BrokerSessionTimeoutMs              int32
	AutoLeaderRebalanceEnable           bool
	LeaderImbalanceCheckIntervalSeconds int64
	// DelegationTokenSecretKey (delegation.token.secret.key) signs
	// delegation tokens; "" disables them. The durations are
	// delegation.token.max.lifetime.ms, .expiry.time.ms and
	// .expiry.check.interval.ms.
	DelegationTokenSecretKey                                  string
	DelegationTokenMaxLifetimeMs, DelegationTokenExpiryTimeMs int64
	DelegationTokenExpiryCheckIntervalMs                      int64

	LogSegmentBytes int64
	LogRollMs       int64 // log.roll.ms, else log.roll.hours
	LogRollJitterMs int64 // log.roll.jitter.ms, else log.roll.jitter.hours
	// LogRetentionMs applies Kafka's precedence: log.retention.ms, else
	// log.retention.minutes, else log.retention.hours. Negative means -1:
	// keep forever.
	LogRetentionMs                     int64
	LogRetentionBytes                  int64 // -1: no limit
	LogRetentionCheckIntervalMs        int64
	LogIndexIntervalBytes              int
	LogIndexSizeMaxBytes               int
	LogFlushIntervalMessages           int64
	LogFlushIntervalMs                 int64 // log.flush.interval.ms, else log.flush.scheduler.interval.ms
	LogFlushSchedulerIntervalMs        int64
	LogFlushOffsetCheckpointIntervalMs int64
	LogCleanupPolicy                   []string
	LogMessageTimestampType            string // CreateTime or LogAppendTime
	LogMessageTimestampBeforeMaxMs     int64
	LogMessageTimestampAfterMaxMs      int64
	LogCleanerEnable                   bool
	LogCleanerThreads                  int32
	LogCleanerDedupeBufferSize         int64
	LogCleanerBackoffMs                int64
	SamsaLogMaxOpenFiles               int // 0: derived from RLIMIT_NOFILE

	OffsetsTopicReplicationFactor    int16
	OffsetsTopicNumPartitions        int32
	OffsetsRetentionMinutes          int
	GroupInitialRebalanceDelayMs     int64
	GroupMinSessionTimeoutMs         int64
	GroupMaxSessionTimeoutMs         int64
	GroupMaxSize                     int32
	OffsetsRetentionCheckIntervalMs  int64
	OffsetMetadataMaxBytes           int32
	OffsetsTopicSegmentBytes         int32
	OffsetsCommitTimeoutMs           int32
	GroupConsumerSessionTimeoutMs    int32
	GroupConsumerHeartbeatIntervalMs int32
	GroupConsumerMaxSize             int32
	GroupConsumerAssignors           []string
	GroupStreams                     GroupStreamsConfig
	// Share groups (KIP-932): group.share.*.
	GroupShareSessionTimeoutMs, GroupShareHeartbeatIntervalMs int32
	GroupShareMaxSize                                         int16
	GroupShareRecordLockDurationMs                            int32
	GroupShareDeliveryCountLimit                              int32
	GroupSharePartitionMaxRecordLocks                         int32
	GroupShareMaxShareSessions                                int32
	ShareCoordinatorStateTopicReplicationFactor               int16
	ShareCoordinatorStateTopicMinISR                          int16
	// ShareCoordinatorStateTopicNumPartitions and ...SegmentBytes shape
	// __share_group_state; ShareCoordinatorSnapshotUpdateRecordsPerSnapshot
	// is share.coordinator.snapshot.update.records.per.snapshot and
	// ShareCoordinatorWriteTimeoutMs share.coordinator.write.timeout.ms;
	// ShareCoordinatorStateTopicPruneIntervalMs is the internal
	// share.coordinator.state.topic.prune.interval.ms.
	ShareCoordinatorStateTopicNumPartitions          int32
	ShareCoordinatorStateTopicSegmentBytes           int32
	ShareCoordinatorSnapshotUpdateRecordsPerSnapshot int32
	ShareCoordinatorWriteTimeoutMs                   int32
	ShareCoordinatorStateTopicPruneIntervalMs        int32

	TransactionStateLogReplicationFactor int16
	TransactionStateLogMinISR            int
	TransactionStateLogNumPartitions     int32
	TransactionStateLogSegmentBytes      int32
	// TransactionAbortTimedOutCleanupIntervalMs is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms;
	// TransactionRemoveExpiredCleanupIntervalMs is
	// transaction.remove.expired.transaction.cleanup.interval.ms.
	TransactionAbortTimedOutCleanupIntervalMs int32
	TransactionRemoveExpiredCleanupIntervalMs int32
	TransactionMaxTimeoutMs                   int64
	TransactionalIDExpirationMs               int64
	ProducerIDExpirationMs                    int64
	// AddPartitionsToTxnRetryBackoffMs and ...MaxMs are
	// add.partitions.to.txn.retry.backoff.ms and .max.ms.
	AddPartitionsToTxnRetryBackoffMs    int32
	AddPartitionsToTxnRetryBackoffMaxMs int32

	// values holds the parsed value of every known key that has one:
	// dynamic, explicitly set, or Kafka's non-null default.
	values map[string]any
	// dynBroker and dynDefault are the dynamic per-broker and
	// cluster-default values layered on by WithDynamic, as written.
	dynBroker, dynDefault map[string]string
}

// Load reads the configuration of a node. path "" means EmbeddedDefaults.
// overrides are "key=value" strings that win over the file. It returns
// warnings (unknown or removed keys, each naming the key) and fails on the
// first file or syntax problem, or on every invalid value at once.
func Load(path string, overrides []string) (*Config, []string, error) {
	text := EmbeddedDefaults
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("read config: %w", err)
		}
		text = string(b)
	}
	props, err := ParseProperties(text)
	if err != nil {
		if path == "" {
			path = "embedded defaults"
		}
		var se *SyntaxError
		if errors.As(err, &se) {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, se.Line, se.Err)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, o := range overrides {
		key, val, ok := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, nil, fmt.Errorf("invalid override %q: want key=value", o)
		}
		props = append(props, Property{Key: key, Value: val})
	}
	return fromProperties(props, path)
}

// Default returns the configuration of EmbeddedDefaults plus overrides. It
// panics if they are invalid; it is meant for tests and tools.
func Default(overrides ...string) *Config {
	c, _, err := Load("", overrides)
	if err != nil {
		panic(err)
	}
	return c
}

// FromProperties builds a Config from parsed properties; later ones win.
func FromProperties(props []Property) (*Config, []string, error) {
	return fromProperties(props, "")
}

// fromProperties is FromProperties for properties read from file (""
// for none): messages about a key from the file name the file and line,
// "server.properties:12: invalid value ...".
func fromProperties(props []Property, file string) (*Config, []string, error) {
	where := func(p Property) string {
		if file == "" || p.Line == 0 {
			return ""
		}
		return fmt.Sprintf("%s:%d", file, p.Line)
	}
	c := &Config{Explicit: map[string]string{}, values: map[string]any{}}
	var order []string
	// from is the property each key's value came from (the last one):
	// messages about a key read from a file name its file and line.
	from := map[string]Property{}
	for _, p := range props {
		if _, seen := c.Explicit[p.Key]; !seen {
			order = append(order, p.Key)
		}
		c.Explicit[p.Key] = p.Value
		from[p.Key] = p
	}
	var warnings []string
	var errs []error
	for _, name := range order {
		key, ok := brokerKeys[name]
		if !ok {
			key, _, ok = listenerKey(name) // listener.name.<l>.<key> (ssl.go)
		}
		if !ok {
			if w := unknownWarning(name); w != "" {
				if at := where(from[name]); at != "" {
					w = at + ": " + w
				}
				warnings = append(warnings, w)
			}
			continue
		}
		v, err := key.parse(c.Explicit[name])
		if err != nil {
			if at := where(from[name]); at != "" {
				err = fmt.Errorf("%s: %w", at, err)
			}
			errs = append(errs, err)
			continue
		}
		c.values[name] = v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, warnings, err
	}
	for _, key := range brokerKeyList {
		if _, ok := c.values[key.Name]; !ok && key.HasDefault {
			v, err := key.parse(key.Default)
			if err != nil {
				panic("config: bad default for " + key.Name + ": " + err.Error())
			}
			c.values[key.Name] = v
		}
	}
	if err := c.fill(); err != nil {
		return nil, warnings, locate(err, from, where)
	}
	if err := c.validate(); err != nil {
		return nil, warnings, locate(err, from, where)
	}
	return c, append(warnings, c.listenerKeyWarnings()...), nil
}

// locate prefixes an error about how keys fit together with the place of
// the key it names (the longest key name it contains, so that
// advertised.listeners is not taken for listeners), when that key was
// read from a file.
func locate(err error, from map[string]Property, where func(Property) string) error {
	msg := err.Error()
	best, at := "", ""
	for name, p := range from {
		if w := where(p); w != "" && len(name) > len(best) && containsKey(msg, name) {
			best, at = name, w
		}
	}
	if at != "" {
		return fmt.Errorf("%s: %w", at, err)
	}
	return err
}

// containsKey reports whether msg mentions key as a whole key name, not
// as part of a longer dotted name.
func containsKey(msg, key string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], key)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(key)
		if (start == 0 || !isKeyByte(msg[start-1])) && (end == len(msg) || !isKeyByte(msg[end])) {
			return true
		}
		i = start + 1
	}
}

func isKeyByte(c byte) bool {
	return c == '.' || c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func unknownWarning(name string) string {
	// Kafka accepts per-listener overrides such as
	// listener.name.client.scram-sha-512.sasl.jaas.config; the security
	// layer reads them from Explicit.
	if strings.HasPrefix(name, "listener.name.") {
		return ""
	}
	if why, ok := removedKeys[name]; ok {
		return fmt.Sprintf("config %s ignored: %s", name, why)
	}
	return fmt.Sprintf("unknown config %s ignored", name)
}

// Value returns the parsed value of a known broker key (bool, string, int16,
// int32, int64, float64 or []string) and whether it has one.
func (c *Config) Value(name string) (any, bool) {
	v, ok := c.values[name]
	return v, ok
}

// IsSet reports whether a key was set explicitly (file or override).
func (c *Config) IsSet(name string) bool {
	_, ok := c.Explicit[name]
	return ok
}

// HasRole reports whether process.roles contains role.
func (c *Config) HasRole(role string) bool { return contains(c.ProcessRoles, role) }

// IsControllerListener reports whether name is one of controller.listener.names.
func (c *Config) IsControllerListener(name string) bool {
	return contains(c.ControllerListenerNames, strings.ToUpper(name))
}

// BrokerListeners are the listeners that serve clients and brokers: every
// listener that is not a controller listener.
func (c *Config) BrokerListeners() []Listener { return c.filter(c.Listeners, false) }

// ControllerListeners are the listeners of the controller quorum.
func (c *Config) ControllerListeners() []Listener { return c.filter(c.Listeners, true) }

// AdvertisedBrokerListeners are the endpoints a broker registers and
// returns in Metadata responses.
func (c *Config) AdvertisedBrokerListeners() []Listener {
	return c.filter(c.AdvertisedListeners, false)
}

func (c *Config) filter(ls []Listener, controller bool) []Listener {
	var out []Listener
	for _, l := range ls {
		if c.IsControllerListener(l.Name) == controller {
			out = append(out, l)
		}
	}
	return out
}

func (c *Config) str(name string) string    { s, _ := c.values[name].(string); return s }
func (c *Config) i32(name string) int32     { return c.values[name].(int32) }
func (c *Config) i64(name string) int64     { return c.values[name].(int64) }
func (c *Config) i16(name string) int16     { return c.values[name].(int16) }
func (c *Config) flag(name string) bool     { return c.values[name].(bool) }
func (c *Config) list(name string) []string { l, _ := c.values[name].([]string); return l }

// msOr returns the ms key when set, else the alt key times unit.
func (c *Config) msOr(ms string, alt string, unit int64) int64 {
	if v, ok := c.values[ms]; ok {
		return v.(int64)
	}
	return int64(c.i32(alt)) * unit
}

const (
	msPerMinute = 60 * 1000
	msPerHour   = 60 * msPerMinute
)

// fill sets the typed fields from values.
func (c *Config) fill() error {
	var err error
	c.NodeID = c.i32("node.id")
	c.ProcessRoles = c.list("process.roles")
	if c.Listeners, err = parseListeners("listeners", c.str("listeners")); err != nil {
		return err
	}
	c.AdvertisedListeners = append([]Listener(nil), c.Listeners...)
	if raw, ok := c.values["advertised.listeners"]; ok {
		if c.AdvertisedListeners, err = parseListeners("advertised.listeners", raw.(string)); err != nil {
			return err
		}
	}
	for _, n := range splitList(c.str("controller.listener.names")) {
		c.ControllerListenerNames = append(c.ControllerListenerNames, strings.ToUpper(n))
	}
	if c.ListenerSecurityProtocolMap, err = parseProtocolMap(c.str("listener.security.protocol.map")); err != nil {
		return err
	}
	if !c.IsSet("listener.security.protocol.map") {
		for _, n := range c.ControllerListenerNames {
			if _, ok := c.ListenerSecurityProtocolMap[n]; !ok {
				c.ListenerSecurityProtocolMap[n] = "PLAINTEXT"
			}
		}
	}
	c.InterBrokerListenerName = c.str("security.inter.broker.protocol")
	if n, ok := c.values["inter.broker.listener.name"]; ok {
		c.InterBrokerListenerName = strings.ToUpper(strings.TrimSpace(n.(string)))
	}
	if c.ControllerQuorumVoters, err = parseVoters(c.list("controller.quorum.voters")); err != nil {
		return err
	}
	c.ControllerQuorumBootstrapServers = c.list("controller.quorum.bootstrap.servers")
	if err := validateHostPorts("controller.quorum.bootstrap.servers", c.ControllerQuorumBootstrapServers); err != nil {
		return err
	}
	c.BrokerRack = c.str("broker.rack")
	c.AuthorizerClassName = strings.TrimSpace(c.str("authorizer.class.name"))
	if c.SuperUsers, err = parseSuperUsers(c.str("super.users")); err != nil {
		return err
	}
	c.AllowEveryoneIfNoACLFound = c.flag("allow.everyone.if.no.acl.found")
	c.ConnectionFailedAuthenticationDelayMs = c.i32("connection.failed.authentication.delay.ms")
	c.SASLMechanismInterBrokerProtocol = c.str("sasl.mechanism.inter.broker.protocol")
	c.SASLMechanismControllerProtocol = c.str("sasl.mechanism.controller.protocol")

	c.LogDirs = splitList(c.str("log.dir"))
	if d, ok := c.values["log.dirs"]; ok {
		c.LogDirs = splitList(d.(string))
	}
	if len(c.LogDirs) > 0 {
		c.MetadataLogDir = c.LogDirs[0]
	}
	if d, ok := c.values["metadata.log.dir"]; ok {
		c.MetadataLogDir = d.(string)
	}

	c.NumNetworkThreads = int(c.i32("num.network.threads"))
	c.NumIOThreads = int(c.i32("num.io.threads"))
	c.NumRecoveryThreadsPerDataDir = int(c.i32("num.recovery.threads.per.data.dir"))
	c.QueuedMaxRequests = int(c.i32("queued.max.requests"))
	c.QueuedMaxRequestBytes = c.i64("queued.max.request.bytes")
	c.QuotaWindowNum = int(c.i32("quota.window.num"))
	c.QuotaWindowSize = time.Duration(c.i32("quota.window.size.seconds")) * time.Second
	c.SocketSendBufferBytes = int(c.i32("socket.send.buffer.bytes"))
	c.SocketReceiveBufferBytes = int(c.i32("socket.receive.buffer.bytes"))
	c.SocketRequestMaxBytes = c.i32("socket.request.max.bytes")
	c.ConnectionsMaxIdleMs = c.i64("connections.max.idle.ms")

	c.NumPartitions = c.i32("num.partitions")
	rf := c.i32("default.replication.factor")
	if rf < 1 || rf > 32767 {
		return &ValueError{Key: "default.replication.factor", Value: c.Explicit["default.replication.factor"], Want: "an int between 1 and 32767"}
	}
	c.DefaultReplicationFactor = int16(rf)
	c.MinInsyncReplicas = int(c.i32("min.insync.replicas"))
	c.AutoCreateTopicsEnable = c.flag("auto.create.topics.enable")
	c.MaxRequestPartitionSizeLimit = c.i32("max.request.partition.size.limit")
	c.DeleteTopicEnable = c.flag("delete.topic.enable")
	c.MessageMaxBytes = c.i32("message.max.bytes")
	c.CompressionType = c.str("compression.type")
	c.UncleanLeaderElectionEnable = c.flag("unclean.leader.election.enable")
	c.ReplicaLagTimeMaxMs = c.i64("replica.lag.time.max.ms")
	c.ReplicaFetchWaitMaxMs = c.i32("replica.fetch.wait.max.ms")
	c.ReplicaFetchMinBytes = c.i32("replica.fetch.min.bytes")
	c.ReplicaFetchResponseMaxBytes = c.i32("replica.fetch.response.max.bytes")
	c.ReplicaFetchMaxBytes = c.i32("replica.fetch.max.bytes")
	c.ReplicaFetchBackoffMs = c.i32("replica.fetch.backoff.ms")
	c.MaxIncrementalFetchSessionCacheSlots = int(c.i32("max.incremental.fetch.session.cache.slots"))
	c.ReplicaHighWatermarkCheckpointIntervalMs = c.i64("replica.high.watermark.checkpoint.interval.ms")
	c.BrokerHeartbeatIntervalMs = c.i32("broker.heartbeat.interval.ms")
	c.BrokerSessionTimeoutMs = c.i32("broker.session.timeout.ms")
	c.AutoLeaderRebalanceEnable = c.flag("auto.leader.rebalance.enable")
	c.LeaderImbalanceCheckIntervalSeconds = c.i64("leader.imbalance.check.interval.seconds")
	c.DelegationTokenSecretKey = c.str("delegation.token.secret.key")
	c.DelegationTokenMaxLifetimeMs = c.i64("delegation.token.max.lifetime.ms")
	c.DelegationTokenExpiryTimeMs = c.i64("delegation.token.expiry.time.ms")
	c.DelegationTokenExpiryCheckIntervalMs = c.i64("delegation.token.expiry.check.interval.ms")

	c.LogSegmentBytes = int64(c.i32("log.segment.bytes"))
	c.LogRollMs = c.msOr("log.roll.ms", "log.roll.hours", msPerHour)
	c.LogRollJitterMs = c.msOr("log.roll.jitter.ms", "log.roll.jitter.hours", msPerHour)
	c.LogRetentionMs = c.retentionMs()
	c.LogRetentionBytes = c.i64("log.retention.bytes")
	c.LogRetentionCheckIntervalMs = c.i64("log.retention.check.interval.ms")
	c.LogIndexIntervalBytes = int(c.i32("log.index.interval.bytes"))
	c.LogIndexSizeMaxBytes = int(c.i32("log.index.size.max.bytes"))
	c.LogFlushIntervalMessages = c.i64("log.flush.interval.messages")
	c.LogFlushSchedulerIntervalMs = c.i64("log.flush.scheduler.interval.ms")
	c.LogFlushIntervalMs = c.LogFlushSchedulerIntervalMs
	if v, ok := c.values["log.flush.interval.ms"]; ok {
		c.LogFlushIntervalMs = v.(int64)
	}
	c.LogFlushOffsetCheckpointIntervalMs = int64(c.i32("log.flush.offset.checkpoint.interval.ms"))
	c.LogCleanupPolicy = c.list("log.cleanup.policy")
	c.LogMessageTimestampType = c.str("log.message.timestamp.type")
	c.LogMessageTimestampBeforeMaxMs = c.i64("log.message.timestamp.before.max.ms")
	c.LogMessageTimestampAfterMaxMs = c.i64("log.message.timestamp.after.max.ms")
	c.LogCleanerEnable = c.flag("log.cleaner.enable")
	c.LogCleanerThreads = c.i32("log.cleaner.threads")
	c.LogCleanerDedupeBufferSize = c.i64("log.cleaner.dedupe.buffer.size")
	c.LogCleanerBackoffMs = c.i64("log.cleaner.backoff.ms")
	c.SamsaLogMaxOpenFiles = int(c.i32("samsa.log.max.open.files"))

	c.OffsetsTopicReplicationFactor = c.i16("offsets.topic.replication.factor")
	c.OffsetsTopicNumPartitions = c.i32("offsets.topic.num.partitions")
	c.OffsetsRetentionMinutes = int(c.i32("offsets.retention.minutes"))
	c.GroupInitialRebalanceDelayMs = int64(c.i32("group.initial.rebalance.delay.ms"))
	c.GroupMinSessionTimeoutMs = int64(c.i32("group.min.session.timeout.ms"))
	c.GroupMaxSessionTimeoutMs = int64(c.i32("group.max.session.timeout.ms"))
	c.GroupMaxSize = c.i32("group.max.size")
	c.OffsetsRetentionCheckIntervalMs = c.i64("offsets.retention.check.interval.ms")
	c.OffsetMetadataMaxBytes = c.i32("offset.metadata.max.bytes")
	c.OffsetsTopicSegmentBytes = c.i32("offsets.topic.segment.bytes")
	c.OffsetsCommitTimeoutMs = c.i32("offsets.commit.timeout.ms")
	c.GroupConsumerSessionTimeoutMs = c.i32("group.consumer.session.timeout.ms")
	c.GroupConsumerHeartbeatIntervalMs = c.i32("group.consumer.heartbeat.interval.ms")
	c.GroupConsumerMaxSize = c.i32("group.consumer.max.size")
	c.GroupConsumerAssignors = c.list("group.consumer.assignors")
	c.GroupStreams = GroupStreamsConfig{
		SessionTimeoutMs:        c.i32("group.streams.session.timeout.ms"),
		HeartbeatIntervalMs:     c.i32("group.streams.heartbeat.interval.ms"),
		MaxSize:                 c.i32("group.streams.max.size"),
		NumStandbyReplicas:      c.i32("group.streams.num.standby.replicas"),
		InitialRebalanceDelayMs: c.i32("group.streams.initial.rebalance.delay.ms"),
		TaskOffsetIntervalMs:    c.i32("group.streams.task.offset.interval.ms"),
		AcceptableRecoveryLag:   c.i64("group.streams.acceptable.recovery.lag"),
	}
	c.GroupShareSessionTimeoutMs = c.i32("group.share.session.timeout.ms")
	c.GroupShareHeartbeatIntervalMs = c.i32("group.share.heartbeat.interval.ms")
	c.GroupShareMaxSize = int16(c.i32("group.share.max.size"))
	c.GroupShareRecordLockDurationMs = c.i32("group.share.record.lock.duration.ms")
	c.GroupShareDeliveryCountLimit = c.i32("group.share.delivery.count.limit")
	c.GroupSharePartitionMaxRecordLocks = c.i32("group.share.partition.max.record.locks")
	c.GroupShareMaxShareSessions = c.i32("group.share.max.share.sessions")
	c.ShareCoordinatorStateTopicReplicationFactor = c.i16("share.coordinator.state.topic.replication.factor")
	c.ShareCoordinatorStateTopicMinISR = c.i16("share.coordinator.state.topic.min.isr")
	c.ShareCoordinatorStateTopicNumPartitions = c.i32("share.coordinator.state.topic.num.partitions")
	c.ShareCoordinatorStateTopicSegmentBytes = c.i32("share.coordinator.state.topic.segment.bytes")
	c.ShareCoordinatorSnapshotUpdateRecordsPerSnapshot = c.i32("share.coordinator.snapshot.update.records.per.snapshot")
	c.ShareCoordinatorWriteTimeoutMs = c.i32("share.coordinator.write.timeout.ms")
	c.ShareCoordinatorStateTopicPruneIntervalMs = c.i32("share.coordinator.state.topic.prune.interval.ms")

	c.TransactionStateLogReplicationFactor = c.i16("transaction.state.log.replication.factor")
	c.TransactionStateLogMinISR = int(c.i32("transaction.state.log.min.isr"))
	c.TransactionStateLogNumPartitions = c.i32("transaction.state.log.num.partitions")
	c.TransactionStateLogSegmentBytes = c.i32("transaction.state.log.segment.bytes")
	c.TransactionAbortTimedOutCleanupIntervalMs = c.i32("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	c.TransactionRemoveExpiredCleanupIntervalMs = c.i32("transaction.remove.expired.transaction.cleanup.interval.ms")
	c.TransactionMaxTimeoutMs = int64(c.i32("transaction.max.timeout.ms"))
	c.TransactionalIDExpirationMs = int64(c.i32("transactional.id.expiration.ms"))
	c.ProducerIDExpirationMs = int64(c.i32("producer.id.expiration.ms"))
	c.AddPartitionsToTxnRetryBackoffMs = c.i32("add.partitions.to.txn.retry.backoff.ms")
	c.AddPartitionsToTxnRetryBackoffMaxMs = c.i32("add.partitions.to.txn.retry.backoff.max.ms")
	return nil
}

// retentionMs applies Kafka's precedence ms > minutes > hours; any negative
// result means "forever" and is normalised to -1.
func (c *Config) retentionMs() int64 {
	var ms int64
	switch {
	case c.values["log.retention.ms"] != nil:
		ms = c.i64("log.retention.ms")
	case c.values["log.retention.minutes"] != nil:
		ms = int64(c.i32("log.retention.minutes")) * msPerMinute
	default:
		ms = int64(c.i32("log.retention.hours")) * msPerHour
	}
	if ms < 0 {
		return -1
	}
	return ms
}

// validate applies the cross-key checks of Kafka's KafkaConfig that matter
// for a KRaft node.
func (c *Config) validate() error {
	if len(c.ProcessRoles) == 0 {
		return errors.New("process.roles is required: want broker, controller or broker,controller")
	}
	if len(dedupe(c.ProcessRoles)) != len(c.ProcessRoles) {
		return fmt.Errorf("invalid value %q for process.roles: want each role once", c.Explicit["process.roles"])
	}
	if c.NodeID < 0 {
		return errors.New("node.id is required when process.roles is set: want a non-negative int")
	}
	if b := c.i32("broker.id"); b >= 0 && b != c.NodeID {
		return fmt.Errorf("broker.id (%d) must equal node.id (%d)", b, c.NodeID)
	}
	if len(c.ControllerListenerNames) == 0 {
		return errors.New("controller.listener.names is required in KRaft mode")
	}
	if len(c.ControllerQuorumVoters) == 0 && len(c.ControllerQuorumBootstrapServers) == 0 {
		return errors.New("either controller.quorum.voters or controller.quorum.bootstrap.servers must be set")
	}
	if err := c.validateListeners(); err != nil {
		return err
	}
	if c.HasRole("controller") && len(c.ControllerQuorumVoters) > 0 {
		found := false
		for _, v := range c.ControllerQuorumVoters {
			found = found || v.ID == c.NodeID
		}
		if !found {
			return fmt.Errorf("node.id %d must be in controller.quorum.voters when process.roles contains controller", c.NodeID)
		}
	}
	if c.HasRole("broker") {
		if err := c.validateInterBroker(); err != nil {
			return err
		}
	}
	if len(c.LogDirs) == 0 {
		return errors.New("log.dirs (or log.dir) must name at least one directory")
	}
	if err := c.validateConnectionLimits(); err != nil {
		return err
	}
	if minLag, maxLag := c.i64("log.cleaner.min.compaction.lag.ms"), c.i64("log.cleaner.max.compaction.lag.ms"); minLag > maxLag {
		return fmt.Errorf("log.cleaner.min.compaction.lag.ms (%d) must not exceed log.cleaner.max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	return nil
}

func (c *Config) validateListeners() error {
	names, ports := map[string]bool{}, map[int]string{}
	for _, l := range c.Listeners {
		if names[l.Name] {
			return fmt.Errorf("listeners: listener name %s appears more than once", l.Name)
		}
		names[l.Name] = true
		if other, ok := ports[l.Port]; ok && l.Port != 0 {
			return fmt.Errorf("listeners: %s and %s both use port %d", other, l.Name, l.Port)
		}
		ports[l.Port] = l.Name
	}
	for _, set := range []struct {
		key string
		ls  []Listener
	}{{"listeners", c.Listeners}, {"advertised.listeners", c.AdvertisedListeners}} {
		for _, l := range set.ls {
			if _, ok := c.ListenerSecurityProtocolMap[l.Name]; !ok {
				return fmt.Errorf("%s: listener %s has no security protocol in listener.security.protocol.map", set.key, l.Name)
			}
		}
	}
	for _, l := range c.AdvertisedListeners {
		if l.Host == "0.0.0.0" || l.Host == "::" {
			return fmt.Errorf("advertised.listeners: %s uses the non-routable address %s; advertise a host clients can reach", l.Name, l.Host)
		}
	}
	nController := len(c.ControllerListeners())
	switch {
	case c.HasRole("controller") && nController == 0:
		return fmt.Errorf("listeners must contain one of controller.listener.names (%s) when process.roles contains controller",
			strings.Join(c.ControllerListenerNames, ","))
	case !c.HasRole("broker") && nController != len(c.Listeners):
		return errors.New("listeners must contain only controller.listener.names when process.roles=controller")
	case !c.HasRole("controller") && nController > 0:
		return errors.New("listeners must not contain controller.listener.names when process.roles=broker")
	case !c.HasRole("controller") && c.IsSet("advertised.listeners") && len(c.AdvertisedBrokerListeners()) != len(c.AdvertisedListeners):
		return errors.New("advertised.listeners must not contain controller.listener.names when process.roles=broker")
	}
	return nil
}

func (c *Config) validateInterBroker() error {
	if c.IsSet("inter.broker.listener.name") && c.IsSet("security.inter.broker.protocol") {
		return errors.New("set only one of inter.broker.listener.name and security.inter.broker.protocol")
	}
	name := c.InterBrokerListenerName
	if c.IsControllerListener(name) {
		return fmt.Errorf("inter.broker.listener.name %s must not be one of controller.listener.names", name)
	}
	for _, l := range c.AdvertisedBrokerListeners() {
		if l.Name == name {
			return nil
		}
	}
	return fmt.Errorf("inter.broker.listener.name %s must be a listener in advertised.listeners (or listeners)", name)
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// parseSuperUsers reads super.users as Kafka's StandardAuthorizer does:
// principals separated by ';', each trimmed of spaces and control
// characters, empty entries skipped; each must be Type:Name.
func parseSuperUsers(v string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(v, ";") {
		p := strings.TrimFunc(part, func(r rune) bool { return r <= ' ' })
		if p == "" {
			continue
		}
		if !strings.Contains(p, ":") {
			return nil, &ValueError{Key: "super.users", Value: v, Want: fmt.Sprintf("principals of the form Type:Name separated by ';' (e.g. User:admin;User:broker), and %q has no ':'", p)}
		}
		out = append(out, p)
	}
	return out, nil
}

// GroupStreamsConfig is the group.streams.* keys: streams groups (KIP-1071).
type GroupStreamsConfig struct {
	SessionTimeoutMs        int32 // group.streams.session.timeout.ms
	HeartbeatIntervalMs     int32 // group.streams.heartbeat.interval.ms
	MaxSize                 int32 // group.streams.max.size
	NumStandbyReplicas      int32 // group.streams.num.standby.replicas
	InitialRebalanceDelayMs int32 // group.streams.initial.rebalance.delay.ms
	TaskOffsetIntervalMs    int32 // group.streams.task.offset.interval.ms
	AcceptableRecoveryLag   int64 // group.streams.acceptable.recovery.lag
}
