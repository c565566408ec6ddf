package controller

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// quotaKeyType is how a quota key's value must look: integral keys are
// Kafka's LONG and INT quota configs.
type quotaKeyType int

const (
	quotaDouble quotaKeyType = iota
	quotaLong
	quotaInt
)

// userClientQuotaKeys are the quotas of user and client-id entities
// (Kafka's QuotaConfig.userAndClientQuotaConfigs), ipQuotaKeys those of
// ip entities.
var (
	userClientQuotaKeys = map[string]quotaKeyType{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{"connection_creation_rate": quotaInt}
)

// AlterClientQuotas serves AlterClientQuotas v0-v1 (Kafka's
// ClientQuotaControlManager.alterClientQuotas).
//
// Behavior: each entry names an entity (user, client-id and ip parts, a
// null name being the type's default) and sets or removes quotas. An
// entity is refused whole with INVALID_REQUEST when it is empty, repeats a
// part or an earlier entry's entity, combines ip with user or client-id,
// names an unknown part type or an empty name, or sets a key that is not a
// quota of its kind, a value <= 0, or a fraction for an integral key.
// A later entry for the same entity is refused (the first applies).
// Other entries still apply. Only changes are written: setting a quota to
// its value or removing an absent one writes nothing. validate_only writes
// nothing.
func (c *Controller) AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	errs := make([]error, len(req.Entries))
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	var recs []metadata.Record
	var applied []int
	seen := map[metadata.QuotaEntity]bool{}
	for i, e := range req.Entries {
		if err != nil {
			errs[i] = err
			continue
		}
		parts := make([]metadata.QuotaEntityPart, len(e.Entity))
		for j, p := range e.Entity {
			parts[j] = metadata.QuotaEntityPart{Type: p.Type, Name: p.Name}
		}
		entity, rs, qerr := decideQuotaChange(img, parts, e.Ops)
		if _, dup := seen[entity]; dup && qerr == nil {
			qerr = wire.Errorf(kerr.InvalidRequest, "Ignoring duplicate entity %s", describeEntity(parts))
		}
		if qerr != nil {
			errs[i] = qerr
			continue
		}
		seen[entity] = true
		recs = append(recs, rs...)
		applied = append(applied, i)
	}
	if err == nil && !req.ValidateOnly {
		var werr error
		if len(recs) > MaxRecordsPerUserOp {
			werr = wire.Errorf(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
		} else {
			werr = c.writeLocked(ctx, recs)
		}
		if werr != nil {
			for _, i := range applied {
				errs[i] = werr
			}
		}
	}
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rp.Type, rp.Name = p.Type, p.Name
			re.Entity = append(re.Entity, rp)
		}
		re.ErrorCode, re.ErrorMessage = wire.ErrorCodeAndMessage(errs[i])
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// decideQuotaChange validates one entry and returns its entity and the
// records that apply its operations to img.
func decideQuotaChange(img *metadata.Image, parts []metadata.QuotaEntityPart, ops []kmsg.AlterClientQuotasRequestEntryOp) (metadata.QuotaEntity, []metadata.Record, error) {
	if len(parts) == 0 {
		return metadata.QuotaEntity{}, nil, wire.Errorf(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	types := map[string]bool{}
	for _, p := range parts {
		if types[p.Type] {
			return metadata.QuotaEntity{}, nil, wire.Errorf(kerr.InvalidRequest, "Invalid client quota entity, duplicate entity entry %s", p.Type)
		}
		types[p.Type] = true
		switch p.Type {
		case metadata.QuotaUser, metadata.QuotaClientID, metadata.QuotaIP:
		default:
			return metadata.QuotaEntity{}, nil, wire.Errorf(kerr.InvalidRequest, "Unhandled client quota entity type: %s", p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return metadata.QuotaEntity{}, nil, wire.Errorf(kerr.InvalidRequest, "Empty %s not supported", p.Type)
		}
	}
	entity, _ := metadata.QuotaEntityOf(parts)
	keys := userClientQuotaKeys
	if entity.IP.Present {
		if entity.User.Present || entity.ClientID.Present {
			return entity, nil, wire.Errorf(kerr.InvalidRequest, "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
		}
		if !entity.IP.Default && net.ParseIP(entity.IP.Name) == nil {
			return entity, nil, wire.Errorf(kerr.InvalidRequest, "%s is not a valid IP or resolvable host.", entity.IP.Name)
		}
		keys = ipQuotaKeys
	}
	opKeys := map[string]bool{}
	for _, op := range ops {
		if opKeys[op.Key] {
			return entity, nil, wire.Errorf(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity %s", op.Key, describeEntity(parts))
		}
		opKeys[op.Key] = true
	}
	current := img.ClientQuotas()[entity]
	var recs []metadata.Record
	for _, op := range ops {
		if op.Remove {
			if _, ok := current[op.Key]; ok {
				recs = append(recs, &metadata.ClientQuotaRecord{Entity: entity.Parts(), Key: op.Key, Remove: true})
			}
			continue
		}
		if err := validateQuotaValue(keys, op.Key, op.Value); err != nil {
			return entity, nil, err
		}
		if v, ok := current[op.Key]; !ok || v != op.Value {
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: entity.Parts(), Key: op.Key, Value: op.Value})
		}
	}
	return entity, recs, nil
}

// validateQuotaValue is Kafka's validateQuotaKeyValue.
func validateQuotaValue(keys map[string]quotaKeyType, key string, value float64) error {
	typ, ok := keys[key]
	if !ok {
		return wire.Errorf(kerr.InvalidRequest, "Invalid configuration key %s", key)
	}
	if !(value > 0) {
		return wire.Errorf(kerr.InvalidRequest, "Quota %s must be greater than 0", key)
	}
	switch typ {
	case quotaInt:
		if value > math.MaxInt32 {
			return wire.Errorf(kerr.InvalidRequest, "Proposed value for %s is too large for an INT.", key)
		}
	case quotaLong:
		if value > math.MaxInt64 {
			return wire.Errorf(kerr.InvalidRequest, "Proposed value for %s is too large for a LONG.", key)
		}
	default:
		return nil
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return wire.Errorf(kerr.InvalidRequest, "%s cannot be a fractional value.", key)
	}
	return nil
}

// describeEntity prints an entity as Kafka's ClientQuotaEntity does.
func describeEntity(parts []metadata.QuotaEntityPart) string {
	var b strings.Builder
	b.WriteString("ClientQuotaEntity(entries={")
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		name := "null"
		if p.Name != nil {
			name = *p.Name
		}
		fmt.Fprintf(&b, "%s=%s", p.Type, name)
	}
	b.WriteString("})")
	return b.String()
}

func quotaAPIs() []API {
	return []API{
		api(kmsg.AlterClientQuotas, 0, 1, (*Controller).AlterClientQuotas,
			func(req *kmsg.AlterClientQuotasRequest, err error) *kmsg.AlterClientQuotasResponse {
				r := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
				for _, e := range req.Entries {
					re := kmsg.NewAlterClientQuotasResponseEntry()
					for _, p := range e.Entity {
						rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
						rp.Type, rp.Name = p.Type, p.Name
						re.Entity = append(re.Entity, rp)
					}
					re.ErrorCode, re.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
					r.Entries = append(r.Entries, re)
				}
				return r
			},
			func(r *kmsg.AlterClientQuotasResponse) bool {
				return len(r.Entries) > 0 && r.Entries[0].ErrorCode == notController
			}),
	}
}

// Requester is the client a broker forwards a request for (Kafka's
// request context, which the broker's Envelope carries): its principal
// and client id. The controller counts the partitions the request
// creates or deletes against the client's controller_mutation_rate.
type Requester struct {
	Principal security.Principal
	ClientID  string
}

type requesterKey struct{}

// WithRequester returns ctx carrying the client a forwarded request is
// for. A request whose context carries none (a broker's own, such as
// creating __consumer_offsets) is not subject to client quotas.
func WithRequester(ctx context.Context, r Requester) context.Context {
	return context.WithValue(ctx, requesterKey{}, r)
}

// RequesterOf returns the client ctx carries (WithRequester).
func RequesterOf(ctx context.Context) (Requester, bool) {
	r, ok := ctx.Value(requesterKey{}).(Requester)
	return r, ok
}

// mutationQuota is the controller_mutation_rate of the client ctx's
// request is for (KIP-599; Kafka's ControllerMutationQuotaManager), nil
// (unbounded) when there is none. Kafka enforces it strictly — refusing
// topics with THROTTLING_QUOTA_EXCEEDED — from the version of each
// request that has that error (strictSince: CreateTopics v6,
// DeleteTopics v5, CreatePartitions v3); older clients would not
// understand it, so their requests are accepted and only throttled.
func (c *Controller) mutationQuota(ctx context.Context, version, strictSince int16) *security.MutationQuotaRequest {
	r, ok := RequesterOf(ctx)
	if !ok || c.cfg.Quotas == nil {
		return nil
	}
	return c.cfg.Quotas.Mutations(r.Principal.Name, r.ClientID, version >= strictSince)
}

// errQuotaExceeded is a topic's answer when a strict
// controller_mutation_rate refuses it.
var errQuotaExceeded = wire.Errorf(kerr.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")

// recordMutations counts n partitions created or deleted against q and
// returns errQuotaExceeded when a strict quota refuses them.
func (c *Controller) recordMutations(q *security.MutationQuotaRequest, n int) *wire.Error {
	if q.Record(n, c.cfg.Now()) {
		return nil
	}
	return errQuotaExceeded
}

// throttleMillis is a response's throttle_time_ms for q.
func (c *Controller) throttleMillis(q *security.MutationQuotaRequest) int32 {
	return int32(q.Throttle(c.cfg.Now()).Milliseconds())
}
