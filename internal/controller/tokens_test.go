package controller

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
)

// Delegation tokens through their lifetime on a fake clock: expiry and
// maximum time at creation, renewal by a renewer but not by others,
// DELEGATION_TOKEN_EXPIRED past the expiry, and removal by the
// background sweep.
func TestDelegationTokenLifetime(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := startWith(t, t.TempDir(), 0, func(c *Config) {
		c.Now = clock.Now
		c.Tokens = TokenConfig{SecretKey: "s3cret", MaxLifetime: 10 * time.Hour, ExpiryTime: time.Hour, ExpiryCheckInterval: time.Minute}
	})
	by := func(user string) Requester { return Requester{Principal: security.User(user)} }

	create := kmsg.NewPtrCreateDelegationTokenRequest()
	create.Version = 3
	r := kmsg.NewCreateDelegationTokenRequestRenewer()
	r.PrincipalType, r.PrincipalName = "User", "bob"
	create.Renewers = []kmsg.CreateDelegationTokenRequestRenewer{r}
	create.MaxLifetimeMillis = -1
	cr := h.c.CreateDelegationToken(WithRequester(ctx(t), by("alice")), create)
	if cr.ErrorCode != 0 || cr.PrincipalName != "alice" || cr.IssueTimestamp != 1000_000 ||
		cr.ExpiryTimestamp != 1000_000+3600_000 || cr.MaxTimestamp != 1000_000+36000_000 {
		t.Fatalf("create: %+v", cr)
	}
	if string(cr.HMAC) != string(security.DelegationTokenHMAC("s3cret", cr.TokenID)) {
		t.Fatal("HMAC is not HMAC-SHA512 of the id under the secret")
	}

	renew := func(user string, period time.Duration) *kmsg.RenewDelegationTokenResponse {
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = cr.HMAC, period.Milliseconds()
		return h.c.RenewDelegationToken(WithRequester(ctx(t), by(user)), req)
	}
	if got := renew("carol", time.Hour); got.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("renew by carol: %+v", got)
	}
	clock.Advance(30 * time.Minute)
	if got := renew("bob", 2*time.Hour); got.ErrorCode != 0 || got.ExpiryTimestamp != clock.Now().Add(time.Hour).UnixMilli() {
		t.Fatalf("renew by bob (capped at expiry.time): %+v", got)
	}
	tok, _ := h.loader.Image().DelegationToken(cr.TokenID)
	if tok.Expiry != clock.Now().Add(time.Hour).UnixMilli() {
		t.Fatalf("image expiry %d", tok.Expiry)
	}

	clock.Advance(61 * time.Minute)
	if got := renew("alice", time.Hour); got.ErrorCode != kerr.DelegationTokenExpired.Code {
		t.Fatalf("renew expired: %+v", got)
	}
	if _, ok := h.loader.Image().DelegationToken(cr.TokenID); !ok {
		t.Fatal("token removed before the sweep")
	}
	// The sweep is due ExpiryCheckInterval after the controller took over.
	if err := h.c.tick(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.loader.Image().DelegationToken(cr.TokenID); ok {
		t.Fatal("expired token not swept")
	}
}

// Without a secret key every decision is DELEGATION_TOKEN_AUTH_DISABLED.
func TestDelegationTokensDisabled(t *testing.T) {
	h := start(t, t.TempDir(), 0)
	cr := h.c.CreateDelegationToken(ctx(t), kmsg.NewPtrCreateDelegationTokenRequest())
	if cr.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create: %+v", cr)
	}
}
