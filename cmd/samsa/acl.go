package main

// `samsa acl`: create, list and delete ACLs (CreateAcls, DescribeAcls,
// DeleteAcls) with kafka-acls.sh's flags. Every combination of the
// principals, hosts, resources and operations given is one ACL (create)
// or one filter (list, delete), as in kafka-acls.sh.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const aclUsage = `usage: samsa acl <create|list|delete> [flags]

  create   create ACLs: --allow-principal/--deny-principal, --operation and a resource
  list     list ACLs, all or those matching the flags given
  delete   delete the ACLs matching the flags (a resource is required)

Resources: --topic, --group, --transactional-id (repeatable) and --cluster.
Run "samsa acl <subcommand> -h" for the flags of each.
`

func runACL(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return dispatch("acl", aclUsage, map[string]subcommand{
		"create": aclCreate,
		"list":   aclList,
		"delete": aclDelete,
	}, args, stdout, stderr)
}

// aclFlags are kafka-acls.sh's flags.
type aclFlags struct {
	cf                         clientFlags
	allowPrincipals, allowHost stringList
	denyPrincipals, denyHost   stringList
	principals                 stringList // list and delete: any permission
	operations                 stringList
	topics, groups, txnIDs     stringList
	cluster                    bool
	pattern                    string
}

func (a *aclFlags) register(cmd string, fs *flag.FlagSet, defaultPattern string) {
	fs.Var(&a.allowPrincipals, "allow-principal", "`principal` to allow, Type:name (User:alice, User:*); repeatable")
	fs.Var(&a.allowHost, "allow-host", "`host` the allowed principals connect from (default * on create); repeatable")
	fs.Var(&a.denyPrincipals, "deny-principal", "`principal` to deny; repeatable")
	fs.Var(&a.denyHost, "deny-host", "`host` the denied principals connect from (default * on create); repeatable")
	if cmd != "create" {
		fs.Var(&a.principals, "principal", "match ACLs of this `principal`, allowed or denied; repeatable")
	}
	fs.Var(&a.operations, "operation", "`operation`: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite; repeatable")
	fs.Var(&a.topics, "topic", "topic `name` (* for every topic); repeatable")
	fs.Var(&a.groups, "group", "consumer group `id` (* for every group); repeatable")
	fs.Var(&a.txnIDs, "transactional-id", "transactional `id` (* for every one); repeatable")
	fs.BoolVar(&a.cluster, "cluster", false, "the cluster resource")
	fs.StringVar(&a.pattern, "resource-pattern-type", defaultPattern, "`type` of the resource names: literal or prefixed (create); also any or match (list, delete)")
}

// aclResource is a resource type and name (nil: any name).
type aclResource struct {
	typ  kmsg.ACLResourceType
	name *string
}

func (a *aclFlags) resources() []aclResource {
	var out []aclResource
	for _, rs := range []struct {
		typ   kmsg.ACLResourceType
		names []string
	}{
		{kmsg.ACLResourceTypeTopic, a.topics},
		{kmsg.ACLResourceTypeGroup, a.groups},
		{kmsg.ACLResourceTypeTransactionalId, a.txnIDs},
	} {
		for _, n := range rs.names {
			out = append(out, aclResource{rs.typ, kmsg.StringPtr(n)})
		}
	}
	if a.cluster {
		out = append(out, aclResource{kmsg.ACLResourceTypeCluster, kmsg.StringPtr("kafka-cluster")})
	}
	return out
}

// parse checks the flags common to every subcommand and returns the
// operations and pattern type.
func (a *aclFlags) parse(create bool) ([]kmsg.ACLOperation, kmsg.ACLResourcePatternType, error) {
	for _, p := range slices.Concat(a.allowPrincipals, a.denyPrincipals, a.principals) {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return nil, 0, fmt.Errorf("invalid principal %q: want Type:name, e.g. User:alice", p)
		}
	}
	if len(a.allowHost) > 0 && len(a.allowPrincipals) == 0 && create {
		return nil, 0, errors.New("--allow-host needs --allow-principal")
	}
	if len(a.denyHost) > 0 && len(a.denyPrincipals) == 0 && create {
		return nil, 0, errors.New("--deny-host needs --deny-principal")
	}
	var ops []kmsg.ACLOperation
	for _, o := range a.operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op == kmsg.ACLOperationUnknown || (create && op == kmsg.ACLOperationAny) {
			return nil, 0, fmt.Errorf("invalid --operation %q: want All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs or IdempotentWrite", o)
		}
		ops = append(ops, op)
	}
	pt, err := kmsg.ParseACLResourcePatternType(a.pattern)
	valid := err == nil && (pt == kmsg.ACLResourcePatternTypeLiteral || pt == kmsg.ACLResourcePatternTypePrefixed ||
		(!create && (pt == kmsg.ACLResourcePatternTypeAny || pt == kmsg.ACLResourcePatternTypeMatch)))
	if !valid {
		want := "literal, prefixed, any or match"
		if create {
			want = "literal or prefixed"
		}
		return nil, 0, fmt.Errorf("invalid --resource-pattern-type %q: want %s", a.pattern, want)
	}
	return ops, pt, nil
}

func aclCreate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("acl create", "samsa acl create --allow-principal|--deny-principal P --operation OP (--topic T|--group G|--transactional-id X|--cluster) [flags]", stderr)
	var a aclFlags
	a.cf.register(fs)
	a.register("create", fs, "literal")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	ops, pattern, err := a.parse(true)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	resources := a.resources()
	switch {
	case len(a.allowPrincipals)+len(a.denyPrincipals) == 0:
		return usageError(fs, stderr, "give --allow-principal or --deny-principal")
	case len(ops) == 0:
		return usageError(fs, stderr, "give --operation")
	case len(resources) == 0:
		return usageError(fs, stderr, "give a resource: --topic, --group, --transactional-id or --cluster")
	}
	for _, r := range resources {
		if err := checkOperations(r.typ, ops); err != nil {
			return usageError(fs, stderr, "%v", err)
		}
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = a.creations(resources, ops, pattern)
	cl, err := a.cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := a.cf.ctx()
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fail(stderr, fmt.Errorf("create ACLs: %w", err))
	}
	if len(resp.Results) != len(req.Creations) {
		return fail(stderr, fmt.Errorf("create ACLs: %d answers to %d ACLs", len(resp.Results), len(req.Creations)))
	}
	var created []acl
	var failed error
	for i, r := range resp.Results {
		c := req.Creations[i]
		x := acl{c.Principal, c.Host, c.Operation, c.PermissionType, c.ResourceType, c.ResourceName, c.ResourcePatternType}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if failed == nil {
				failed = fmt.Errorf("create ACL %s: %w", x, kafkaErr(err, deref(r.ErrorMessage)))
			}
			continue
		}
		created = append(created, x)
	}
	if len(created) > 0 {
		fmt.Fprintf(stdout, "created %d ACLs:\n", len(created))
		printACLs(stdout, created)
	}
	if failed != nil {
		return fail(stderr, failed)
	}
	return exitOK
}

// creations are the ACLs to create: every resource, operation, principal
// and host combined; hosts default to *.
func (a *aclFlags) creations(resources []aclResource, ops []kmsg.ACLOperation, pattern kmsg.ACLResourcePatternType) []kmsg.CreateACLsRequestCreation {
	orStar := func(hosts []string) []string {
		if len(hosts) == 0 {
			return []string{"*"}
		}
		return hosts
	}
	var out []kmsg.CreateACLsRequestCreation
	for _, r := range resources {
		for _, op := range ops {
			for _, perm := range []struct {
				typ               kmsg.ACLPermissionType
				principals, hosts []string
			}{
				{kmsg.ACLPermissionTypeAllow, a.allowPrincipals, orStar(a.allowHost)},
				{kmsg.ACLPermissionTypeDeny, a.denyPrincipals, orStar(a.denyHost)},
			} {
				for _, p := range perm.principals {
					for _, h := range perm.hosts {
						c := kmsg.NewCreateACLsRequestCreation()
						c.ResourceType, c.ResourceName, c.ResourcePatternType = r.typ, *r.name, pattern
						c.Operation, c.PermissionType, c.Principal, c.Host = op, perm.typ, p, h
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// operationsOf are the operations each resource type has, as
// kafka-acls.sh checks them (AclCommand's AclEntry.supportedOperations):
// an ACL of another operation would never match a request.
var operationsOf = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationAll},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAll},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens, kmsg.ACLOperationAll},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite, kmsg.ACLOperationAll},
}

func checkOperations(typ kmsg.ACLResourceType, ops []kmsg.ACLOperation) error {
	for _, op := range ops {
		if !slices.Contains(operationsOf[typ], op) {
			var names []string
			for _, o := range operationsOf[typ] {
				names = append(names, o.String())
			}
			return fmt.Errorf("a %s ACL cannot have operation %s: want one of %s", typ, op, strings.Join(names, ", "))
		}
	}
	return nil
}

// filters are the DescribeAcls/DeleteAcls filters the flags select.
func (a *aclFlags) filters(ops []kmsg.ACLOperation, pattern kmsg.ACLResourcePatternType) []kmsg.DeleteACLsRequestFilter {
	resources := a.resources()
	if len(resources) == 0 {
		resources = []aclResource{{kmsg.ACLResourceTypeAny, nil}}
	}
	if len(ops) == 0 {
		ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
	}
	type perm struct {
		typ             kmsg.ACLPermissionType
		principal, host *string
	}
	var perms []perm
	add := func(typ kmsg.ACLPermissionType, principals, hosts []string) {
		ps, hs := []*string{nil}, []*string{nil}
		if len(principals) > 0 {
			ps = nil
			for _, p := range principals {
				ps = append(ps, kmsg.StringPtr(p))
			}
		}
		if len(hosts) > 0 {
			hs = nil
			for _, h := range hosts {
				hs = append(hs, kmsg.StringPtr(h))
			}
		}
		for _, p := range ps {
			for _, h := range hs {
				perms = append(perms, perm{typ, p, h})
			}
		}
	}
	if len(a.allowPrincipals)+len(a.allowHost) > 0 {
		add(kmsg.ACLPermissionTypeAllow, a.allowPrincipals, a.allowHost)
	}
	if len(a.denyPrincipals)+len(a.denyHost) > 0 {
		add(kmsg.ACLPermissionTypeDeny, a.denyPrincipals, a.denyHost)
	}
	if len(a.principals) > 0 || len(perms) == 0 {
		add(kmsg.ACLPermissionTypeAny, a.principals, nil)
	}
	var out []kmsg.DeleteACLsRequestFilter
	for _, r := range resources {
		for _, op := range ops {
			for _, p := range perms {
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourceName, f.ResourcePatternType = r.typ, r.name, pattern
				f.Operation, f.PermissionType, f.Principal, f.Host = op, p.typ, p.principal, p.host
				out = append(out, f)
			}
		}
	}
	return out
}

func aclList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("acl list", "samsa acl list [--topic T|--group G|--transactional-id X|--cluster] [--principal P] [--operation OP] [flags]", stderr)
	var a aclFlags
	a.cf.register(fs)
	a.register("list", fs, "any")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	ops, pattern, err := a.parse(false)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	cl, err := a.cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := a.cf.ctx()
	defer cancel()
	seen := map[acl]bool{}
	var acls []acl
	for _, f := range a.filters(ops, pattern) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = f.ResourceType, f.ResourceName, f.ResourcePatternType
		req.Operation, req.PermissionType, req.Principal, req.Host = f.Operation, f.PermissionType, f.Principal, f.Host
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fail(stderr, fmt.Errorf("list ACLs: %w", err))
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fail(stderr, fmt.Errorf("list ACLs: %w", kafkaErr(err, deref(resp.ErrorMessage))))
		}
		for _, r := range resp.Resources {
			for _, e := range r.ACLs {
				x := acl{e.Principal, e.Host, e.Operation, e.PermissionType, r.ResourceType, r.ResourceName, r.ResourcePatternType}
				if !seen[x] {
					seen[x] = true
					acls = append(acls, x)
				}
			}
		}
	}
	printACLs(stdout, acls)
	return exitOK
}

func aclDelete(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("acl delete", "samsa acl delete (--topic T|--group G|--transactional-id X|--cluster) [--allow-principal P] [--operation OP] [flags]", stderr)
	var a aclFlags
	a.cf.register(fs)
	a.register("delete", fs, "literal")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	ops, pattern, err := a.parse(false)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if len(a.resources()) == 0 {
		return usageError(fs, stderr, "give a resource: --topic, --group, --transactional-id or --cluster (\"--topic '*' --resource-pattern-type any\" matches every topic ACL)")
	}
	cl, err := a.cf.connect()
	if err != nil {
		return fail(stderr, err)
	}
	defer cl.Close()
	ctx, cancel := a.cf.ctx()
	defer cancel()
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = a.filters(ops, pattern)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fail(stderr, fmt.Errorf("delete ACLs: %w", err))
	}
	seen := map[acl]bool{}
	var deleted []acl
	var failed error
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if failed == nil {
				failed = fmt.Errorf("delete ACLs: %w", kafkaErr(err, deref(r.ErrorMessage)))
			}
			continue
		}
		for _, m := range r.MatchingACLs {
			x := acl{m.Principal, m.Host, m.Operation, m.PermissionType, m.ResourceType, m.ResourceName, m.ResourcePatternType}
			if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
				if failed == nil {
					failed = fmt.Errorf("delete ACL %s: %w", x, kafkaErr(err, deref(m.ErrorMessage)))
				}
				continue
			}
			if !seen[x] {
				seen[x] = true
				deleted = append(deleted, x)
			}
		}
	}
	if failed != nil {
		return fail(stderr, failed)
	}
	fmt.Fprintf(stdout, "deleted %d ACLs", len(deleted))
	if len(deleted) == 0 {
		fmt.Fprintln(stdout)
		return exitOK
	}
	fmt.Fprintln(stdout, ":")
	printACLs(stdout, deleted)
	return exitOK
}

// acl is one ACL as the tools print it.
type acl struct {
	principal, host string
	operation       kmsg.ACLOperation
	permission      kmsg.ACLPermissionType
	resourceType    kmsg.ACLResourceType
	name            string
	pattern         kmsg.ACLResourcePatternType
}

func (x acl) String() string {
	return fmt.Sprintf("%s %s %s from %s on %s %q (%s)", x.permission, x.principal, x.operation, x.host, x.resourceType, x.name, x.pattern)
}

// printACLs prints acls as a table sorted by resource, then principal.
func printACLs(w io.Writer, acls []acl) {
	slices.SortFunc(acls, func(a, b acl) int {
		return strings.Compare(
			fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", a.resourceType, a.name, a.pattern, a.principal, a.host, a.permission, a.operation),
			fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", b.resourceType, b.name, b.pattern, b.principal, b.host, b.permission, b.operation))
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tPERMISSION\tOPERATION")
	for _, x := range acls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.resourceType, x.name, x.pattern, x.principal, x.host, x.permission, x.operation)
	}
	tw.Flush()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
