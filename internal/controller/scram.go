package controller

// SCRAM credentials (Kafka's ScramControlManager): AlterUserScramCredentials
// upserts and deletes users' credentials; the controller checks each user's
// change, turns an upsertion's salted password into the StoredKey and
// ServerKey a server keeps, and writes every accepted change in one batch
// of UserScramCredentialRecord and RemoveUserScramCredentialRecord. Every
// node authenticates from its image, so the change applies everywhere
// once replayed.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// AlterUserSCRAMCredentials applies the upsertions and deletions of req.
// A user may appear once per request: a second change of the same user
// fails both with DUPLICATE_RESOURCE. Each other user succeeds or fails
// alone, as Kafka's controller decides:
//   - an empty name: UNACCEPTABLE_CREDENTIAL;
//   - a mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512):
//     UNSUPPORTED_SASL_MECHANISM;
//   - deleting a credential that does not exist: RESOURCE_NOT_FOUND;
//   - fewer than 4096 or more than 16384 iterations: UNACCEPTABLE_CREDENTIAL.
//
// The answer has one result per user, in the order users first appear
// (deletions first), sent after the records are replayed.
func (c *Controller) AlterUserSCRAMCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	var d scramDecision
	if err != nil {
		d = scramFailed(req, err)
	} else {
		d = decideScram(img, req)
	}
	if len(d.records) > 0 {
		if werr := c.writeLocked(ctx, d.records); werr != nil {
			for _, u := range d.order {
				if d.errs[u] == nil {
					d.errs[u] = werr
				}
			}
		}
	}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	for _, u := range d.order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = u
		r.ErrorCode, r.ErrorMessage = wire.ErrorCodeAndMessage(d.errs[u])
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// scramDecision is the outcome of an AlterUserScramCredentials request:
// the users in answer order, the error of each that failed, and the
// records of those that did not.
type scramDecision struct {
	order   []string
	errs    map[string]error
	records []metadata.Record
}

func (d *scramDecision) see(user string) {
	if _, seen := d.errs[user]; !seen {
		d.order = append(d.order, user)
		d.errs[user] = nil
	}
}

// scramFailed fails every user of req with err.
func scramFailed(req *kmsg.AlterUserSCRAMCredentialsRequest, err error) scramDecision {
	d := scramDecision{errs: map[string]error{}}
	for _, del := range req.Deletions {
		d.see(del.Name)
	}
	for _, up := range req.Upsertions {
		d.see(up.Name)
	}
	for _, u := range d.order {
		d.errs[u] = err
	}
	return d
}

var errScramDuplicate = wire.Errorf(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")

// decideScram checks each change against img and returns the records of
// those accepted.
func decideScram(img *metadata.Image, req *kmsg.AlterUserSCRAMCredentialsRequest) scramDecision {
	d := scramDecision{errs: map[string]error{}}
	dels := map[string]kmsg.AlterUserSCRAMCredentialsRequestDeletion{}
	ups := map[string]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{}
	for _, del := range req.Deletions {
		d.see(del.Name)
		if d.errs[del.Name] != nil {
			continue
		}
		if _, dup := dels[del.Name]; dup {
			delete(dels, del.Name)
			d.errs[del.Name] = errScramDuplicate
			continue
		}
		if err := checkScramDeletion(img, del); err != nil {
			d.errs[del.Name] = err
			continue
		}
		dels[del.Name] = del
	}
	for _, up := range req.Upsertions {
		d.see(up.Name)
		if d.errs[up.Name] != nil {
			continue
		}
		_, delDup := dels[up.Name]
		_, upDup := ups[up.Name]
		if delDup || upDup {
			delete(dels, up.Name)
			delete(ups, up.Name)
			d.errs[up.Name] = errScramDuplicate
			continue
		}
		if err := checkScramUpsertion(up); err != nil {
			d.errs[up.Name] = err
			continue
		}
		ups[up.Name] = up
	}
	for _, u := range d.order {
		if del, ok := dels[u]; ok {
			d.records = append(d.records, &metadata.RemoveUserScramCredentialRecord{Name: del.Name, Mechanism: del.Mechanism})
		}
	}
	for _, u := range d.order {
		up, ok := ups[u]
		if !ok {
			continue
		}
		cred := security.ScramMechanism(up.Mechanism).CredentialFromSalted(up.Salt, up.SaltedPassword, up.Iterations)
		d.records = append(d.records, &metadata.UserScramCredentialRecord{Name: up.Name, Mechanism: up.Mechanism,
			Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations})
	}
	return d
}

func checkScramName(name string, mechanism int8) error {
	if name == "" {
		return wire.Errorf(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if !security.ScramMechanism(mechanism).Valid() {
		return wire.Errorf(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return nil
}

func checkScramDeletion(img *metadata.Image, del kmsg.AlterUserSCRAMCredentialsRequestDeletion) error {
	if err := checkScramName(del.Name, del.Mechanism); err != nil {
		return err
	}
	if _, ok := img.ScramCredential(del.Name, del.Mechanism); !ok {
		return wire.Errorf(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
	}
	return nil
}

func checkScramUpsertion(up kmsg.AlterUserSCRAMCredentialsRequestUpsertion) error {
	if err := checkScramName(up.Name, up.Mechanism); err != nil {
		return err
	}
	switch {
	case up.Iterations < security.ScramMinIterations:
		return wire.Errorf(kerr.UnacceptableCredential, "Too few iterations")
	case up.Iterations > security.ScramMaxIterations:
		return wire.Errorf(kerr.UnacceptableCredential, "Too many iterations")
	}
	return nil
}

// scramAPIs are scram.go's rows of the API table (api.go).
func scramAPIs() []API {
	return []API{
		api(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Controller).AlterUserSCRAMCredentials,
			func(req *kmsg.AlterUserSCRAMCredentialsRequest, err error) *kmsg.AlterUserSCRAMCredentialsResponse {
				r := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
				for _, u := range scramFailed(req, err).order {
					rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
					rr.User = u
					rr.ErrorCode, rr.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
					r.Results = append(r.Results, rr)
				}
				return r
			},
			func(r *kmsg.AlterUserSCRAMCredentialsResponse) bool {
				return len(r.Results) > 0 && r.Results[0].ErrorCode == notController
			}),
	}
}
