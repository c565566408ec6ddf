package config

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestWithDynamicPrecedence(t *testing.T) {
	static := Default("log.retention.hours=24", "message.max.bytes=2000000")
	c, err := static.WithDynamic(
		map[string]string{"message.max.bytes": "3000000"},
		map[string]string{"log.retention.ms": "60000", "message.max.bytes": "1000", "log.segment.bytes": "2097152"})
	if err != nil {
		t.Fatal(err)
	}
	if c.LogRetentionMs != 60000 || c.MessageMaxBytes != 3000000 || c.LogSegmentBytes != 2097152 {
		t.Fatalf("retention %d max %d segment %d", c.LogRetentionMs, c.MessageMaxBytes, c.LogSegmentBytes)
	}
	// The static Config is untouched.
	if static.LogRetentionMs != 24*msPerHour || static.MessageMaxBytes != 2000000 {
		t.Fatalf("static changed: %d %d", static.LogRetentionMs, static.MessageMaxBytes)
	}
	e := byName(t, c.Describe(), "message.max.bytes")
	want := []Synonym{
		{Name: "message.max.bytes", Value: ptr("3000000"), Source: kmsg.ConfigSourceDynamicBrokerConfig},
		{Name: "message.max.bytes", Value: ptr("1000"), Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{Name: "message.max.bytes", Value: ptr("2000000"), Source: kmsg.ConfigSourceStaticBrokerConfig},
		{Name: "message.max.bytes", Value: ptr("1048588"), Source: kmsg.ConfigSourceDefaultConfig},
	}
	if val(e) != "3000000" || e.Source != kmsg.ConfigSourceDynamicBrokerConfig || !reflect.DeepEqual(e.Synonyms, want) {
		t.Fatalf("message.max.bytes = %s %v %+v", val(e), e.Source, e.Synonyms)
	}
	// A topic without override inherits the cluster default, and says so.
	rt := byName(t, c.DescribeTopic(nil), "retention.ms")
	wantRt := []Synonym{
		{Name: "log.retention.ms", Value: ptr("60000"), Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{Name: "log.retention.hours", Value: ptr("24"), Source: kmsg.ConfigSourceStaticBrokerConfig},
		{Name: "log.retention.hours", Value: ptr("168"), Source: kmsg.ConfigSourceDefaultConfig},
	}
	if val(rt) != "60000" || rt.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || !reflect.DeepEqual(rt.Synonyms, wantRt) {
		t.Fatalf("retention.ms = %s %v %+v", val(rt), rt.Source, rt.Synonyms)
	}
	tc, err := c.TopicConfig(map[string]string{"max.message.bytes": "5"})
	if err != nil || tc.RetentionMs != 60000 || tc.MaxMessageBytes != 5 || tc.SegmentBytes != 2097152 {
		t.Fatalf("topic config %+v %v", tc, err)
	}
	// The default resource lists only what is set there, without the
	// per-broker layer.
	defs := c.DescribeDefaults()
	if len(defs) != 3 || defs[0].Name != "log.retention.ms" || defs[1].Name != "log.segment.bytes" || defs[2].Name != "message.max.bytes" {
		t.Fatalf("defaults %+v", defs)
	}
	if val(defs[2]) != "1000" || defs[2].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || defs[2].Synonyms[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("default message.max.bytes %+v", defs[2])
	}
}

func TestWithDynamicSkipsInvalid(t *testing.T) {
	static := Default()
	c, err := static.WithDynamic(map[string]string{"node.id": "7", "nope": "1", "log.retention.ms": "abc"},
		map[string]string{"listeners": "PLAINTEXT://:1", "log.retention.bytes": "99"})
	if err == nil {
		t.Fatal("want an error naming the skipped keys")
	}
	if !errors.Is(err, ErrUnknownBrokerConfig) {
		t.Errorf("error %v does not wrap ErrUnknownBrokerConfig", err)
	}
	if c.NodeID != 1 || c.LogRetentionMs != static.LogRetentionMs || c.LogRetentionBytes != 99 || len(c.Listeners) != len(static.Listeners) {
		t.Fatalf("node %d retention %d bytes %d listeners %v", c.NodeID, c.LogRetentionMs, c.LogRetentionBytes, c.Listeners)
	}
	per, def := c.DynamicBrokerConfigs()
	if len(per) != 0 || !reflect.DeepEqual(def, map[string]string{"log.retention.bytes": "99"}) {
		t.Fatalf("applied per-broker %v default %v", per, def)
	}
}

func TestValidateDynamicBrokerConfigs(t *testing.T) {
	tests := []struct {
		configs        map[string]string
		clusterDefault bool
		want           string
	}{
		{map[string]string{"log.retention.ms": "1000", "message.max.bytes": "5"}, true, ""},
		{map[string]string{"num.partitions": "3", "node.id": "2", "log.retention.ms": "1"}, false,
			"Cannot update these configs dynamically: [node.id, num.partitions]"},
		{map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, true,
			"Cannot update these configs at default cluster level, broker id must be specified: [ssl.cipher.suites]"},
		{map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, false, ""},
		// Key stores change only per listener (Kafka's DynamicBrokerConfig).
		{map[string]string{"ssl.keystore.location": "/k"}, false,
			"These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{map[string]string{"listener.name.ssl.ssl.keystore.location": "/k"}, true,
			"Cannot update these configs at default cluster level, broker id must be specified: [listener.name.ssl.ssl.keystore.location]"},
		{map[string]string{"listener.name.ssl.ssl.keystore.location": "/k"}, false, ""},
		{map[string]string{"no.such.key": "1"}, false, "Unknown broker configs: [no.such.key]"},
		{map[string]string{"log.segment.bytes": "10"}, true,
			`invalid value "10" for log.segment.bytes: want an int at least 1048576`},
	}
	for _, tt := range tests {
		err := ValidateDynamicBrokerConfigs(tt.configs, tt.clusterDefault)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%v default=%t: %q, want %q", tt.configs, tt.clusterDefault, got, tt.want)
		}
	}
}

func TestListDefault(t *testing.T) {
	if d, ok := ListDefault(2, "cleanup.policy"); !ok || d != "delete" {
		t.Errorf("cleanup.policy: %q %t", d, ok)
	}
	if _, ok := ListDefault(2, "retention.ms"); ok {
		t.Error("retention.ms is not a list")
	}
	if d, ok := ListDefault(4, "log.cleanup.policy"); !ok || d != "delete" {
		t.Errorf("log.cleanup.policy: %q %t", d, ok)
	}
	if _, ok := ListDefault(2, "unknown"); ok {
		t.Error("unknown key reported as list")
	}
}
