package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestStockServerProperties(t *testing.T) {
	c, warnings, err := Load("testdata/server.properties", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	check("NodeID", c.NodeID, int32(1))
	check("ProcessRoles", c.ProcessRoles, []string{"broker", "controller"})
	check("Listeners", c.Listeners, []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "", 9093}})
	check("AdvertisedListeners", c.AdvertisedListeners, []Listener{{"PLAINTEXT", "localhost", 9092}, {"CONTROLLER", "localhost", 9093}})
	check("AdvertisedBrokerListeners", c.AdvertisedBrokerListeners(), []Listener{{"PLAINTEXT", "localhost", 9092}})
	check("ControllerListeners", c.ControllerListeners(), []Listener{{"CONTROLLER", "", 9093}})
	check("ListenerSecurityProtocolMap", c.ListenerSecurityProtocolMap, map[string]string{
		"CONTROLLER": "PLAINTEXT", "PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"})
	check("ControllerListenerNames", c.ControllerListenerNames, []string{"CONTROLLER"})
	check("InterBrokerListenerName", c.InterBrokerListenerName, "PLAINTEXT")
	check("ControllerQuorumBootstrapServers", c.ControllerQuorumBootstrapServers, []string{"localhost:9093"})
	check("ControllerQuorumVoters", len(c.ControllerQuorumVoters), 0)
	check("LogDirs", c.LogDirs, []string{"/tmp/kraft-combined-logs"})
	check("MetadataLogDir", c.MetadataLogDir, "/tmp/kraft-combined-logs")
	check("NumNetworkThreads", c.NumNetworkThreads, 3)
	check("NumIOThreads", c.NumIOThreads, 8)
	check("SocketSendBufferBytes", c.SocketSendBufferBytes, 102400)
	check("SocketRequestMaxBytes", c.SocketRequestMaxBytes, int32(104857600))
	check("NumPartitions", c.NumPartitions, int32(1))
	check("NumRecoveryThreadsPerDataDir", c.NumRecoveryThreadsPerDataDir, 1)
	check("OffsetsTopicReplicationFactor", c.OffsetsTopicReplicationFactor, int16(1))
	check("ShareCoordinatorStateTopicReplicationFactor", c.ShareCoordinatorStateTopicReplicationFactor, int16(1))
	check("ShareCoordinatorStateTopicMinISR", c.ShareCoordinatorStateTopicMinISR, int16(1))
	check("TransactionStateLogReplicationFactor", c.TransactionStateLogReplicationFactor, int16(1))
	check("TransactionStateLogMinISR", c.TransactionStateLogMinISR, 1)
	check("LogRetentionMs", c.LogRetentionMs, int64(168*3600*1000))
	check("LogSegmentBytes", c.LogSegmentBytes, int64(1<<30))
	check("LogRetentionCheckIntervalMs", c.LogRetentionCheckIntervalMs, int64(300000))
	// Kafka's defaults for what the file leaves out.
	check("MessageMaxBytes", c.MessageMaxBytes, int32(1048588))
	check("LogRollMs", c.LogRollMs, int64(168*3600*1000))
	check("LogRetentionBytes", c.LogRetentionBytes, int64(-1))
	check("LogFlushIntervalMessages", c.LogFlushIntervalMessages, int64(math.MaxInt64))
	check("LogFlushIntervalMs", c.LogFlushIntervalMs, int64(math.MaxInt64))
	check("LogFlushOffsetCheckpointIntervalMs", c.LogFlushOffsetCheckpointIntervalMs, int64(60000))
	check("LogIndexIntervalBytes", c.LogIndexIntervalBytes, 4096)
	check("LogIndexSizeMaxBytes", c.LogIndexSizeMaxBytes, 10485760)
	check("LogCleanupPolicy", c.LogCleanupPolicy, []string{"delete"})
	check("LogMessageTimestampType", c.LogMessageTimestampType, "CreateTime")
	check("LogMessageTimestampAfterMaxMs", c.LogMessageTimestampAfterMaxMs, int64(3600000))
	check("LogMessageTimestampBeforeMaxMs", c.LogMessageTimestampBeforeMaxMs, int64(math.MaxInt64))
	check("MinInsyncReplicas", c.MinInsyncReplicas, 1)
	check("DefaultReplicationFactor", c.DefaultReplicationFactor, int16(1))
	check("AutoCreateTopicsEnable", c.AutoCreateTopicsEnable, true)
	check("OffsetsTopicNumPartitions", c.OffsetsTopicNumPartitions, int32(50))
	check("TransactionStateLogNumPartitions", c.TransactionStateLogNumPartitions, int32(50))
	check("GroupInitialRebalanceDelayMs", c.GroupInitialRebalanceDelayMs, int64(3000))
	check("ProducerIDExpirationMs", c.ProducerIDExpirationMs, int64(86400000))
	check("TransactionalIDExpirationMs", c.TransactionalIDExpirationMs, int64(604800000))
	check("TransactionMaxTimeoutMs", c.TransactionMaxTimeoutMs, int64(900000))
	check("CompressionType", c.CompressionType, "producer")
	check("Explicit[log.retention.hours]", c.Explicit["log.retention.hours"], "168")
	check("len(Explicit)", len(c.Explicit), 24)
}

func TestEmbeddedDefaults(t *testing.T) {
	c, warnings, err := Load("", nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load: %v, warnings %q", err, warnings)
	}
	if c.NodeID != 1 || !c.HasRole("broker") || !c.HasRole("controller") {
		t.Errorf("node.id=%d roles=%v, want 1 and broker,controller", c.NodeID, c.ProcessRoles)
	}
	if want := []Listener{{"PLAINTEXT", "127.0.0.1", 9092}, {"CONTROLLER", "127.0.0.1", 9093}}; !reflect.DeepEqual(c.Listeners, want) {
		t.Errorf("Listeners = %v, want %v", c.Listeners, want)
	}
	if !reflect.DeepEqual(c.AdvertisedListeners, c.Listeners) {
		t.Errorf("AdvertisedListeners = %v, want listeners", c.AdvertisedListeners)
	}
	if want := []Voter{{1, "127.0.0.1", 9093}}; !reflect.DeepEqual(c.ControllerQuorumVoters, want) {
		t.Errorf("voters = %v, want %v", c.ControllerQuorumVoters, want)
	}
	if c.ControllerQuorumVoters[0].Addr() != "127.0.0.1:9093" || c.Listeners[0].String() != "PLAINTEXT://127.0.0.1:9092" {
		t.Errorf("Addr/String = %s %s", c.ControllerQuorumVoters[0].Addr(), c.Listeners[0])
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"./data"}) || c.MetadataLogDir != "./data" {
		t.Errorf("LogDirs = %v, MetadataLogDir = %q", c.LogDirs, c.MetadataLogDir)
	}
	if c.OffsetsTopicReplicationFactor != 1 || c.TransactionStateLogReplicationFactor != 1 || c.TransactionStateLogMinISR != 1 {
		t.Errorf("internal topic RF = %d/%d min.isr %d, want 1/1/1",
			c.OffsetsTopicReplicationFactor, c.TransactionStateLogReplicationFactor, c.TransactionStateLogMinISR)
	}
	if c.ListenerSecurityProtocolMap["CONTROLLER"] != "PLAINTEXT" || c.InterBrokerListenerName != "PLAINTEXT" {
		t.Errorf("map=%v inter-broker=%s", c.ListenerSecurityProtocolMap, c.InterBrokerListenerName)
	}
}

func TestOverridesWinOverFile(t *testing.T) {
	c, _, err := Load("testdata/server.properties", []string{
		"num.partitions=6", "log.retention.ms = 1000", "log.dirs=/a, /b", "listeners=PLAINTEXT://:19092,CONTROLLER://:19093",
		"advertised.listeners=PLAINTEXT://h:19092", "log.message.timestamp.type=LogAppendTime", "x=y=z",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumPartitions != 6 || c.LogRetentionMs != 1000 || c.LogMessageTimestampType != "LogAppendTime" {
		t.Errorf("num.partitions=%d log.retention.ms=%d type=%s", c.NumPartitions, c.LogRetentionMs, c.LogMessageTimestampType)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"/a", "/b"}) || c.MetadataLogDir != "/a" {
		t.Errorf("LogDirs = %q MetadataLogDir = %q", c.LogDirs, c.MetadataLogDir)
	}
	if c.Listeners[0].Port != 19092 || c.AdvertisedListeners[0].Host != "h" {
		t.Errorf("listeners %v advertised %v", c.Listeners, c.AdvertisedListeners)
	}
	if c.Explicit["x"] != "y=z" {
		t.Errorf("override value split at first '=': got %q", c.Explicit["x"])
	}
}

func TestMalformedOverride(t *testing.T) {
	for _, o := range []string{"num.partitions", "=3"} {
		_, _, err := Load("", []string{o})
		if err == nil || err.Error() != `invalid override "`+o+`": want key=value` {
			t.Errorf("override %q: got %v", o, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "nope.properties"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want not-exist", err)
	}
}

func TestUnknownKeysWarn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	text := EmbeddedDefaults + "foo.bar=1\nzookeeper.connect=localhost:2181\nlistener.name.plaintext.sasl.enabled.mechanisms=PLAIN\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Load(path, []string{"another.unknown=2"})
	if err != nil {
		t.Fatal(err)
	}
	// A key from the file is named with its file and line; an
	// override's is on the command line.
	line := strings.Count(EmbeddedDefaults, "\n") + 1
	want := []string{
		fmt.Sprintf("%s:%d: unknown config foo.bar ignored", path, line),
		fmt.Sprintf("%s:%d: config zookeeper.connect ignored: ZooKeeper mode was removed in Kafka 4.0", path, line+1),
		"unknown config another.unknown ignored",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}
	if c.Explicit["listener.name.plaintext.sasl.enabled.mechanisms"] != "PLAIN" {
		t.Errorf("per-listener key not kept in Explicit")
	}
}

func TestInvalidValuesNameKey(t *testing.T) {
	tests := []struct{ override, want string }{
		{"log.retention.ms=abc", `invalid value "abc" for log.retention.ms: want a long`},
		{"num.partitions=0", `invalid value "0" for num.partitions: want an int at least 1`},
		{"num.io.threads=2147483648", `invalid value "2147483648" for num.io.threads: want an int`},
		{"offsets.topic.replication.factor=40000", `invalid value "40000" for offsets.topic.replication.factor: want a short`},
		{"auto.create.topics.enable=yes", `invalid value "yes" for auto.create.topics.enable: want a boolean (true or false)`},
		{"log.message.timestamp.type=createtime", `invalid value "createtime" for log.message.timestamp.type: want one of CreateTime, LogAppendTime`},
		{"log.cleanup.policy=delete,purge", `invalid value "delete,purge" for log.cleanup.policy: want a comma-separated list of compact, delete`},
		{"log.cleaner.min.cleanable.ratio=1.5", `invalid value "1.5" for log.cleaner.min.cleanable.ratio: want a double between 0 and 1`},
		{"compression.type=brotli", `invalid value "brotli" for compression.type: want one of uncompressed, zstd, lz4, snappy, gzip, producer`},
		{"compression.gzip.level=10", `invalid value "10" for compression.gzip.level: want -1 or an int between 1 and 9`},
		{"log.segment.bytes=1000", `invalid value "1000" for log.segment.bytes: want an int at least 1048576`},
		{"process.roles=broker,zookeeper", `invalid value "broker,zookeeper" for process.roles: want a comma-separated list of broker, controller`},
		{"security.inter.broker.protocol=TLS", `invalid value "TLS" for security.inter.broker.protocol: want one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{"listeners=localhost:9092", `invalid value "localhost:9092" for listeners: want a comma-separated list of NAME://host:port`},
		{"listeners=PLAINTEXT://:99999,CONTROLLER://:9093", `invalid value "PLAINTEXT://:99999,CONTROLLER://:9093" for listeners: want a comma-separated list of NAME://host:port`},
		{"advertised.listeners=PLAINTEXT://::1:9092", `invalid value "PLAINTEXT://::1:9092" for advertised.listeners: want a comma-separated list of NAME://host:port`},
		{"listener.security.protocol.map=PLAINTEXT:FOO", `invalid value "PLAINTEXT:FOO" for listener.security.protocol.map: want a comma-separated list of NAME:PROTOCOL with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`},
		{"controller.quorum.voters=one@127.0.0.1:9093", `invalid value "one@127.0.0.1:9093" for controller.quorum.voters: want a comma-separated list of id@host:port`},
		{"controller.quorum.voters=1@a:1,1@b:2", `invalid value "1@a:1,1@b:2" for controller.quorum.voters: want each voter id once, but 1 repeats`},
		{"controller.quorum.bootstrap.servers=localhost", `invalid value "localhost" for controller.quorum.bootstrap.servers: want a comma-separated list of host:port`},
		{"default.replication.factor=0", `invalid value "0" for default.replication.factor: want an int between 1 and 32767`},
		{"super.users=User:admin;bob", `invalid value "User:admin;bob" for super.users: want principals of the form Type:Name separated by ';' (e.g. User:admin;User:broker), and "bob" has no ':'`},
	}
	for _, tt := range tests {
		_, _, err := Load("", []string{tt.override})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.override, err, tt.want)
		}
		var ve *ValueError
		if err != nil && !errors.As(err, &ve) {
			t.Errorf("%s: %v is not a *ValueError", tt.override, err)
		}
	}
}

// super.users is split as Kafka's StandardAuthorizer splits it.
func TestAuthorizerKeys(t *testing.T) {
	c, _, err := Load("", []string{"super.users= User:admin ;;User:CN=broker,O=x;", "allow.everyone.if.no.acl.found=TRUE"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.SuperUsers, "|"); got != "User:admin|User:CN=broker,O=x" || !c.AllowEveryoneIfNoACLFound {
		t.Fatalf("super.users %q allow.everyone %v", got, c.AllowEveryoneIfNoACLFound)
	}
	c, _, _ = Load("", nil)
	if c.SuperUsers != nil || c.AllowEveryoneIfNoACLFound || c.AuthorizerClassName != "" {
		t.Fatalf("defaults: %v %v %q", c.SuperUsers, c.AllowEveryoneIfNoACLFound, c.AuthorizerClassName)
	}
}

func TestAllInvalidValuesReported(t *testing.T) {
	_, _, err := Load("", []string{"num.partitions=x", "log.retention.ms=y"})
	if err == nil || !strings.Contains(err.Error(), "num.partitions") || !strings.Contains(err.Error(), "log.retention.ms") {
		t.Fatalf("got %v, want both keys named", err)
	}
}

func TestCrossKeyValidation(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		want      string // "" = valid
	}{
		{"no roles", []string{"process.roles="}, "process.roles is required: want broker, controller or broker,controller"},
		{"duplicate role", []string{"process.roles=broker,broker,controller"}, `invalid value "broker,broker,controller" for process.roles: want each role once`},
		{"no node id", []string{"node.id=-1"}, "node.id is required when process.roles is set: want a non-negative int"},
		{"broker.id differs", []string{"broker.id=2"}, "broker.id (2) must equal node.id (1)"},
		{"broker.id equal", []string{"broker.id=1"}, ""},
		{"no controller listener names", []string{"controller.listener.names="}, "controller.listener.names is required in KRaft mode"},
		{"no quorum", []string{"controller.quorum.voters="}, "either controller.quorum.voters or controller.quorum.bootstrap.servers must be set"},
		{"bootstrap instead of voters", []string{"controller.quorum.voters=", "controller.quorum.bootstrap.servers=127.0.0.1:9093"}, ""},
		{"node not a voter", []string{"controller.quorum.voters=2@127.0.0.1:9093"}, "node.id 1 must be in controller.quorum.voters when process.roles contains controller"},
		{"controller without its listener", []string{"listeners=PLAINTEXT://127.0.0.1:9092"}, "listeners must contain one of controller.listener.names (CONTROLLER) when process.roles contains controller"},
		{"broker-only with controller listener", []string{"process.roles=broker"}, "listeners must not contain controller.listener.names when process.roles=broker"},
		{"broker-only valid", []string{"process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:9092"}, ""},
		{"broker-only advertising controller", []string{"process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:9092",
			"advertised.listeners=PLAINTEXT://h:9092,CONTROLLER://h:9093"}, "advertised.listeners must not contain controller.listener.names when process.roles=broker"},
		{"controller-only with broker listener", []string{"process.roles=controller"}, "listeners must contain only controller.listener.names when process.roles=controller"},
		{"controller-only valid", []string{"process.roles=controller", "listeners=CONTROLLER://127.0.0.1:9093"}, ""},
		{"listener without protocol", []string{"listeners=PLAINTEXT://:9092,CONTROLLER://:9093,CLIENT://:9094"}, "listeners: listener CLIENT has no security protocol in listener.security.protocol.map"},
		{"advertised without protocol", []string{"advertised.listeners=OTHER://h:9092"}, "advertised.listeners: listener OTHER has no security protocol in listener.security.protocol.map"},
		{"duplicate listener", []string{"listeners=PLAINTEXT://:9092,plaintext://:9094,CONTROLLER://:9093"}, "listeners: listener name PLAINTEXT appears more than once"},
		{"duplicate port", []string{"listeners=PLAINTEXT://:9092,SSL://:9092,CONTROLLER://:9093"}, "listeners: PLAINTEXT and SSL both use port 9092"},
		{"advertised wildcard", []string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners: PLAINTEXT uses the non-routable address 0.0.0.0; advertise a host clients can reach"},
		{"inter-broker is controller", []string{"inter.broker.listener.name=CONTROLLER"}, "inter.broker.listener.name CONTROLLER must not be one of controller.listener.names"},
		{"inter-broker not advertised", []string{"inter.broker.listener.name=SSL"}, "inter.broker.listener.name SSL must be a listener in advertised.listeners (or listeners)"},
		{"inter-broker by protocol", []string{"security.inter.broker.protocol=SSL"}, "inter.broker.listener.name SSL must be a listener in advertised.listeners (or listeners)"},
		{"both inter-broker keys", []string{"inter.broker.listener.name=PLAINTEXT", "security.inter.broker.protocol=PLAINTEXT"}, "set only one of inter.broker.listener.name and security.inter.broker.protocol"},
		{"no log dirs", []string{"log.dirs= "}, "log.dirs (or log.dir) must name at least one directory"},
		{"compaction lags", []string{"log.cleaner.min.compaction.lag.ms=10", "log.cleaner.max.compaction.lag.ms=5"}, "log.cleaner.min.compaction.lag.ms (10) must not exceed log.cleaner.max.compaction.lag.ms (5)"},
	}
	for _, tt := range tests {
		_, _, err := Load("", tt.overrides)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%s:\n got %v\nwant %s", tt.name, err, tt.want)
		}
	}
}

// Kafka maps controller listeners to PLAINTEXT when
// listener.security.protocol.map is left at its default.
func TestControllerListenerDefaultsToPlaintext(t *testing.T) {
	props := []Property{
		{Key: "process.roles", Value: "broker,controller"}, {Key: "node.id", Value: "3"},
		{Key: "controller.quorum.voters", Value: "3@[::1]:9093"},
		{Key: "listeners", Value: "PLAINTEXT://[::1]:9092,CONTROLLER://[::1]:9093"},
		{Key: "controller.listener.names", Value: "controller"},
	}
	c, _, err := FromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenerSecurityProtocolMap["CONTROLLER"] != "PLAINTEXT" || c.ControllerQuorumVoters[0].Host != "::1" {
		t.Errorf("map = %v voters = %v", c.ListenerSecurityProtocolMap, c.ControllerQuorumVoters)
	}
	if got := c.Listeners[1].String(); got != "CONTROLLER://[::1]:9093" {
		t.Errorf("String() = %s", got)
	}
	if got := c.LogDirs; !reflect.DeepEqual(got, []string{"/tmp/kafka-logs"}) {
		t.Errorf("LogDirs = %v, want Kafka's log.dir default", got)
	}
	// An explicit map without CONTROLLER is an error, as in Kafka.
	props = append(props, Property{Key: "listener.security.protocol.map", Value: "PLAINTEXT:PLAINTEXT"})
	if _, _, err := FromProperties(props); err == nil || !strings.Contains(err.Error(), "listener CONTROLLER has no security protocol") {
		t.Errorf("got %v", err)
	}
}

func TestRetentionPrecedence(t *testing.T) {
	tests := []struct {
		overrides []string
		want      int64
	}{
		{nil, 168 * 3600000},
		{[]string{"log.retention.hours=1"}, 3600000},
		{[]string{"log.retention.hours=1", "log.retention.minutes=5"}, 300000},
		{[]string{"log.retention.hours=1", "log.retention.minutes=5", "log.retention.ms=42"}, 42},
		{[]string{"log.retention.ms=42", "log.retention.hours=1"}, 42},
		{[]string{"log.retention.ms=-1"}, -1},
		{[]string{"log.retention.ms=-5"}, -1},
		{[]string{"log.retention.minutes=-1"}, -1},
		{[]string{"log.retention.hours=-1"}, -1},
		{[]string{"log.retention.hours=0"}, 0},
	}
	for _, tt := range tests {
		c := Default(tt.overrides...)
		if c.LogRetentionMs != tt.want {
			t.Errorf("%v: LogRetentionMs = %d, want %d", tt.overrides, c.LogRetentionMs, tt.want)
		}
	}
	c := Default("log.roll.hours=2", "log.roll.jitter.hours=1", "log.flush.interval.ms=250")
	if c.LogRollMs != 7200000 || c.LogRollJitterMs != 3600000 || c.LogFlushIntervalMs != 250 {
		t.Errorf("roll=%d jitter=%d flush=%d", c.LogRollMs, c.LogRollJitterMs, c.LogFlushIntervalMs)
	}
	if c := Default("log.roll.hours=2", "log.roll.ms=5"); c.LogRollMs != 5 {
		t.Errorf("log.roll.ms must win over log.roll.hours: %d", c.LogRollMs)
	}
}

func TestValueAccess(t *testing.T) {
	c := Default("log.cleaner.io.buffer.load.factor=0.75")
	if v, ok := c.Value("log.cleaner.io.buffer.load.factor"); !ok || v.(float64) != 0.75 {
		t.Errorf("Value = %v, %v", v, ok)
	}
	if _, ok := c.Value("log.retention.ms"); ok {
		t.Errorf("log.retention.ms has a null default and was not set; want no value")
	}
	if !c.IsSet("log.cleaner.io.buffer.load.factor") || c.IsSet("num.io.threads") {
		t.Errorf("IsSet wrong")
	}
}

// Every default must satisfy its own type and validator, and every topic key
// must have the type of the broker key it defaults from.
func TestKeyTables(t *testing.T) {
	for _, key := range BrokerKeys() {
		if key.HasDefault {
			if _, err := key.parse(key.Default); err != nil {
				t.Errorf("broker key default: %v", err)
			}
		}
		if key.Doc == "" {
			t.Errorf("%s has no doc", key.Name)
		}
	}
	for _, key := range TopicKeys() {
		if _, err := key.parse(key.Default); err != nil {
			t.Errorf("topic key default: %v", err)
		}
		if key.BrokerKey == "" {
			continue
		}
		b, _ := BrokerKey(key.BrokerKey)
		if b.Type != key.Type {
			t.Errorf("%s is %v but its broker key %s is %v", key.Name, key.Type, b.Name, b.Type)
		}
		if b.HasDefault && b.Default != key.Default {
			t.Errorf("%s default %s differs from %s default %s", key.Name, key.Default, b.Name, b.Default)
		}
	}
}

// TestConnectionLimits: max.connections and max.connection.creation.rate
// apply to each broker listener unless its listener.name.<l>. key says
// otherwise; max.connections.per.ip.overrides is host:count pairs, an
// IPv6 address included; 0 per IP needs overrides, as in Kafka.
func TestConnectionLimits(t *testing.T) {
	base := []string{"listeners=PLAINTEXT://:9092,INTERNAL://:9093,CONTROLLER://:9094", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=INTERNAL"}
	c, _, err := Load("", append(base, "max.connections=100", "listener.name.internal.max.connections=10",
		"max.connection.creation.rate=50", "max.connections.per.ip=5", "max.connections.per.ip.overrides=127.0.0.1:200, [::1]:7,broker-1:0"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ConnectionLimits()
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionLimits{MaxConnections: 100, MaxConnectionsPerIP: 5, MaxConnectionCreationRate: 50,
		PerIPOverrides: map[string]int{"127.0.0.1": 200, "::1": 7, "broker-1": 0},
		Listeners: map[string]ListenerConnectionLimits{
			"PLAINTEXT": {MaxConnections: 100, MaxConnectionCreationRate: 50},
			"INTERNAL":  {MaxConnections: 10, MaxConnectionCreationRate: 50},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ConnectionLimits() = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"max.connections.per.ip.overrides=127.0.0.1", "max.connections.per.ip.overrides=a:b", "max.connections.per.ip=0"} {
		if _, _, err := Load("", append(base, bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestSchemaRegistryListeners(t *testing.T) {
	if got, err := Default().SchemaRegistryListeners(); err != nil || len(got) != 1 || got[0] != (RegistryListener{Addr: "127.0.0.1:8081"}) {
		t.Errorf("embedded defaults: %v, %v", got, err)
	}
	if got, err := Default("schema.registry.listeners=").SchemaRegistryListeners(); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	got, err := Default("schema.registry.listeners=https://h:1,http://:2").SchemaRegistryListeners()
	if err != nil || len(got) != 2 || got[0].URL() != "https://h:1" || got[1].URL() != "http://:2" {
		t.Errorf("https and http: %v, %v", got, err)
	}
	if _, err := Default("schema.registry.listeners=ftp://h:1").SchemaRegistryListeners(); err == nil {
		t.Error("ftp accepted")
	}
	// schema.registry.ssl.* over ssl.*, errors naming the key as written.
	c := Default("ssl.keystore.location=/broker.p12", "ssl.truststore.location=/trust.p12",
		"schema.registry.ssl.keystore.location=/registry.pem", "schema.registry.ssl.keystore.type=PEM")
	s := c.SchemaRegistrySSL()
	if s.KeystoreLocation != "/registry.pem" || s.KeystoreType != "PEM" || s.TruststoreLocation != "/trust.p12" {
		t.Errorf("SchemaRegistrySSL = %+v", s)
	}
	if s.KeyName("ssl.keystore.location") != "schema.registry.ssl.keystore.location" || s.KeyName("ssl.truststore.location") != "ssl.truststore.location" {
		t.Errorf("key names %s, %s", s.KeyName("ssl.keystore.location"), s.KeyName("ssl.truststore.location"))
	}
	if ls := c.ListenerSSL("SSL"); ls.KeystoreLocation != "/broker.p12" {
		t.Errorf("listener SSL took the registry's key store: %+v", ls)
	}
	method, realm, roles, users := Default("schema.registry.authentication.method=BASIC", "schema.registry.authentication.users.file=/u").SchemaRegistryAuth()
	if method != "BASIC" || realm != "SchemaRegistry" || len(roles) != 1 || roles[0] != "*" || users != "/u" {
		t.Errorf("SchemaRegistryAuth = %s %s %v %s", method, realm, roles, users)
	}
	if _, _, err := Load("", []string{"schema.registry.authentication.method=DIGEST"}); err == nil {
		t.Error("authentication.method DIGEST accepted")
	}
	for _, e := range Default().Describe() {
		if strings.HasPrefix(e.Name, "schema.registry.") {
			t.Errorf("%s is described as a Kafka broker key", e.Name)
		}
	}
}

// A file's mistakes are named by file and line, as a compiler names
// them: a bad value, a bad escape, and keys that do not fit together
// (the place of the key the message names). Overrides win over the file,
// and an error about one has no place in the file.
func TestFileErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		path := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := "node.id=1\nprocess.roles=broker,controller\ncontroller.quorum.voters=1@127.0.0.1:9093\n" +
		"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n"
	for _, tc := range []struct {
		text      string
		overrides []string
		want      string // the error, with %s for the path
	}{
		{base + "# a comment\n\nlog.retention.ms=abc\n", nil,
			`%s:8: invalid value "abc" for log.retention.ms: want a long`},
		{base + "log.retention.ms=abc\nnum.partitions=0\n", nil,
			`%s:6: invalid value "abc" for log.retention.ms: want a long` + "\n" +
				`%s:7: invalid value "0" for num.partitions: want an int at least 1`},
		{base + "a=\\u12\n", nil, `%s:6: a: malformed \uxxxx escape in "\\u12"`},
		{base + "listener.security.protocol.map=PLAINTEXT:PLAINTEXT\n", nil,
			`%s:6: listeners: listener CONTROLLER has no security protocol in listener.security.protocol.map`},
		{base + "log.retention.ms=abc\n", []string{"log.retention.ms=5"}, ""},
		{base, []string{"log.retention.ms=abc"}, `invalid value "abc" for log.retention.ms: want a long`},
	} {
		path := write(tc.text)
		_, _, err := Load(path, tc.overrides)
		want := strings.ReplaceAll(tc.want, "%s", path)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("%q %q:\n got %v\nwant %s", tc.text, tc.overrides, err, want)
		}
	}
}
