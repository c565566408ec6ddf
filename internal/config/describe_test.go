package config

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func byName(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

func val(e Entry) string {
	if e.Value == nil {
		return "<nil>"
	}
	return *e.Value
}

func TestDescribeBroker(t *testing.T) {
	c, _, err := Load("testdata/server.properties", []string{"ssl.keystore.password=secret"})
	if err != nil {
		t.Fatal(err)
	}
	entries := c.Describe()
	if !sort.SliceIsSorted(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name }) {
		t.Error("entries not sorted by name")
	}
	tests := []struct {
		name     string
		value    string
		source   kmsg.ConfigSource
		readOnly bool
		typ      kmsg.ConfigType
	}{
		{"log.retention.hours", "168", kmsg.ConfigSourceStaticBrokerConfig, true, kmsg.ConfigTypeInt},
		// Kafka: no value of its own, but the source of the synonym in effect.
		{"log.retention.ms", "<nil>", kmsg.ConfigSourceStaticBrokerConfig, false, kmsg.ConfigTypeLong},
		{"log.retention.minutes", "<nil>", kmsg.ConfigSourceStaticBrokerConfig, true, kmsg.ConfigTypeInt},
		{"log.roll.ms", "<nil>", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypeLong},
		{"num.io.threads", "8", kmsg.ConfigSourceStaticBrokerConfig, false, kmsg.ConfigTypeInt},
		{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypeInt},
		{"offsets.topic.replication.factor", "1", kmsg.ConfigSourceStaticBrokerConfig, true, kmsg.ConfigTypeShort},
		{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypeList},
		{"process.roles", "broker,controller", kmsg.ConfigSourceStaticBrokerConfig, true, kmsg.ConfigTypeList},
		{"log.cleaner.min.cleanable.ratio", "0.5", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypeDouble},
		{"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypeDouble},
		{"log.flush.interval.messages", "9223372036854775807", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypeLong},
		{"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", kmsg.ConfigSourceStaticBrokerConfig, false, kmsg.ConfigTypeString},
		{"auto.create.topics.enable", "true", kmsg.ConfigSourceDefaultConfig, true, kmsg.ConfigTypeBoolean},
		{"broker.rack", "<nil>", kmsg.ConfigSourceDefaultConfig, true, kmsg.ConfigTypeString},
		{"create.topic.policy.class.name", "<nil>", kmsg.ConfigSourceDefaultConfig, true, kmsg.ConfigTypeClass},
		{"ssl.keystore.password", "<nil>", kmsg.ConfigSourceStaticBrokerConfig, false, kmsg.ConfigTypePassword},
		{"ssl.key.password", "<nil>", kmsg.ConfigSourceDefaultConfig, false, kmsg.ConfigTypePassword},
	}
	for _, tt := range tests {
		e := byName(t, entries, tt.name)
		if val(e) != tt.value || e.Source != tt.source || e.ReadOnly != tt.readOnly || e.Type != tt.typ {
			t.Errorf("%s = {%s %v ro=%v %v}, want {%s %v ro=%v %v}", tt.name,
				val(e), e.Source, e.ReadOnly, e.Type, tt.value, tt.source, tt.readOnly, tt.typ)
		}
		if e.Documentation == "" {
			t.Errorf("%s has no documentation", tt.name)
		}
	}
	pw := byName(t, entries, "ssl.keystore.password")
	if !pw.IsSensitive || pw.Synonyms[0].Value != nil {
		t.Errorf("password entry leaks: %+v", pw)
	}
	want := []Synonym{
		{"log.retention.hours", ptr("168"), kmsg.ConfigSourceStaticBrokerConfig},
		{"log.retention.hours", ptr("168"), kmsg.ConfigSourceDefaultConfig},
	}
	if got := byName(t, entries, "log.retention.ms").Synonyms; !reflect.DeepEqual(got, want) {
		t.Errorf("log.retention.ms synonyms = %v, want %v", got, want)
	}
	for _, e := range entries {
		if e.Name == "unstable.api.versions.enable" || e.Name == "group.share.enable" {
			t.Errorf("internal key %s described", e.Name)
		}
	}
	if len(entries) < 150 {
		t.Errorf("only %d broker keys described", len(entries))
	}
}

func TestDescribeTopic(t *testing.T) {
	c, _, err := Load("testdata/server.properties", []string{"compression.type=zstd"})
	if err != nil {
		t.Fatal(err)
	}
	entries := c.DescribeTopic(map[string]string{"retention.ms": "1000", "cleanup.policy": "compact, delete"})
	tests := []struct {
		name   string
		value  string
		source kmsg.ConfigSource
		typ    kmsg.ConfigType
	}{
		{"retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeLong},
		{"cleanup.policy", "compact,delete", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeList},
		{"segment.bytes", "1073741824", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeInt},
		{"compression.type", "zstd", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeString},
		{"max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeInt},
		{"segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong},
		{"flush.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong},
		{"min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeDouble},
		{"remote.storage.enable", "false", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeBoolean},
		{"message.timestamp.after.max.ms", "3600000", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeLong},
	}
	for _, tt := range tests {
		e := byName(t, entries, tt.name)
		if val(e) != tt.value || e.Source != tt.source || e.Type != tt.typ || e.ReadOnly {
			t.Errorf("%s = {%s %v %v ro=%v}, want {%s %v %v ro=false}", tt.name, val(e), e.Source, e.Type, e.ReadOnly, tt.value, tt.source, tt.typ)
		}
	}
	// Without an override, retention.ms takes its source from log.retention.hours.
	e := byName(t, c.DescribeTopic(nil), "retention.ms")
	if val(e) != "604800000" || e.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("retention.ms = %s %v, want 604800000 STATIC_BROKER_CONFIG", val(e), e.Source)
	}
	wantSyn := []string{"retention.ms:1000:1", "log.retention.hours:168:4", "log.retention.hours:168:5"}
	var gotSyn []string
	for _, s := range byName(t, entries, "retention.ms").Synonyms {
		gotSyn = append(gotSyn, s.Name+":"+*s.Value+":"+string(rune('0'+s.Source)))
	}
	if !reflect.DeepEqual(gotSyn, wantSyn) {
		t.Errorf("synonyms = %v, want %v", gotSyn, wantSyn)
	}
	if len(entries) != len(topicKeyList) {
		t.Errorf("%d topic entries, want %d", len(entries), len(topicKeyList))
	}
}

func TestTopicConfigDefaultsFromBroker(t *testing.T) {
	c := Default("log.segment.bytes=2097152", "log.roll.hours=1", "log.flush.interval.ms=500",
		"message.max.bytes=2000", "log.retention.minutes=10", "log.index.interval.bytes=100",
		"log.message.timestamp.type=LogAppendTime", "min.insync.replicas=2")
	tc, err := c.TopicConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := TopicConfig{
		CleanupPolicy: []string{"delete"}, Delete: true, CompressionType: "producer",
		GzipLevel: -1, LZ4Level: 9, ZstdLevel: 3,
		SegmentBytes: 2097152, SegmentMs: 3600000, SegmentIndexBytes: 10485760, IndexIntervalBytes: 100,
		FileDeleteDelayMs: 60000, FlushMessages: 1<<63 - 1, FlushMs: 500, RetentionMs: 600000, RetentionBytes: -1,
		DeleteRetentionMs: 86400000, MaxCompactionLagMs: 1<<63 - 1, MinCleanableDirtyRatio: 0.5,
		MaxMessageBytes: 2000, MessageTimestampType: "LogAppendTime", MessageTimestampBeforeMaxMs: 1<<63 - 1,
		MessageTimestampAfterMaxMs: 3600000, MinInsyncReplicas: 2, LocalRetentionMs: -2, LocalRetentionBytes: -2,
		LeaderReplicationThrottled: []string{}, FollowerReplicationThrottled: []string{},
	}
	if !reflect.DeepEqual(tc, want) {
		t.Errorf("TopicConfig =\n%+v\nwant\n%+v", tc, want)
	}
}

func TestTopicConfigOverrides(t *testing.T) {
	c := Default()
	tc, err := c.TopicConfig(map[string]string{
		"cleanup.policy": "compact,delete", "segment.bytes": "1048576", "retention.ms": "-1",
		"message.timestamp.type": "LogAppendTime", "flush.messages": "1", "min.cleanable.dirty.ratio": "0.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tc.Compact || !tc.Delete || tc.SegmentBytes != 1048576 || tc.RetentionMs != -1 ||
		tc.MessageTimestampType != "LogAppendTime" || tc.FlushMessages != 1 || tc.MinCleanableDirtyRatio != 0.1 {
		t.Errorf("overrides not applied: %+v", tc)
	}
	if _, err := c.TopicConfig(map[string]string{"segment.bytes": "10", "bogus": "1"}); err == nil ||
		!strings.Contains(err.Error(), `invalid value "10" for segment.bytes: want an int at least 1048576`) ||
		!strings.Contains(err.Error(), "unknown topic config bogus") {
		t.Errorf("got %v", err)
	}
	_, err = c.TopicConfig(map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
	if err == nil || err.Error() != "conflicting topic configs: min.compaction.lag.ms (10) > max.compaction.lag.ms (5)" {
		t.Errorf("got %v", err)
	}
}

func TestValidateTopicConfig(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"retention.ms", "1000", ""},
		{"retention.ms", "-1", ""},
		{"retention.ms", "-2", `invalid value "-2" for retention.ms: want a long at least -1`},
		{"retention.bytes", "-5", ""},
		{"cleanup.policy", "", ""},
		{"cleanup.policy", "compact", ""},
		{"cleanup.policy", "compact,purge", `invalid value "compact,purge" for cleanup.policy: want a comma-separated list of compact, delete`},
		{"message.timestamp.type", "LogAppendTime", ""},
		{"message.timestamp.type", "Now", `invalid value "Now" for message.timestamp.type: want one of CreateTime, LogAppendTime`},
		{"max.message.bytes", "x", `invalid value "x" for max.message.bytes: want an int`},
		{"min.cleanable.dirty.ratio", "2", `invalid value "2" for min.cleanable.dirty.ratio: want a double between 0 and 1`},
		{"preallocate", "1", `invalid value "1" for preallocate: want a boolean (true or false)`},
		{"segment.ms", "0", `invalid value "0" for segment.ms: want a long at least 1`},
		{"compression.zstd.level", "23", `invalid value "23" for compression.zstd.level: want an int between -131072 and 22`},
		{"message.downconversion.enable", "true", "unknown topic config message.downconversion.enable"},
		{"message.format.version", "3.0", "unknown topic config message.format.version"},
		{"log.retention.ms", "1", "unknown topic config log.retention.ms"},
	}
	for _, tt := range tests {
		err := ValidateTopicConfig(tt.name, tt.value)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s=%q: got %q, want %q", tt.name, tt.value, got, tt.want)
		}
		if strings.HasPrefix(tt.want, "unknown") && !errors.Is(err, ErrUnknownTopicConfig) {
			t.Errorf("%s: not ErrUnknownTopicConfig", tt.name)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0", 0.5: "0.5", 1: "1.0", 1e7: "1.0E7", 1.5e-4: "1.5E-4", 1.7976931348623157e308: "1.7976931348623157E308"} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}
