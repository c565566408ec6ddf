package broker

// DescribeAcls v1-v3 (API key 29).
//
// Behavior: answered from this broker's authorizer (Kafka's brokers do,
// with AclApis), so it shows the ACLs of the metadata image this node
// has applied.
//   - A filter field with code 0 (UNKNOWN) fails Kafka's parsing: the
//     connection is closed. A code Kafka does not know (99) selects
//     nothing.
//   - CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster;
//     SECURITY_DISABLED ("No Authorizer is configured on the broker")
//     when authorizer.class.name is unset.
//   - The ACLs come grouped by resource pattern, in Kafka's order
//     (resource type, then name descending, then pattern type).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
)

func handleDescribeACLs(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeACLsRequest)
	if req.ResourceType == kmsg.ACLResourceTypeUnknown || req.ResourcePatternType == kmsg.ACLResourcePatternTypeUnknown ||
		req.Operation == kmsg.ACLOperationUnknown || req.PermissionType == kmsg.ACLPermissionTypeUnknown {
		return nil, errors.New("DescribeAcls filter contains UNKNOWN elements")
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.Version = req.Version
	z := b.authz(c)
	switch {
	case !z.cluster(kmsg.ACLOperationDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case !z.on():
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, strPtr("No Authorizer is configured on the broker")
		return resp, nil
	}
	acls := b.cfg.Authorizer.Describe(security.Filter{
		ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	})
	for i, a := range acls {
		if i == 0 || a.ResourceType != acls[i-1].ResourceType || a.ResourceName != acls[i-1].ResourceName || a.PatternType != acls[i-1].PatternType {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = a.ResourceType, a.ResourceName, a.PatternType
			resp.Resources = append(resp.Resources, r)
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host, ra.Operation, ra.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
		r := &resp.Resources[len(resp.Resources)-1]
		r.ACLs = append(r.ACLs, ra)
	}
	return resp, nil
}
