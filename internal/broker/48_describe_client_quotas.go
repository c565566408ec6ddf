package broker

// DescribeClientQuotas v0-v1 (API key 48).
//
// Behavior: answered from this broker's metadata image, as Kafka's
// ClientQuotasImage.describe: each filter component names an entity type
// (user, client-id, ip) once, matching an exact name (MATCH_TYPE_EXACT),
// the type's default entity (MATCH_TYPE_DEFAULT) or any entity that has
// the type (MATCH_TYPE_SPECIFIED); strict keeps only entities with no
// other parts. An invalid filter answers INVALID_REQUEST with a message;
// an unknown entity type UNSUPPORTED_VERSION. Entries come sorted, users
// then client ids then ips, defaults before names. Without
// DESCRIBE_CONFIGS on the cluster: CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/wire"
)

// Kafka's filter match types.
const (
	matchExact     = 0
	matchDefault   = 1
	matchSpecified = 2
)

func handleDescribeClientQuotas(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	resp.Version = req.Version
	if !b.authz(c).cluster(kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f, err := parseQuotaFilter(req)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.ErrorCodeAndMessage(err)
		return resp, nil
	}
	quotas := b.cfg.Image().ClientQuotas()
	var entities []metadata.QuotaEntity
	for e := range quotas {
		if f.matches(e) {
			entities = append(entities, e)
		}
	}
	slices.SortFunc(entities, metadata.CompareQuotaEntities)
	// Entries is nullable: null only with an error. The Java admin client
	// (kafka-configs --describe --entity-type users) reads an empty
	// answer's entries without a null check.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range entities {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Parts() {
			rp := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			rp.Type, rp.Name = p.Type, p.Name
			re.Entity = append(re.Entity, rp)
		}
		q := quotas[e]
		for _, k := range slices.Sorted(maps.Keys(q)) {
			rv := kmsg.NewDescribeClientQuotasResponseEntryValue()
			rv.Key, rv.Value = k, q[k]
			re.Values = append(re.Values, rv)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

// quotaFilter is a parsed DescribeClientQuotas filter: exact holds the
// entity types matched by name (nil name: the default), specified those
// matched by presence.
type quotaFilter struct {
	exact     map[string]*string
	specified map[string]bool
	strict    bool
}

func parseQuotaFilter(req *kmsg.DescribeClientQuotasRequest) (quotaFilter, error) {
	f := quotaFilter{exact: map[string]*string{}, specified: map[string]bool{}, strict: req.Strict}
	for _, c := range req.Components {
		if c.EntityType == "" {
			return f, wire.Errorf(kerr.InvalidRequest, "Invalid empty entity type.")
		}
		if _, ok := f.exact[c.EntityType]; ok || f.specified[c.EntityType] {
			return f, wire.Errorf(kerr.InvalidRequest, "Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		switch c.EntityType {
		case metadata.QuotaUser, metadata.QuotaClientID, metadata.QuotaIP:
		default:
			return f, wire.Errorf(kerr.UnsupportedVersion, "Unsupported entity type %s", c.EntityType)
		}
		switch c.MatchType {
		case matchExact:
			if c.Match == nil {
				return f, wire.Errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			f.exact[c.EntityType] = c.Match
		case matchDefault:
			if c.Match != nil {
				return f, wire.Errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			f.exact[c.EntityType] = nil
		case matchSpecified:
			if c.Match != nil {
				return f, wire.Errorf(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			f.specified[c.EntityType] = true
		default:
			return f, wire.Errorf(kerr.InvalidRequest, "Unknown match type %d", c.MatchType)
		}
	}
	has := func(t string) bool { _, ok := f.exact[t]; return ok || f.specified[t] }
	if has(metadata.QuotaIP) && (has(metadata.QuotaUser) || has(metadata.QuotaClientID)) {
		return f, wire.Errorf(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return f, nil
}

func (f quotaFilter) matches(e metadata.QuotaEntity) bool {
	parts := map[string]metadata.QuotaName{}
	for _, p := range []struct {
		t string
		n metadata.QuotaName
	}{{metadata.QuotaUser, e.User}, {metadata.QuotaClientID, e.ClientID}, {metadata.QuotaIP, e.IP}} {
		if p.n.Present {
			parts[p.t] = p.n
		}
	}
	if f.strict && len(parts) != len(f.exact)+len(f.specified) {
		return false
	}
	for t, want := range f.exact {
		n, ok := parts[t]
		if !ok || n.Default != (want == nil) || (want != nil && n.Name != *want) {
			return false
		}
	}
	for t := range f.specified {
		if _, ok := parts[t]; !ok {
			return false
		}
	}
	return true
}
