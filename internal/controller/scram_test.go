package controller

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
)

func upsert(name string, mech int8, iterations int32, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = name, mech, iterations
	u.Salt = []byte("salt-of-" + name)
	if security.ScramMechanism(mech).Valid() && iterations > 0 && iterations < 1<<15 {
		u.SaltedPassword = security.ScramMechanism(mech).SaltedPassword(password, u.Salt, int(iterations))
	}
	return u
}

func deletion(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = name, mech
	return d
}

func (h *harness) alterScram(t *testing.T, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]kmsg.AlterUserSCRAMCredentialsResponseResult {
	t.Helper()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = dels, ups
	resp := h.c.AlterUserSCRAMCredentials(ctx(t), req)
	out := map[string]kmsg.AlterUserSCRAMCredentialsResponseResult{}
	for _, r := range resp.Results {
		if _, dup := out[r.User]; dup {
			t.Fatalf("two results for %q", r.User)
		}
		out[r.User] = r
	}
	return out
}

func TestAlterUserSCRAMCredentials(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	res := h.alterScram(t, nil,
		upsert("alice", 1, 4096, "alice-pw"),
		upsert("bob", 2, 8192, "bob-pw"),
		upsert("", 1, 4096, "x"),
		upsert("carol", 3, 4096, "x"),
		upsert("dave", 1, 4095, "x"),
		upsert("erin", 2, 16385, "x"),
		upsert("frank", 1, 4096, "x"), upsert("frank", 2, 4096, "x"))
	want := map[string]*kerr.Error{"alice": nil, "bob": nil, "": kerr.UnacceptableCredential,
		"carol": kerr.UnsupportedSaslMechanism, "dave": kerr.UnacceptableCredential,
		"erin": kerr.UnacceptableCredential, "frank": kerr.DuplicateResource}
	msgs := map[string]string{"": "Username must not be empty", "carol": "Unknown SCRAM mechanism",
		"dave": "Too few iterations", "erin": "Too many iterations",
		"frank": "A user credential cannot be altered twice in the same request"}
	for u, w := range want {
		r, ok := res[u]
		if !ok {
			t.Fatalf("no result for %q", u)
		}
		wantErr(t, r.ErrorCode, r.ErrorMessage, w, msgs[u])
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	img := h.loader.Image()
	keys := img.ScramKeys()
	if len(keys) != 2 || keys[0].Name != "alice" || keys[1].Name != "bob" {
		t.Fatalf("credentials %v, want alice and bob only", keys)
	}
	// The image keeps the derived keys, which authenticate the password.
	c, _ := img.ScramCredential("bob", 2)
	wantCred := security.ScramSHA512.NewCredential("bob-pw", []byte("salt-of-bob"), 8192)
	if c.Iterations != 8192 || !bytes.Equal(c.StoredKey, wantCred.StoredKey) || !bytes.Equal(c.ServerKey, wantCred.ServerKey) {
		t.Fatalf("bob's credential %+v", c)
	}

	// Deletions: a missing one is RESOURCE_NOT_FOUND; a user deleted and
	// upserted in one request is a duplicate, and neither happens.
	res = h.alterScram(t, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		deletion("alice", 1), deletion("alice", 2), deletion("bob", 2), deletion("bob", 1), deletion("nobody", 1), deletion("x", 9),
	}, upsert("bob", 1, 4096, "bob-again"))
	want = map[string]*kerr.Error{"alice": kerr.DuplicateResource, "bob": kerr.DuplicateResource,
		"nobody": kerr.ResourceNotFound, "x": kerr.UnsupportedSaslMechanism}
	for u, w := range want {
		wantErr(t, res[u].ErrorCode, res[u].ErrorMessage, w, map[string]string{
			"alice": msgs["frank"], "bob": msgs["frank"], "nobody": "Attempt to delete a user credential that does not exist",
			"x": "Unknown SCRAM mechanism"}[u])
	}
	if n := len(h.loader.Image().ScramKeys()); n != 2 {
		t.Fatalf("%d credentials after a request of failures", n)
	}
	res = h.alterScram(t, []kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 1)}, upsert("bob", 1, 4096, "bob-256"))
	if res["alice"].ErrorCode != 0 || res["bob"].ErrorCode != 0 {
		t.Fatalf("results %+v", res)
	}
	keys = h.loader.Image().ScramKeys()
	if len(keys) != 2 || keys[0].Name != "bob" || keys[0].Mechanism != 1 || keys[1].Name != "bob" || keys[1].Mechanism != 2 {
		t.Fatalf("credentials %v, want bob's two", keys)
	}
}
