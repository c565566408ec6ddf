package controller

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
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
