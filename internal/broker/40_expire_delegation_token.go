package broker

// ExpireDelegationToken, versions 1-2.
//
// Behavior: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry -1) where
// tokens may not be managed (38_create_delegation_token.go); otherwise
// forwarded to the controller, which moves the expiry of the token the
// HMAC names, or removes it for a negative period
// (controller.ExpireDelegationToken).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleExpireDelegationToken(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ExpireDelegationTokenRequest)
	if !tokenRequestsAllowed(c) {
		resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
		resp.Version = req.Version
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		return resp, nil
	}
	return b.forward(ctx, c, req), nil
}
