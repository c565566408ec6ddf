package broker

// Authorization: the questions handlers ask the authorizer (Kafka's
// AuthHelper), so each handler says in one line what Kafka's KafkaApis
// checks and answers with Kafka's code where KafkaApis does.
//
// Without an authorizer (authorizer.class.name unset, Kafka's default)
// every question is answered yes and handlers behave as if there were no
// ACLs at all. With one, a principal that is not a super user is refused
// everything until the authorizer has the ACLs of a first metadata image
// (security.Authorizer.Loaded, set by the node's security.ACLPublisher):
// Kafka's StandardAuthorizer is "not ready" until its initial load, and
// never authorizes on an empty ACL set before it.
// Clients are served only once this broker is unfenced, after its image
// has caught up with its own registration, so in practice they never
// meet that state.
//
// The principal is the connection's (User:ANONYMOUS until TLS or SASL
// authenticates it), the host its remote address; a request handled
// without a connection (tests) is User:ANONYMOUS from no address.

import (
	"net"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// authz answers the authorization questions of one request.
type authz struct {
	a      *security.Authorizer // nil: authorization is off
	ready  bool
	client security.Principal
	host   netip.Addr
}

// authz returns the authorizer's view of the client on c.
func (b *Broker) authz(c *network.Conn) authz {
	z := authz{a: b.cfg.Authorizer, client: security.Anonymous}
	if z.a != nil {
		z.ready = z.a.Loaded()
	}
	if c == nil {
		return z
	}
	z.client = c.Principal()
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		z.host = ta.AddrPort().Addr()
	}
	return z
}

// on reports whether an authorizer is configured.
func (z authz) on() bool { return z.a != nil }

// allowed: may the client do op on the resource (rt, name)?
func (z authz) allowed(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if z.a == nil {
		return true
	}
	if !z.ready {
		return z.a.IsSuperUser(z.client)
	}
	return z.a.Authorize(security.Request{Principal: z.client, Host: z.host, Op: op, ResourceType: rt, Name: name})
}

// cluster: may the client do op on the cluster?
func (z authz) cluster(op kmsg.ACLOperation) bool {
	return z.allowed(op, kmsg.ACLResourceTypeCluster, security.ClusterName)
}

// topic, group and txnID ask about one resource of that type.
func (z authz) topic(op kmsg.ACLOperation, name string) bool {
	return z.allowed(op, kmsg.ACLResourceTypeTopic, name)
}

func (z authz) group(op kmsg.ACLOperation, name string) bool {
	return z.allowed(op, kmsg.ACLResourceTypeGroup, name)
}

func (z authz) txnID(op kmsg.ACLOperation, name string) bool {
	return z.allowed(op, kmsg.ACLResourceTypeTransactionalId, name)
}

// anyOfType: may the client do op on at least one resource of type rt
// (Kafka's authorizeByResourceType)?
func (z authz) anyOfType(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if z.a == nil {
		return true
	}
	if !z.ready {
		return z.a.IsSuperUser(z.client)
	}
	return z.a.AuthorizeByResourceType(z.client, z.host, op, rt)
}

// topics returns a memo of op on topics, so a request naming a topic in
// many places asks once per name (Kafka's filterByAuthorized).
func (z authz) topics(op kmsg.ACLOperation) func(name string) bool {
	if z.a == nil {
		return func(string) bool { return true }
	}
	seen := map[string]bool{}
	return func(name string) bool {
		ok, done := seen[name]
		if !done {
			ok = z.topic(op, name)
			seen[name] = ok
		}
		return ok
	}
}

// supportedOps are the operations a resource type knows, whose answers
// make up its authorized_operations (Kafka's AclEntry.supportedOperations).
var supportedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite},
}

// authorizedOps is the bit field of the operations the client may do on
// the resource: bit n set for the operation of code n (Kafka's
// AuthHelper.authorizedOperations). Without an authorizer every
// supported operation is set.
func (z authz) authorizedOps(rt kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[rt] {
		if z.allowed(op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterAuthorizedOps is what Metadata (v8-v10) and DescribeCluster
// report as cluster_authorized_operations when asked: the cluster's
// authorized operations for a client that may DESCRIBE it, 0 otherwise.
func (z authz) clusterAuthorizedOps() int32 {
	if !z.cluster(kmsg.ACLOperationDescribe) {
		return 0
	}
	return z.authorizedOps(kmsg.ACLResourceTypeCluster, security.ClusterName)
}

// opsNotRequested is the schemas' default of authorized_operations: not
// asked for.
const opsNotRequested = -2147483648

// splitTopics returns the topics of a request that allowed accepts, and
// whether any was left out; name says a topic's name.
func splitTopics[T any](topics []T, name func(T) string, allowed func(string) bool) (kept []T, cut bool) {
	for _, t := range topics {
		if allowed(name(t)) {
			kept = append(kept, t)
		} else {
			cut = true
		}
	}
	return kept, cut
}

// mergeTopics puts a response back in the request's topic order: the
// answers got to the kept topics, in order, and denied's answer for each
// topic left out.
func mergeTopics[Req, Resp any](topics []Req, name func(Req) string, allowed func(string) bool, got []Resp, denied func(Req) Resp) []Resp {
	out := make([]Resp, 0, len(topics))
	for _, t := range topics {
		switch {
		case !allowed(name(t)):
			out = append(out, denied(t))
		case len(got) > 0:
			out = append(out, got[0])
			got = got[1:]
		}
	}
	return out
}

// configResource says what a config resource is to the authorizer
// (Kafka's ConfigHelper and ControllerApis): BROKER, BROKER_LOGGER and
// CLIENT_METRICS resources are the cluster's, TOPIC and GROUP resources
// their own. It returns whether op is allowed and the code of a refusal;
// a type Kafka does not know is allowed here and refused by the handler.
func (z authz) configResource(op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) (bool, *kerr.Error) {
	switch rt {
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return z.cluster(op), kerr.ClusterAuthorizationFailed
	case kmsg.ConfigResourceTypeTopic:
		return z.topic(op, name), kerr.TopicAuthorizationFailed
	case kmsg.ConfigResourceTypeGroupConfig:
		return z.group(op, name), kerr.GroupAuthorizationFailed
	}
	return true, nil
}

// alterACLs is the refusal of CreateAcls and DeleteAcls, if any: ALTER on
// the cluster first, then SECURITY_DISABLED without an authorizer, as
// Kafka's KafkaApis answers.
func (z authz) alterACLs() error {
	switch {
	case !z.cluster(kmsg.ACLOperationAlter):
		return kerr.ClusterAuthorizationFailed
	case !z.on():
		return wire.Errorf(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	return nil
}
