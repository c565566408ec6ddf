package broker

// CreateDelegationToken, versions 1-3 (KIP-48; v3 names an owner, KIP-373).
//
// Behavior (Kafka's KafkaApis and DelegationTokenControlManager):
//   - Tokens are managed only over authenticated connections: a client on
//     a PLAINTEXT listener, an SSL client without a certificate, or one
//     that authenticated with a delegation token gets
//     DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (create, renew, expire and
//     describe alike).
//   - A token for another owner needs CREATE_TOKENS on that USER
//     resource (DELEGATION_TOKEN_AUTHORIZATION_FAILED); renewers must be
//     User principals (INVALID_PRINCIPAL_TYPE).
//   - The rest is the controller's (controller.CreateDelegationToken),
//     forwarded with the requester: DELEGATION_TOKEN_AUTH_DISABLED
//     without delegation.token.secret.key, and the token's id, HMAC and
//     timestamps otherwise.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
)

// tokenRequestsAllowed is Kafka's allowTokenRequests: whether the client
// on c may create, renew, expire or describe delegation tokens.
func tokenRequestsAllowed(c *network.Conn) bool {
	if c.TokenAuthenticated() {
		return false
	}
	if c.UsesSASL() {
		return true
	}
	_, tls := c.TLSState()
	return tls && c.Principal() != security.Anonymous
}

func handleCreateDelegationToken(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateDelegationTokenRequest)
	requester := c.Principal()
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = security.Principal{Type: security.UserType, Name: *req.OwnerPrincipalName}
		if req.OwnerPrincipalType != nil {
			owner.Type = *req.OwnerPrincipalType
		}
	}
	refuse := func(err *kerr.Error) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		resp.Version = req.Version
		resp.ErrorCode = err.Code
		resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
		resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = requester.Type, requester.Name
		return resp, nil
	}
	if !tokenRequestsAllowed(c) {
		return refuse(kerr.DelegationTokenRequestNotAllowed)
	}
	if owner != requester && !b.authz(c).allowed(kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, owner.String()) {
		return refuse(kerr.DelegationTokenAuthorizationFailed)
	}
	for _, r := range req.Renewers {
		if r.PrincipalType != security.UserType {
			return refuse(kerr.InvalidPrincipalType)
		}
	}
	return b.forward(ctx, c, req), nil
}
