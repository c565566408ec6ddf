package controller

// Delegation tokens (Kafka's DelegationTokenControlManager): brokers forward
// CreateDelegationToken, RenewDelegationToken and ExpireDelegationToken
// after checking what only they can see (the client's connection); the
// controller decides with the requester the request carries and writes
// DelegationTokenRecord and RemoveDelegationTokenRecord. Without
// delegation.token.secret.key every request answers
// DELEGATION_TOKEN_AUTH_DISABLED; below metadata.version 3.6-IV2 (14),
// UNSUPPORTED_VERSION. The background loop removes tokens past their
// expiry or maximum time every delegation.token.expiry.check.interval.ms.

import (
	"context"
	"crypto/hmac"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// TokenConfig is the delegation-token part of a Config.
type TokenConfig struct {
	// SecretKey (delegation.token.secret.key) signs tokens; "" disables
	// them.
	SecretKey string
	// MaxLifetime (delegation.token.max.lifetime.ms, 7 days) bounds a
	// token's life; ExpiryTime (delegation.token.expiry.time.ms, 1 day) is
	// how long it lives unless renewed; ExpiryCheckInterval
	// (delegation.token.expiry.check.interval.ms, 1 hour) how often
	// expired tokens are removed.
	MaxLifetime, ExpiryTime, ExpiryCheckInterval time.Duration
}

// tokenMetadataVersion is metadata.version 3.6-IV2, the first with
// delegation tokens in KRaft.
const tokenMetadataVersion = 14

// tokenRequest checks what every token decision needs and returns the
// image, the requester and the time.
func (c *Controller) tokenRequestLocked(ctx context.Context) (*metadata.Image, security.Principal, time.Time, error) {
	img, err := c.beginLocked(ctx)
	if err != nil {
		return nil, security.Principal{}, time.Time{}, err
	}
	if c.cfg.Tokens.SecretKey == "" {
		return nil, security.Principal{}, time.Time{}, kerr.DelegationTokenAuthDisabled
	}
	if img.Features()[metadata.MetadataVersionFeature] < tokenMetadataVersion {
		return nil, security.Principal{}, time.Time{}, wire.Errorf(kerr.UnsupportedVersion, "delegation tokens need metadata.version 3.6-IV2 or later")
	}
	p := security.Anonymous
	if r, ok := RequesterOf(ctx); ok {
		p = r.Principal
	}
	return img, p, c.cfg.Now(), nil
}

// CreateDelegationToken creates a token owned by the requester, or by the
// owner v3 names (the broker checked the requester may create it). Its
// maximum time is now + delegation.token.max.lifetime.ms, or the
// request's shorter max_lifetime_ms; it expires at the earlier of that
// and now + delegation.token.expiry.time.ms unless renewed. Renewers must
// be User principals (INVALID_PRINCIPAL_TYPE). Versions 1-3.
func (c *Controller) CreateDelegationToken(ctx context.Context, req *kmsg.CreateDelegationTokenRequest) *kmsg.CreateDelegationTokenResponse {
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img, requester, now, err := c.tokenRequestLocked(ctx)
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = security.Principal{Type: security.UserType, Name: *req.OwnerPrincipalName}
		if req.OwnerPrincipalType != nil {
			owner.Type = *req.OwnerPrincipalType
		}
	}
	resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = requester.Type, requester.Name
	if err == nil {
		err = c.createTokenLocked(ctx, img, req, owner, requester, now, resp)
	}
	resp.ErrorCode = wire.ErrorCode(err)
	return resp
}

func (c *Controller) createTokenLocked(ctx context.Context, img *metadata.Image, req *kmsg.CreateDelegationTokenRequest,
	owner, requester security.Principal, now time.Time, resp *kmsg.CreateDelegationTokenResponse) error {
	var renewers []string
	for _, r := range req.Renewers {
		if r.PrincipalType != security.UserType {
			return kerr.InvalidPrincipalType
		}
		renewers = append(renewers, security.Principal{Type: r.PrincipalType, Name: r.PrincipalName}.String())
	}
	life := c.cfg.Tokens.MaxLifetime
	if req.MaxLifetimeMillis > 0 {
		life = min(life, time.Duration(req.MaxLifetimeMillis)*time.Millisecond)
	}
	issued := now.UnixMilli()
	maxTs := now.Add(life).UnixMilli()
	expiry := min(maxTs, now.Add(c.cfg.Tokens.ExpiryTime).UnixMilli())
	var id metadata.Uuid
	for {
		if _, err := c.cfg.Rand.Read(id[:]); err != nil {
			return err
		}
		if _, taken := img.DelegationToken(id.String()); !taken {
			break
		}
	}
	rec := &metadata.DelegationTokenRecord{TokenID: id.String(), Owner: owner.String(), Requester: requester.String(),
		Renewers: renewers, IssueTimestamp: issued, MaxTimestamp: maxTs, ExpirationTimestamp: expiry}
	if err := c.writeLocked(ctx, []metadata.Record{rec}); err != nil {
		return err
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = issued, expiry, maxTs
	resp.TokenID = rec.TokenID
	resp.HMAC = security.DelegationTokenHMAC(c.cfg.Tokens.SecretKey, rec.TokenID)
	return nil
}

// tokenByHMAC finds the token whose HMAC is mac.
func (c *Controller) tokenByHMAC(img *metadata.Image, mac []byte) (metadata.DelegationToken, bool) {
	for _, t := range img.DelegationTokens() {
		if hmac.Equal(security.DelegationTokenHMAC(c.cfg.Tokens.SecretKey, t.ID), mac) {
			return t, true
		}
	}
	return metadata.DelegationToken{}, false
}

// mayRenew reports whether p may renew or expire t: its owner or one of
// its renewers.
func mayRenew(t metadata.DelegationToken, p security.Principal) bool {
	if t.Owner == p.String() {
		return true
	}
	for _, r := range t.Renewers {
		if r == p.String() {
			return true
		}
	}
	return false
}

// RenewDelegationToken moves the expiry of the token the HMAC names to
// now + the request's renew period (delegation.token.expiry.time.ms if
// that is not positive or longer), never past its maximum time. Errors:
// DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_EXPIRED,
// DELEGATION_TOKEN_OWNER_MISMATCH (neither its owner nor a renewer).
// Versions 1-2.
func (c *Controller) RenewDelegationToken(ctx context.Context, req *kmsg.RenewDelegationTokenRequest) *kmsg.RenewDelegationTokenResponse {
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := func() error {
		img, p, now, err := c.tokenRequestLocked(ctx)
		if err != nil {
			return err
		}
		t, ok := c.tokenByHMAC(img, req.HMAC)
		if !ok {
			return kerr.DelegationTokenNotFound
		}
		if ms := now.UnixMilli(); t.Max < ms || t.Expiry < ms {
			return kerr.DelegationTokenExpired
		}
		if !mayRenew(t, p) {
			return kerr.DelegationTokenOwnerMismatch
		}
		period := c.cfg.Tokens.ExpiryTime
		if req.RenewTimeMillis > 0 {
			period = min(period, time.Duration(req.RenewTimeMillis)*time.Millisecond)
		}
		t.Expiry = min(t.Max, now.Add(period).UnixMilli())
		if err := c.writeLocked(ctx, []metadata.Record{tokenRecord(t)}); err != nil {
			return err
		}
		resp.ExpiryTimestamp = t.Expiry
		return nil
	}()
	resp.ErrorCode = wire.ErrorCode(err)
	return resp
}

// ExpireDelegationToken sets the expiry of the token the HMAC names to
// now + the request's expiry period (never past its maximum time), or
// removes it at once when the period is negative. Errors as Renew; an
// already expired token can still be removed. Versions 1-2.
func (c *Controller) ExpireDelegationToken(ctx context.Context, req *kmsg.ExpireDelegationTokenRequest) *kmsg.ExpireDelegationTokenResponse {
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	err := func() error {
		img, p, now, err := c.tokenRequestLocked(ctx)
		if err != nil {
			return err
		}
		t, ok := c.tokenByHMAC(img, req.HMAC)
		if !ok {
			return kerr.DelegationTokenNotFound
		}
		if !mayRenew(t, p) {
			return kerr.DelegationTokenOwnerMismatch
		}
		ms := now.UnixMilli()
		var rec metadata.Record
		switch {
		case req.ExpiryPeriodMillis < 0:
			t.Expiry = ms
			rec = &metadata.RemoveDelegationTokenRecord{TokenID: t.ID}
		case t.Max < ms || t.Expiry < ms:
			return kerr.DelegationTokenExpired
		default:
			t.Expiry = min(t.Max, now.Add(time.Duration(req.ExpiryPeriodMillis)*time.Millisecond).UnixMilli())
			rec = tokenRecord(t)
		}
		if err := c.writeLocked(ctx, []metadata.Record{rec}); err != nil {
			return err
		}
		resp.ExpiryTimestamp = t.Expiry
		return nil
	}()
	resp.ErrorCode = wire.ErrorCode(err)
	return resp
}

func tokenRecord(t metadata.DelegationToken) *metadata.DelegationTokenRecord {
	return &metadata.DelegationTokenRecord{TokenID: t.ID, Owner: t.Owner, Requester: t.Requester,
		Renewers: t.Renewers, IssueTimestamp: t.Issued, MaxTimestamp: t.Max, ExpirationTimestamp: t.Expiry}
}

// expiredTokens are the removals of every token past its expiry or its
// maximum time at now.
func expiredTokens(img *metadata.Image, now time.Time) []metadata.Record {
	var recs []metadata.Record
	ms := now.UnixMilli()
	for _, t := range img.DelegationTokens() {
		if t.Max < ms || t.Expiry < ms {
			recs = append(recs, &metadata.RemoveDelegationTokenRecord{TokenID: t.ID})
		}
	}
	return recs
}

// tokenAPIs are tokens.go's rows of the API table (api.go).
func tokenAPIs() []API {
	return []API{
		api(kmsg.CreateDelegationToken, 1, 3, (*Controller).CreateDelegationToken,
			func(req *kmsg.CreateDelegationTokenRequest, err error) *kmsg.CreateDelegationTokenResponse {
				r := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
				r.ErrorCode = wire.ErrorCode(err)
				return r
			},
			func(r *kmsg.CreateDelegationTokenResponse) bool { return r.ErrorCode == notController }),
		api(kmsg.RenewDelegationToken, 1, 2, (*Controller).RenewDelegationToken,
			func(req *kmsg.RenewDelegationTokenRequest, err error) *kmsg.RenewDelegationTokenResponse {
				r := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
				r.ErrorCode, r.ExpiryTimestamp = wire.ErrorCode(err), -1
				return r
			},
			func(r *kmsg.RenewDelegationTokenResponse) bool { return r.ErrorCode == notController }),
		api(kmsg.ExpireDelegationToken, 1, 2, (*Controller).ExpireDelegationToken,
			func(req *kmsg.ExpireDelegationTokenRequest, err error) *kmsg.ExpireDelegationTokenResponse {
				r := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
				r.ErrorCode, r.ExpiryTimestamp = wire.ErrorCode(err), -1
				return r
			},
			func(r *kmsg.ExpireDelegationTokenResponse) bool { return r.ErrorCode == notController }),
	}
}
