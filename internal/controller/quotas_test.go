package controller

import (
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
)

// quotaEntry builds an AlterClientQuotas entry: parts alternate type and
// name ("" for the default), ops alternate key and value (value < 0:
// remove).
func quotaEntry(parts []string, ops ...any) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i < len(parts); i += 2 {
		p := kmsg.NewAlterClientQuotasRequestEntryEntity()
		p.Type = parts[i]
		if parts[i+1] != "" {
			p.Name = kmsg.StringPtr(parts[i+1])
		}
		e.Entity = append(e.Entity, p)
	}
	for i := 0; i < len(ops); i += 2 {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key = ops[i].(string)
		if v := ops[i+1].(float64); v < 0 {
			op.Remove = true
		} else {
			op.Value = v
		}
		e.Ops = append(e.Ops, op)
	}
	return e
}

func (h *harness) alterQuotas(t *testing.T, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntry {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	return h.c.AlterClientQuotas(ctx(t), req).Entries
}

func TestAlterClientQuotas(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	alice := metadata.QuotaEntity{User: metadata.QuotaName{Present: true, Name: "alice"}}
	defaultClient := metadata.QuotaEntity{ClientID: metadata.QuotaName{Present: true, Default: true}}
	rs := h.alterQuotas(t, false,
		quotaEntry([]string{"user", "alice"}, "producer_byte_rate", 1024.0, "request_percentage", 12.5),
		quotaEntry([]string{"client-id", ""}, "consumer_byte_rate", 2048.0),
	)
	for i, r := range rs {
		wantErr(t, r.ErrorCode, r.ErrorMessage, nil, "")
		if len(r.Entity) == 0 {
			t.Fatalf("entry %d: no entity echoed", i)
		}
	}
	got := h.loader.Image().ClientQuotas()
	if !maps.Equal(got[alice], map[string]float64{"producer_byte_rate": 1024, "request_percentage": 12.5}) ||
		!maps.Equal(got[defaultClient], map[string]float64{"consumer_byte_rate": 2048}) || len(got) != 2 {
		t.Fatalf("quotas after set: %v", got)
	}

	// Removing one key keeps the other; removing an absent key is fine.
	rs = h.alterQuotas(t, false, quotaEntry([]string{"user", "alice"}, "request_percentage", -1.0, "consumer_byte_rate", -1.0))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if q := h.loader.Image().ClientQuotas()[alice]; !maps.Equal(q, map[string]float64{"producer_byte_rate": 1024}) {
		t.Fatalf("alice after removing request_percentage: %v", q)
	}

	// Kafka's refusals, each INVALID_REQUEST with its message; the valid
	// entry beside them applies; validate_only writes nothing.
	cases := []struct {
		entry kmsg.AlterClientQuotasRequestEntry
		msg   string
	}{
		{quotaEntry(nil, "producer_byte_rate", 1.0), "Invalid empty client quota entity"},
		{quotaEntry([]string{"user", "a", "user", "b"}, "producer_byte_rate", 1.0), "Invalid client quota entity, duplicate entity entry user"},
		{quotaEntry([]string{"group", "g"}, "producer_byte_rate", 1.0), "Unhandled client quota entity type: group"},
		{quotaEntry([]string{"ip", "10.0.0.1", "user", "a"}, "connection_creation_rate", 1.0), "Invalid quota entity combination, IP entity should not be combined with User or ClientId"},
		{quotaEntry([]string{"ip", "not an ip"}, "connection_creation_rate", 1.0), "not an ip is not a valid IP or resolvable host."},
		{quotaEntry([]string{"ip", "10.0.0.1"}, "producer_byte_rate", 1.0), "Invalid configuration key producer_byte_rate"},
		{quotaEntry([]string{"user", "b"}, "producer_byte_rate", 0.0), "Quota producer_byte_rate must be greater than 0"},
		{quotaEntry([]string{"user", "b"}, "producer_byte_rate", 1.5), "producer_byte_rate cannot be a fractional value."},
		{quotaEntry([]string{"user", "b"}, "producer_byte_rate", 1.0, "producer_byte_rate", 2.0), "Duplicate quota key producer_byte_rate not updating quota for this entity ClientQuotaEntity(entries={user=b})"},
	}
	for _, c := range cases {
		rs := h.alterQuotas(t, false, c.entry, quotaEntry([]string{"user", "carol"}, "producer_byte_rate", 5.0))
		wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, kerr.InvalidRequest, c.msg)
		wantErr(t, rs[1].ErrorCode, rs[1].ErrorMessage, nil, "")
	}
	carol := metadata.QuotaEntity{User: metadata.QuotaName{Present: true, Name: "carol"}}
	if q := h.loader.Image().ClientQuotas()[carol]; q["producer_byte_rate"] != 5 {
		t.Fatalf("carol's quota beside refused entries: %v", q)
	}
	// A repeated entity: the first applies, the second is refused.
	rs = h.alterQuotas(t, false,
		quotaEntry([]string{"user", "dave"}, "producer_byte_rate", 7.0),
		quotaEntry([]string{"user", "dave"}, "producer_byte_rate", 8.0))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	wantErr(t, rs[1].ErrorCode, rs[1].ErrorMessage, kerr.InvalidRequest, "Ignoring duplicate entity ClientQuotaEntity(entries={user=dave})")
	dave := metadata.QuotaEntity{User: metadata.QuotaName{Present: true, Name: "dave"}}
	if q := h.loader.Image().ClientQuotas()[dave]; q["producer_byte_rate"] != 7 {
		t.Fatalf("dave after a repeated entry: %v", q)
	}
	rs = h.alterQuotas(t, true, quotaEntry([]string{"user", "erin"}, "producer_byte_rate", 9.0))
	wantErr(t, rs[0].ErrorCode, rs[0].ErrorMessage, nil, "")
	if _, ok := h.loader.Image().ClientQuotas()[metadata.QuotaEntity{User: metadata.QuotaName{Present: true, Name: "erin"}}]; ok {
		t.Fatal("validate_only wrote a quota")
	}
}

// TestControllerMutationQuota: with a controller_mutation_rate of 2/s
// (a bucket of 4 tokens over two 1 s windows) for client id "admin",
// CreateTopics v6+, DeleteTopics v5+ and CreatePartitions v3+ refuse
// the topics that come once the bucket is overdrawn with
// THROTTLING_QUOTA_EXCEEDED and say how long to wait; older versions are
// accepted and only throttled (Kafka's strict and permissive quotas). A
// request no client is named for (a broker's own) is not counted, and the
// bucket refills with time.
func TestControllerMutationQuota(t *testing.T) {
	// The clock moves only when the test moves it: real time passing
	// between requests on a loaded machine would refill the bucket and
	// shorten the throttle times asserted below.
	var offset atomic.Int64
	base := time.Now()
	now := func() time.Time { return base.Add(time.Duration(offset.Load())) }
	quotas := security.NewQuotaManager(time.Second, 2)
	h := startWith(t, t.TempDir(), 1, func(c *Config) { c.Quotas, c.Now = quotas, now })
	if err := h.loader.Register(security.QuotaPublisher{M: quotas}); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.alterQuotas(t, false, quotaEntry([]string{"client-id", "admin"}, "controller_mutation_rate", 2.0)) {
		wantErr(t, r.ErrorCode, r.ErrorMessage, nil, "")
	}
	admin := WithRequester(ctx(t), Requester{Principal: security.Anonymous, ClientID: "admin"})
	codes := func(resp *kmsg.CreateTopicsResponse) []int16 {
		var out []int16
		for _, t := range resp.Topics {
			out = append(out, t.ErrorCode)
		}
		return out
	}
	throttled := kerr.ThrottlingQuotaExceeded.Code

	// 3 + 3 partitions: the second overdraws the 4 tokens to -2; the
	// third topic waits 2 tokens / 2 per s = 1 s.
	resp := h.c.CreateTopics(admin, createReq(topic("a", 3, 1), topic("b", 3, 1), topic("c", 1, 1)))
	if got := codes(resp); !slices.Equal(got, []int16{0, 0, throttled}) || resp.ThrottleMillis < 900 || resp.ThrottleMillis > 1000 {
		t.Fatalf("CreateTopics v7 over the quota: codes %v, throttle %d ms; want [0 0 %d], about 1000 ms", got, resp.ThrottleMillis, throttled)
	}
	if m := resp.Topics[2].ErrorMessage; m == nil || *m != "The throttling quota has been exceeded." || resp.Topics[2].NumPartitions != -1 {
		t.Errorf("refused topic: message %v, partitions %d", m, resp.Topics[2].NumPartitions)
	}
	if _, ok := h.loader.Image().Topic("c"); ok {
		t.Fatal("a refused topic was created")
	}
	// The broker's own requests are not counted.
	if r := h.c.CreateTopics(ctx(t), createReq(topic("internal", 10, 1))); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("a request without a requester: code %d, throttle %d", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	// v5 has no THROTTLING_QUOTA_EXCEEDED: accepted, throttled.
	old := createReq(topic("d", 2, 1))
	old.Version = 5
	if r := h.c.CreateTopics(admin, old); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis < 1900 {
		t.Fatalf("CreateTopics v5 over the quota: code %d, throttle %d ms; want accepted, throttled about 2 s", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	// The bucket is at -4: DeleteTopics v5 is refused, v4 accepted.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TopicNames = 5, []string{"a"}
	if r := h.c.DeleteTopics(admin, del); r.Topics[0].ErrorCode != throttled || r.ThrottleMillis == 0 {
		t.Fatalf("DeleteTopics v5 over the quota: code %d, throttle %d", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	del.Version = 4
	if r := h.c.DeleteTopics(admin, del); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis == 0 {
		t.Fatalf("DeleteTopics v4 over the quota: code %d, throttle %d", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version = 3
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "b", 4
	cp.Topics = append(cp.Topics, cpt)
	if r := h.c.CreatePartitions(admin, cp); r.Topics[0].ErrorCode != throttled {
		t.Fatalf("CreatePartitions v3 over the quota: code %d", r.Topics[0].ErrorCode)
	}
	// The bucket is at -7 (3 + 3 + 2 + 3 spent of 4): 3.5 s later it is
	// back at zero and a request goes through.
	offset.Add(int64(3600 * time.Millisecond))
	if r := h.c.CreatePartitions(admin, cp); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions v3 once the bucket refilled: code %d", r.Topics[0].ErrorCode)
	}
}
