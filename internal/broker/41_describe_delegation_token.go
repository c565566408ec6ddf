package broker

// DescribeDelegationToken, versions 1-3.
//
// Behavior (Kafka's handleDescribeTokensRequest), answered from this
// broker's metadata image:
//   - DELEGATION_TOKEN_REQUEST_NOT_ALLOWED where tokens may not be
//     managed (38_create_delegation_token.go);
//     DELEGATION_TOKEN_AUTH_DISABLED without delegation.token.secret.key.
//   - An empty owner list describes nothing; a null one every token. A
//     token is listed when it matches one of the owners (its owner,
//     requester or a renewer) and the client is its owner, requester or
//     a renewer, or has DESCRIBE on the DELEGATION_TOKEN or
//     DESCRIBE_TOKENS on its owner's USER resource.
//   - Each token comes with its HMAC, renewers and timestamps, by id.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
)

func handleDescribeDelegationToken(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	resp.Version = req.Version
	secret := b.cfg.Static.DelegationTokenSecretKey
	switch {
	case !tokenRequestsAllowed(c):
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case secret == "":
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case req.Owners != nil && len(req.Owners) == 0:
		return resp, nil
	}
	z := b.authz(c)
	me := c.Principal().String()
	for _, t := range b.cfg.Image().DelegationTokens() {
		if req.Owners != nil && !slices.ContainsFunc(req.Owners, func(o kmsg.DescribeDelegationTokenRequestOwner) bool {
			return tokenOwnerOrRenewer(t, security.Principal{Type: o.PrincipalType, Name: o.PrincipalName}.String())
		}) {
			continue
		}
		if !tokenOwnerOrRenewer(t, me) &&
			!z.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, t.ID) &&
			!z.allowed(kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, t.Owner) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		owner, _ := security.ParsePrincipal(t.Owner)
		requester, _ := security.ParsePrincipal(t.Requester)
		d.PrincipalType, d.PrincipalName = owner.Type, owner.Name
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = requester.Type, requester.Name
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.Issued, t.Expiry, t.Max
		d.TokenID = t.ID
		d.HMAC = security.DelegationTokenHMAC(secret, t.ID)
		for _, r := range t.Renewers {
			p, _ := security.ParsePrincipal(r)
			rn := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			rn.PrincipalType, rn.PrincipalName = p.Type, p.Name
			d.Renewers = append(d.Renewers, rn)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}

// tokenOwnerOrRenewer is Kafka's TokenInformation.ownerOrRenewer: whether
// principal (in "User:alice" form) owns, requested or may renew t.
func tokenOwnerOrRenewer(t metadata.DelegationToken, principal string) bool {
	return t.Owner == principal || t.Requester == principal || slices.Contains(t.Renewers, principal)
}
