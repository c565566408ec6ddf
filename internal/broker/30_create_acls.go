package broker

// CreateAcls v1-v3 (API key 30).
//
// Behavior: checked here as Kafka's broker and AclApis check it, then
// forwarded to the active controller, which decides each creation
// (internal/controller's CreateAcls) and commits the new ACLs; every
// broker's authorizer applies them when it applies the metadata.
//   - A creation with a code 0 (UNKNOWN) field fails Kafka's parsing: the
//     connection is closed.
//   - CLUSTER_AUTHORIZATION_FAILED for every creation without ALTER on
//     the cluster; SECURITY_DISABLED ("No Authorizer is configured.")
//     when authorizer.class.name is unset.
//   - A creation whose resource type, operation or permission is ANY, or
//     whose pattern type is ANY or MATCH, fails the whole request with
//     UNKNOWN_SERVER_ERROR (Kafka cannot build the binding).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

func handleCreateACLs(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateACLsRequest)
	acls := make([]security.ACL, len(req.Creations))
	for i, cr := range req.Creations {
		acls[i] = security.ACL{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
			Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
	}
	closeConn, err := security.CheckCreateRequest(req.Version, acls)
	if closeConn {
		return nil, err
	}
	if aerr := b.authz(c).alterACLs(); aerr != nil {
		err = aerr // refused first, as Kafka checks before it builds bindings
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		resp.Version = req.Version
		code, msg := wire.ErrorCodeAndMessage(err)
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	return b.forward(ctx, c, req), nil
}
