package controller

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
)

// startConfigs is start with the real config rules wired in.
func startConfigs(t *testing.T, dir string, brokers int) *harness {
	h := start(t, dir, brokers)
	h.c.cfg.ValidateTopicConfig = config.ValidateTopicConfig
	h.c.cfg.ValidateBrokerConfigs = config.ValidateDynamicBrokerConfigs
	h.c.cfg.ListDefault = config.ListDefault
	return h
}

type op struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func incr(rtype kmsg.ConfigResourceType, name string, ops ...op) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = rtype, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		r.Configs = append(r.Configs, c)
	}
	return r
}

func set(k, v string) op  { return op{k, kmsg.IncrementalAlterConfigOpSet, &v} }
func del(k string) op     { return op{k, kmsg.IncrementalAlterConfigOpDelete, nil} }
func app(k, v string) op  { return op{k, kmsg.IncrementalAlterConfigOpAppend, &v} }
func subt(k, v string) op { return op{k, kmsg.IncrementalAlterConfigOpSubtract, &v} }

func (h *harness) incr(t *testing.T, validateOnly bool, rs ...kmsg.IncrementalAlterConfigsRequestResource) []kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources, req.ValidateOnly = rs, validateOnly
	resp := h.c.IncrementalAlterConfigs(ctx(t), req)
	if len(resp.Resources) != len(rs) {
		t.Fatalf("%d results for %d resources", len(resp.Resources), len(rs))
	}
	return resp.Resources
}

func wantErr(t *testing.T, got int16, msg *string, want *kerr.Error, wantMsg string) {
	t.Helper()
	m := ""
	if msg != nil {
		m = *msg
	}
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode || (wantMsg != "" && m != wantMsg) {
		t.Fatalf("error %d %q, want %d %q", got, m, wantCode, wantMsg)
	}
}

func (h *harness) configs(rtype int8, name string) map[string]string {
	m := h.loader.Image().Configs(rtype, name)
	if m == nil {
		m = map[string]string{}
	}
	return m
}

func TestIncrementalAlterTopicConfigs(t *testing.T) {
	h := startConfigs(t, t.TempDir(), 1)
	h.c.CreateTopics(ctx(t), createReq(topic("t", 1, 1)))
	topicT := kmsg.ConfigResourceTypeTopic

	rs := h.incr(t, false, incr(topicT, "t", set("retention.ms", "60000"), set("segment.bytes", "2097152")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if got := h.configs(metadata.ResourceTopic, "t"); !maps.Equal(got, map[string]string{"retention.ms": "60000", "segment.bytes": "2097152"}) {
		t.Fatalf("configs %v", got)
	}

	// APPEND to an unset list extends Kafka's default; SUBTRACT removes.
	rs = h.incr(t, false, incr(topicT, "t", app("cleanup.policy", "compact"), del("segment.bytes")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if got := h.configs(metadata.ResourceTopic, "t"); !maps.Equal(got, map[string]string{"retention.ms": "60000", "cleanup.policy": "delete,compact"}) {
		t.Fatalf("after append: %v", got)
	}
	rs = h.incr(t, false, incr(topicT, "t", subt("cleanup.policy", "delete"), app("cleanup.policy", "x")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, kerr.InvalidRequest, "Error due to duplicate config keys")
	rs = h.incr(t, false, incr(topicT, "t", subt("cleanup.policy", "delete")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if got := h.configs(metadata.ResourceTopic, "t")["cleanup.policy"]; got != "compact" {
		t.Fatalf("after subtract: %q", got)
	}

	for _, tc := range []struct {
		r    kmsg.IncrementalAlterConfigsRequestResource
		code *kerr.Error
		msg  string
	}{
		{incr(topicT, "t", app("retention.ms", "5")), kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{incr(topicT, "t", set("no.such.key", "1")), kerr.InvalidConfig, "unknown topic config no.such.key"},
		{incr(topicT, "t", set("retention.ms", "soon")), kerr.InvalidConfig, `invalid value "soon" for retention.ms: want a long`},
		{incr(topicT, "t", app("cleanup.policy", "shred")), kerr.InvalidConfig, `invalid value "compact,shred" for cleanup.policy: want a comma-separated list of compact, delete`},
		{incr(topicT, "missing", set("retention.ms", "1")), kerr.UnknownTopicOrPartition, "The topic 'missing' does not exist."},
		{incr(topicT, "t", op{"retention.ms", kmsg.IncrementalAlterConfigOpSet, nil}), kerr.InvalidRequest, "Null value not supported for : retention.ms"},
		{incr(topicT, "t", op{"retention.ms", 9, nil}), kerr.InvalidRequest, "Unknown operation type 9"},
		{incr(kmsg.ConfigResourceType(32), "g", set("a", "b")), kerr.InvalidRequest, "Unsupported resource type GROUP_CONFIG"},
	} {
		rs := h.incr(t, false, tc.r)
		wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, tc.code, tc.msg)
	}
	// Nothing of the failed changes was written.
	if got := h.configs(metadata.ResourceTopic, "t"); !maps.Equal(got, map[string]string{"retention.ms": "60000", "cleanup.policy": "compact"}) {
		t.Fatalf("configs after failures: %v", got)
	}
}

func TestAlterConfigsBrokerAndValidateOnly(t *testing.T) {
	h := startConfigs(t, t.TempDir(), 1)
	broker := kmsg.ConfigResourceTypeBroker
	off := h.loader.Image().Offset
	rs := h.incr(t, true, incr(broker, "", set("log.retention.ms", "1000")), incr(broker, "1", set("message.max.bytes", "5000")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	wantErr(t, rs[1].ErrorCode, rs[1].ErrorMessage, nil, "")
	if h.loader.Image().Offset != off || len(h.configs(metadata.ResourceBroker, "")) != 0 {
		t.Fatal("validate_only wrote records")
	}

	// Each resource stands alone: the good ones are written together.
	rs = h.incr(t, false,
		incr(broker, "", set("log.retention.ms", "1000")),
		incr(broker, "1", set("message.max.bytes", "5000")),
		incr(broker, "1", set("num.io.threads", "4")), // duplicate resource
		incr(broker, "2", set("node.id", "5"), set("num.partitions", "3")),
		incr(broker, "x", set("log.retention.ms", "1")),
		incr(kmsg.ConfigResourceTypeBrokerLogger, "1", set("root", "DEBUG")),
	)
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	wantErr(t, rs[1].ErrorCode, rs[1].ErrorMessage, kerr.InvalidRequest, "Duplicate resource.")
	wantErr(t, rs[2].ErrorCode, rs[2].ErrorMessage, kerr.InvalidRequest, "Duplicate resource.")
	wantErr(t, rs[3].ErrorCode, rs[3].ErrorMessage, kerr.InvalidRequest, "Cannot update these configs dynamically: [node.id, num.partitions]")
	wantErr(t, rs[4].ErrorCode, rs[4].ErrorMessage, kerr.InvalidRequest, "Invalid broker name x")
	wantErr(t, rs[5].ErrorCode, rs[5].ErrorMessage, kerr.InvalidRequest, "")
	rs = h.incr(t, false, incr(broker, "", set("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, kerr.InvalidRequest, "Cannot update these configs at default cluster level, broker id must be specified: [ssl.cipher.suites]")
	if got := h.configs(metadata.ResourceBroker, ""); !maps.Equal(got, map[string]string{"log.retention.ms": "1000"}) {
		t.Fatalf("cluster default %v", got)
	}

	// Legacy AlterConfigs replaces the set: unnamed keys are deleted.
	h.incr(t, false, incr(broker, "", set("log.retention.bytes", "100")))
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = broker, ""
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "message.max.bytes", str("2000")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp := h.c.AlterConfigs(ctx(t), req)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 || resp.Resources[0].ResourceType != broker {
		t.Fatalf("alter: %+v", resp.Resources)
	}
	if got := h.configs(metadata.ResourceBroker, ""); !maps.Equal(got, map[string]string{"message.max.bytes": "2000"}) {
		t.Fatalf("after legacy alter: %v", got)
	}
}

func TestConfigsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	h := startConfigs(t, dir, 1)
	h.c.CreateTopics(ctx(t), createReq(topic("t", 1, 1)))
	h.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "t", set("retention.ms", "5")),
		incr(kmsg.ConfigResourceTypeBroker, "1", set("log.segment.bytes", "2097152")))
	h.node.Close()
	h2 := startConfigs(t, dir, 0)
	if got := h2.configs(metadata.ResourceTopic, "t"); !maps.Equal(got, map[string]string{"retention.ms": "5"}) {
		t.Fatalf("topic configs after restart %v", got)
	}
	if got := h2.configs(metadata.ResourceBroker, "1"); !maps.Equal(got, map[string]string{"log.segment.bytes": "2097152"}) {
		t.Fatalf("broker configs after restart %v", got)
	}
}

// TestBrokerConfigUnchangedStillWritten: as Kafka (KAFKA-14136), setting a
// broker config to the value it has writes a record, so that brokers
// reload what it names (a key store rewritten in place); a topic config
// set to its value writes nothing.
func TestBrokerConfigUnchangedStillWritten(t *testing.T) {
	h := startConfigs(t, t.TempDir(), 1)
	broker := kmsg.ConfigResourceTypeBroker
	rs := h.incr(t, false, incr(broker, "1", set("message.max.bytes", "5000")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	off := h.loader.Image().Offset
	rs = h.incr(t, false, incr(broker, "1", set("message.max.bytes", "5000")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if h.loader.Image().Offset == off {
		t.Error("a broker config set to its value wrote nothing")
	}
	h.c.CreateTopics(ctx(t), createReq(topic("t", 1, 1)))
	rs = h.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "t", set("retention.ms", "60000")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	off = h.loader.Image().Offset
	rs = h.incr(t, false, incr(kmsg.ConfigResourceTypeTopic, "t", set("retention.ms", "60000")))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if h.loader.Image().Offset != off {
		t.Error("a topic config set to its value wrote a record")
	}
}
