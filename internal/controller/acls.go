package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// The controller's side of CreateAcls and DeleteAcls: Kafka's
// AclControlManager. Brokers authorize the client (ALTER on the cluster),
// answer SECURITY_DISABLED when no authorizer is configured and refuse
// the requests Kafka cannot parse before forwarding (internal/broker's
// 30_create_acls.go and 31_delete_acls.go); what is decided here is which
// ACLs to add and remove. DescribeAcls is answered by every broker from
// its own authorizer, never here.

// aclValidateOptions are the cluster facts ACL creation depends on.
// Samsa's metadata.version (MetadataVersion, 4.1-IV1) is below the
// 4.4-IV1 that Kafka requires for CIDR host patterns, so those are
// UNSUPPORTED_VERSION, as Kafka answers at that metadata version.
var aclValidateOptions = security.ValidateOptions{CIDRHosts: false}

// CreateAcls serves CreateAcls v1-v3 (AclControlManager.createAcls).
//
// Behavior: each creation is validated alone with Kafka's checks and
// messages (security.ValidateCreation: a CLUSTER resource named other
// than kafka-cluster, an empty name, an unknown or non-concrete type,
// pattern, operation or permission, a principal without "Type:", an empty
// host or a CIDR host are INVALID_REQUEST or UNSUPPORTED_VERSION for that
// creation only). A valid ACL that already exists — in the image or
// earlier in the same request — succeeds without a record, so an ACL is
// never stored twice. The new ACLs are written as one batch of
// AccessControlEntryRecords with fresh random ids; a request that would
// write more than MaxRecordsPerUserOp records fails whole with
// POLICY_VIOLATION, and a failed write fails every creation not refused
// alone.
func (c *Controller) CreateAcls(ctx context.Context, req *kmsg.CreateACLsRequest) *kmsg.CreateACLsResponse {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(req.Creations))
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	var recs []metadata.Record
	if err == nil {
		existing := make(map[metadata.ACL]bool, len(img.ACLs()))
		ids := make(map[metadata.Uuid]bool, len(img.ACLs()))
		for id, a := range img.ACLs() {
			existing[a], ids[id] = true, true
		}
		for i, cr := range req.Creations {
			a := creationACL(cr)
			if verr := security.ValidateCreation(a, aclValidateOptions); verr != nil {
				errs[i] = verr
				continue
			}
			m := a.Metadata()
			if existing[m] {
				continue
			}
			var id metadata.Uuid
			if id, err = c.newACLID(ids); err != nil {
				break
			}
			existing[m], ids[id] = true, true
			recs = append(recs, &metadata.AccessControlEntryRecord{ID: id, ACL: m})
		}
	}
	if err == nil {
		if err = checkUserOpSize(recs); err == nil {
			err = c.writeLocked(ctx, recs)
		}
	}
	if err != nil {
		// The operation failed as a whole (as in Kafka, where it is one
		// controller event): every creation not refused alone says why.
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	for i := range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = wire.ErrorCodeAndMessage(errs[i])
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// creationACL is the ACL a CreateAcls creation asks for.
func creationACL(cr kmsg.CreateACLsRequestCreation) security.ACL {
	return security.ACL{
		ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
		Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType,
	}
}

// newACLID returns a random id not in ids (Kafka's newAclId).
func (c *Controller) newACLID(ids map[metadata.Uuid]bool) (metadata.Uuid, error) {
	for {
		id, err := metadata.RandomUuid(c.cfg.Rand)
		if err != nil || !ids[id] {
			return id, err
		}
	}
}

// DeleteAcls serves DeleteAcls v1-v3 (AclControlManager.deleteAcls).
//
// Behavior: each filter is checked (security.Filter.Validate: a field
// Kafka does not know is INVALID_REQUEST for that filter alone) and
// matched against the ACLs of the image; its result lists every ACL it
// matched, in Kafka's order. An ACL matched by several filters is listed
// by each and removed once. All removals are written as one batch, so
// either every listed ACL is gone or, when the write fails, every filter
// not refused alone carries the error and lists nothing. A filter that would
// take the request past MaxRecordsPerUserOp removals fails alone with
// UNKNOWN_SERVER_ERROR and Kafka's message, and removes nothing.
func (c *Controller) DeleteAcls(ctx context.Context, req *kmsg.DeleteACLsRequest) *kmsg.DeleteACLsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	results := make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	for i := range results {
		results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	var recs []metadata.Record
	if err == nil {
		removed := map[metadata.Uuid]bool{}
		byACL := make(map[security.ACL]metadata.Uuid, len(img.ACLs()))
		for id, a := range img.ACLs() {
			byACL[security.ACLFromMetadata(a)] = id
		}
		set := security.NewACLSet(security.ImageACLs(img.ACLs()))
		for i, f := range req.Filters {
			filter := deleteFilter(f)
			if verr := filter.Validate(); verr != nil {
				results[i].ErrorCode, results[i].ErrorMessage = wire.ErrorCodeAndMessage(verr)
				continue
			}
			acls := set.Describe(filter)
			var fresh []metadata.Uuid
			for _, a := range acls {
				if id := byACL[a]; !removed[id] {
					fresh = append(fresh, id)
				}
			}
			if len(removed)+len(fresh) > MaxRecordsPerUserOp {
				results[i].ErrorCode, results[i].ErrorMessage = wire.ErrorCodeAndMessage(wire.Errorf(kerr.UnknownServerError,
					"Cannot remove more than %d acls in a single delete operation.", MaxRecordsPerUserOp))
				continue
			}
			for _, id := range fresh {
				removed[id] = true
				recs = append(recs, &metadata.RemoveAccessControlEntryRecord{ID: id})
			}
			for _, a := range acls {
				results[i].MatchingACLs = append(results[i].MatchingACLs, matchingACL(a))
			}
		}
		err = c.writeLocked(ctx, recs)
	}
	if err != nil {
		code, msg := wire.ErrorCodeAndMessage(err)
		for i := range results {
			if results[i].ErrorCode == 0 {
				results[i].ErrorCode, results[i].ErrorMessage, results[i].MatchingACLs = code, msg, nil
			}
		}
	}
	resp.Results = results
	return resp
}

// deleteFilter is the filter of a DeleteAcls request.
func deleteFilter(f kmsg.DeleteACLsRequestFilter) security.Filter {
	return security.Filter{
		ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
		Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType,
	}
}

func matchingACL(a security.ACL) kmsg.DeleteACLsResponseResultMatchingACL {
	m := kmsg.NewDeleteACLsResponseResultMatchingACL()
	m.ResourceType, m.ResourceName, m.ResourcePatternType = a.ResourceType, a.ResourceName, a.PatternType
	m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, a.Operation, a.Permission
	return m
}

// aclAPIs are acls.go's rows of the API table (api.go). Kafka 4 serves
// versions 1-3 of both.
func aclAPIs() []API {
	return []API{
		api(kmsg.CreateACLs, 1, 3, (*Controller).CreateAcls,
			func(req *kmsg.CreateACLsRequest, err error) *kmsg.CreateACLsResponse {
				r := req.ResponseKind().(*kmsg.CreateACLsResponse)
				for range req.Creations {
					rr := kmsg.NewCreateACLsResponseResult()
					rr.ErrorCode, rr.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
					r.Results = append(r.Results, rr)
				}
				return r
			},
			func(r *kmsg.CreateACLsResponse) bool {
				return len(r.Results) > 0 && r.Results[0].ErrorCode == notController
			}),
		api(kmsg.DeleteACLs, 1, 3, (*Controller).DeleteAcls,
			func(req *kmsg.DeleteACLsRequest, err error) *kmsg.DeleteACLsResponse {
				r := req.ResponseKind().(*kmsg.DeleteACLsResponse)
				for range req.Filters {
					rr := kmsg.NewDeleteACLsResponseResult()
					rr.ErrorCode, rr.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
					r.Results = append(r.Results, rr)
				}
				return r
			},
			func(r *kmsg.DeleteACLsResponse) bool {
				return len(r.Results) > 0 && r.Results[0].ErrorCode == notController
			}),
	}
}
