package e2e

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/servertest"
)

// Delegation tokens (KIP-48) with franz-go: a SCRAM user creates a token
// for itself, a client authenticates with the token (SCRAM with
// tokenauth=true) as that user, may not manage tokens over that
// connection, and is refused once the token is expired; renew, describe
// and the PLAINTEXT refusal answer as Kafka's.
func TestDelegationTokens(t *testing.T) {
	ctx := testContext(t)
	srv := startSASL(t, "delegation.token.secret.key=token-secret")
	plainAdm := kadm.NewClient(newKgo(t, srv.Addr("PLAINTEXT")))
	scramUsers(t, ctx, plainAdm, nil,
		kadm.UpsertSCRAM{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-pw"})
	addr := srv.Addr("SASL_PLAINTEXT")
	alice := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()
	adm := kadm.NewClient(newKgo(t, addr, kgo.SASL(alice)))

	// PLAINTEXT clients may not manage tokens.
	if _, err := plainAdm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}

	tok, err := adm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{
		Renewers: []kadm.Principal{{Type: "User", Name: "bob"}}, MaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Owner.Name != "alice" || tok.TokenRequesterPrincipal.Name != "alice" || tok.TokenID == "" || len(tok.HMAC) != 64 {
		t.Fatalf("token %+v", tok)
	}
	if life := tok.MaxTimestamp.Sub(tok.IssueTimestamp); life != time.Hour {
		t.Errorf("max lifetime %v, want the requested 1h", life)
	}
	if tok.ExpiryTimestamp != tok.MaxTimestamp {
		t.Errorf("expiry %v, want the max %v (shorter than delegation.token.expiry.time.ms)", tok.ExpiryTimestamp, tok.MaxTimestamp)
	}
	tokens, err := adm.DescribeDelegationTokens(ctx)
	if err != nil || len(tokens) != 1 || tokens[0].TokenID != tok.TokenID || string(tokens[0].HMAC) != string(tok.HMAC) ||
		len(tokens[0].Renewers) != 1 || tokens[0].Renewers[0].Name != "bob" {
		t.Fatalf("describe: %v %+v", err, tokens)
	}

	// The token authenticates as alice: produce and consume with it.
	byToken := scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha512Mechanism()
	saslRoundTrip(t, ctx, addr, byToken, "token")
	tokAdm := kadm.NewClient(newKgo(t, addr, kgo.SASL(byToken)))
	if _, err := tokAdm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create with a token: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	// SHA-256 works with the same token; a wrong HMAC does not.
	saslRoundTrip(t, ctx, addr, scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha256Mechanism(), "token256")
	saslRefused(t, ctx, addr, scram.Auth{User: tok.TokenID, Pass: "bm9wZQ==", IsToken: true}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed)

	// Renewing moves the expiry, never past the max.
	exp, err := adm.RenewDelegationToken(ctx, tok.HMAC, 10*time.Minute)
	if err != nil || exp.After(tok.MaxTimestamp) || exp.Before(time.Now().Add(9*time.Minute)) {
		t.Fatalf("renew: %v, expiry %v (max %v)", err, exp, tok.MaxTimestamp)
	}
	if _, err := adm.RenewDelegationToken(ctx, []byte("not a token"), 0); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("renew unknown: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}

	// Expired at once, it is gone and authenticates no more.
	if _, err := adm.ExpireDelegationToken(ctx, tok.HMAC, -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if tokens, err := adm.DescribeDelegationTokens(ctx); err != nil || len(tokens) != 0 {
		t.Fatalf("describe after expiry: %v %+v", err, tokens)
	}
	saslRefused(t, ctx, addr, byToken, kerr.SaslAuthenticationFailed)
}

// Without delegation.token.secret.key, tokens are disabled.
func TestDelegationTokensDisabled(t *testing.T) {
	ctx := testContext(t)
	srv := startSASL(t)
	plainAdm := kadm.NewClient(newKgo(t, srv.Addr("PLAINTEXT")))
	scramUsers(t, ctx, plainAdm, nil,
		kadm.UpsertSCRAM{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"})
	adm := kadm.NewClient(newKgo(t, srv.Addr("SASL_PLAINTEXT"), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism())))
	if _, err := adm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("create: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
	if _, err := adm.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("describe: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
}

// Delegation tokens under StandardAuthorizer: a token for another owner
// needs CREATE_TOKENS on that user; its owner, requester and renewers
// see it in describe, others only with DESCRIBE_TOKENS on its owner.
func TestDelegationTokenACLs(t *testing.T) {
	ctx := testContext(t)
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_carol="carol-secret";`
	srv := servertest.Start(t,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+jaas,
		"super.users=User:admin",
		"delegation.token.secret.key=acl-secret")
	cl := func(user string) *kgo.Client {
		return newKgo(t, srv.Addr("SASL_PLAINTEXT"), kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()))
	}
	alice, carol, admin := kadm.NewClient(cl("alice")), kadm.NewClient(cl("carol")), cl("admin")
	grant := func(principal string, op kmsg.ACLOperation, user string) {
		t.Helper()
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeUser, user, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("grant %s %s on %s: %v %+v", principal, op, user, err, resp)
		}
	}
	bob := kadm.Principal{Type: "User", Name: "bob"}
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &bob}); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Fatalf("token for bob without CREATE_TOKENS: %v, want DELEGATION_TOKEN_AUTHORIZATION_FAILED", err)
	}
	grant("User:alice", kmsg.ACLOperationCreateTokens, "User:bob")
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &bob})
	if err != nil || tok.Owner.Name != "bob" || tok.TokenRequesterPrincipal.Name != "alice" {
		t.Fatalf("token for bob: %v %+v", err, tok)
	}
	ids := func(adm *kadm.Client) []string {
		t.Helper()
		ts, err := adm.DescribeDelegationTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ts {
			out = append(out, d.TokenID)
		}
		return out
	}
	if got := ids(alice); len(got) != 1 || got[0] != tok.TokenID {
		t.Errorf("alice (the requester) sees %v", got)
	}
	if got := ids(carol); len(got) != 0 {
		t.Errorf("carol without rights sees %v", got)
	}
	grant("User:carol", kmsg.ACLOperationDescribeTokens, "User:bob")
	if got := ids(carol); len(got) != 1 || got[0] != tok.TokenID {
		t.Errorf("carol with DESCRIBE_TOKENS on bob sees %v", got)
	}
	// Only the owner or a renewer may renew: alice requested it but is
	// neither.
	if _, err := alice.RenewDelegationToken(ctx, tok.HMAC, time.Minute); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("renew by the requester: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
}
