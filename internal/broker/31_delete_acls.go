package broker

// DeleteAcls v1-v3 (API key 31).
//
// Behavior: checked here as Kafka's broker and AclApis check it, then
// forwarded to the active controller, which matches each filter against
// the ACLs and commits their removal (internal/controller's DeleteAcls).
//   - A filter with a code 0 (UNKNOWN) field fails Kafka's parsing: the
//     connection is closed.
//   - CLUSTER_AUTHORIZATION_FAILED for every filter without ALTER on the
//     cluster; SECURITY_DISABLED ("No Authorizer is configured.") when
//     authorizer.class.name is unset.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/wire"
)

func handleDeleteACLs(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	for _, f := range req.Filters {
		if f.ResourceType == kmsg.ACLResourceTypeUnknown || f.ResourcePatternType == kmsg.ACLResourcePatternTypeUnknown ||
			f.Operation == kmsg.ACLOperationUnknown || f.PermissionType == kmsg.ACLPermissionTypeUnknown {
			return nil, errors.New("DeleteAcls filters contain UNKNOWN elements")
		}
	}
	if err := b.authz(c).alterACLs(); err != nil {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		resp.Version = req.Version
		code, msg := wire.ErrorCodeAndMessage(err)
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	return b.forward(ctx, c, req), nil
}
