package restproxy

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (v *v3req) groupBody(g kadm.DescribedGroup) map[string]any {
	path := "/consumer-groups/" + g.Group
	return map[string]any{"kind": "KafkaConsumerGroup", "metadata": v.meta(path, "/consumer-group="+g.Group),
		"cluster_id": v.cluster, "consumer_group_id": g.Group, "is_simple": g.ProtocolType == "",
		"partition_assignor": g.Protocol, "state": strings.ToUpper(g.State),
		// Groups are described with the classic DescribeGroups.
		"type": "CLASSIC", "is_mixed_consumer_group": false,
		"coordinator": v.related("/brokers/" + strconv.Itoa(int(g.Coordinator.NodeID))),
		"consumers":   v.related(path + "/consumers"), "lag_summary": v.related(path + "/lag-summary")}
}

func (p *Proxy) v3Groups(v *v3req) (int, any, error) {
	listed, err := p.admin(v.ctx).ListGroups(v.ctx)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	var names []string
	for _, g := range listed.Sorted() {
		if g.ProtocolType == "consumer" || g.ProtocolType == "" {
			names = append(names, g.Group)
		}
	}
	var data []any
	if len(names) > 0 {
		dg, err := p.admin(v.ctx).DescribeGroups(v.ctx, names...)
		if err != nil && len(dg) == 0 {
			return 0, nil, kafkaError(err)
		}
		for _, g := range dg.Sorted() {
			if g.Err == nil {
				data = append(data, v.groupBody(g))
			}
		}
	}
	return 200, v.list("KafkaConsumerGroupList", "/consumer-groups", data), nil
}

// describeGroup is the {group} of the path, or 404.
func (p *Proxy) describeGroup(v *v3req) (kadm.DescribedGroup, error) {
	name := v.r.PathValue("group")
	dg, err := p.admin(v.ctx).DescribeGroups(v.ctx, name)
	if err != nil && len(dg) == 0 {
		return kadm.DescribedGroup{}, kafkaError(err)
	}
	g, ok := dg[name]
	if !ok || errors.Is(g.Err, kerr.GroupIDNotFound) || (g.Err == nil && g.State == "Dead") {
		return g, errf(404, 404, "Consumer group %s cannot be found.", name)
	}
	if g.Err != nil {
		return g, v3Error(g.Err)
	}
	return g, nil
}

func (p *Proxy) v3Group(v *v3req) (int, any, error) {
	g, err := p.describeGroup(v)
	if err != nil {
		return 0, nil, err
	}
	return 200, v.groupBody(g), nil
}

func (v *v3req) consumerBody(g string, m kadm.DescribedGroupMember) map[string]any {
	path := "/consumer-groups/" + g + "/consumers/" + m.MemberID
	return map[string]any{"kind": "KafkaConsumer", "metadata": v.meta(path, "/consumer-group="+g+"/consumer="+m.MemberID),
		"cluster_id": v.cluster, "consumer_group_id": g, "consumer_id": m.MemberID, "instance_id": m.InstanceID,
		"client_id": m.ClientID, "assignments": v.related(path + "/assignments")}
}

func (p *Proxy) v3GroupConsumers(v *v3req) (int, any, error) {
	g, err := p.describeGroup(v)
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, m := range g.Members {
		data = append(data, v.consumerBody(g.Group, m))
	}
	return 200, v.list("KafkaConsumerList", "/consumer-groups/"+g.Group+"/consumers", data), nil
}

func (p *Proxy) v3GroupConsumer(v *v3req) (int, any, error) {
	g, err := p.describeGroup(v)
	if err != nil {
		return 0, nil, err
	}
	for _, m := range g.Members {
		if m.MemberID == v.r.PathValue("consumer") {
			return 200, v.consumerBody(g.Group, m), nil
		}
	}
	return 0, nil, errf(404, 404, "Consumer %s cannot be found.", v.r.PathValue("consumer"))
}

// groupLags are a group's lags, by topic and partition.
func (p *Proxy) groupLags(v *v3req) (string, []kadm.GroupMemberLag, error) {
	if _, err := p.describeGroup(v); err != nil {
		return "", nil, err
	}
	name := v.r.PathValue("group")
	lags, err := p.admin(v.ctx).Lag(v.ctx, name)
	if err != nil {
		return "", nil, kafkaError(err)
	}
	l := lags[name]
	if err := l.Error(); err != nil {
		return "", nil, v3Error(err)
	}
	return name, l.Lag.Sorted(), nil
}

func (v *v3req) lagBody(g string, l kadm.GroupMemberLag) map[string]any {
	path := "/consumer-groups/" + g + "/lags/" + l.Topic + "/partitions/" + strconv.Itoa(int(l.Partition))
	m := map[string]any{"kind": "KafkaConsumerLag", "metadata": v.meta(path, "/consumer-group="+g+"/lag="+l.Topic+"/partition="+strconv.Itoa(int(l.Partition))),
		"cluster_id": v.cluster, "consumer_group_id": g, "topic_name": l.Topic, "partition_id": l.Partition,
		"current_offset": l.Commit.At, "log_end_offset": l.End.Offset, "lag": l.Lag,
		"consumer_id": "", "instance_id": nil, "client_id": ""}
	if l.Member != nil {
		m["consumer_id"], m["instance_id"], m["client_id"] = l.Member.MemberID, l.Member.InstanceID, l.Member.ClientID
	}
	return m
}

func (p *Proxy) v3GroupLags(v *v3req) (int, any, error) {
	g, lags, err := p.groupLags(v)
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, l := range lags {
		data = append(data, v.lagBody(g, l))
	}
	return 200, v.list("KafkaConsumerLagList", "/consumer-groups/"+g+"/lags", data), nil
}

func (p *Proxy) v3GroupLag(v *v3req) (int, any, error) {
	g, lags, err := p.groupLags(v)
	if err != nil {
		return 0, nil, err
	}
	for _, l := range lags {
		if l.Topic == v.r.PathValue("topic") && strconv.Itoa(int(l.Partition)) == v.r.PathValue("partition") {
			return 200, v.lagBody(g, l), nil
		}
	}
	return 0, nil, errf(404, 404, "Consumer lag of %s partition %s cannot be found.", v.r.PathValue("topic"), v.r.PathValue("partition"))
}

// v3ConsumerAssignments lists the partitions a group member is assigned.
func (p *Proxy) v3ConsumerAssignments(v *v3req) (int, any, error) {
	g, err := p.describeGroup(v)
	if err != nil {
		return 0, nil, err
	}
	for _, m := range g.Members {
		if m.MemberID != v.r.PathValue("consumer") {
			continue
		}
		path := "/consumer-groups/" + g.Group + "/consumers/" + m.MemberID + "/assignments"
		var data []any
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				for _, part := range t.Partitions {
					ps := strconv.Itoa(int(part))
					data = append(data, map[string]any{"kind": "KafkaConsumerAssignment",
						"metadata":   v.meta(path+"/"+t.Topic+"/partitions/"+ps, "/consumer-group="+g.Group+"/consumer="+m.MemberID+"/assignment="+t.Topic+"/partition="+ps),
						"cluster_id": v.cluster, "consumer_group_id": g.Group, "consumer_id": m.MemberID,
						"topic_name": t.Topic, "partition_id": part,
						"partition": v.related("/topics/" + t.Topic + "/partitions/" + ps),
						"lag":       v.related("/consumer-groups/" + g.Group + "/lags/" + t.Topic + "/partitions/" + ps)})
				}
			}
		}
		return 200, v.list("KafkaConsumerAssignmentList", path, data), nil
	}
	return 0, nil, errf(404, 404, "Consumer %s cannot be found.", v.r.PathValue("consumer"))
}

func (p *Proxy) v3GroupLagSummary(v *v3req) (int, any, error) {
	g, lags, err := p.groupLags(v)
	if err != nil {
		return 0, nil, err
	}
	path := "/consumer-groups/" + g + "/lag-summary"
	out := map[string]any{"kind": "KafkaConsumerGroupLagSummary", "metadata": v.meta(path, "/consumer-group="+g+"/lag-summary"),
		"cluster_id": v.cluster, "consumer_group_id": g, "max_lag_consumer_id": "", "max_lag_instance_id": nil,
		"max_lag_client_id": "", "max_lag_topic_name": "", "max_lag_partition_id": 0, "max_lag": 0, "total_lag": 0,
		"max_lag_consumer": v.related("/consumer-groups/" + g + "/consumers/"), "max_lag_partition": v.related("/topics/")}
	var total int64
	var max *kadm.GroupMemberLag
	for i, l := range lags {
		if l.Lag > 0 {
			total += l.Lag
		}
		if max == nil || l.Lag > max.Lag {
			max = &lags[i]
		}
	}
	out["total_lag"] = total
	if max != nil {
		out["max_lag"], out["max_lag_topic_name"], out["max_lag_partition_id"] = max.Lag, max.Topic, max.Partition
		out["max_lag_partition"] = v.related("/topics/" + max.Topic + "/partitions/" + strconv.Itoa(int(max.Partition)))
		if max.Member != nil {
			out["max_lag_consumer_id"], out["max_lag_instance_id"], out["max_lag_client_id"] = max.Member.MemberID, max.Member.InstanceID, max.Member.ClientID
			out["max_lag_consumer"] = v.related("/consumer-groups/" + g + "/consumers/" + max.Member.MemberID)
		}
	}
	return 200, out, nil
}

// aclFields are an ACL or an ACL filter as Confluent's v3 names them.
type aclFields struct {
	ResourceType string  `json:"resource_type"`
	ResourceName *string `json:"resource_name"`
	PatternType  string  `json:"pattern_type"`
	Principal    *string `json:"principal"`
	Host         *string `json:"host"`
	Operation    string  `json:"operation"`
	Permission   string  `json:"permission"`
}

// parsed returns the Kafka enums of the fields; empty means ANY (a
// filter) or, for pattern_type, LITERAL when creating.
func (a aclFields) parsed(create bool) (rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType, err error) {
	or := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	dflt := "ANY"
	if create {
		dflt = ""
	}
	if rt, err = kmsg.ParseACLResourceType(or(a.ResourceType, dflt)); err != nil {
		return rt, pt, op, perm, errf(400, 40002, "invalid resource_type %q", a.ResourceType)
	}
	pdflt := "ANY"
	if create {
		pdflt = "LITERAL"
	}
	if pt, err = kmsg.ParseACLResourcePatternType(or(a.PatternType, pdflt)); err != nil {
		return rt, pt, op, perm, errf(400, 40002, "invalid pattern_type %q", a.PatternType)
	}
	if op, err = kmsg.ParseACLOperation(or(a.Operation, dflt)); err != nil {
		return rt, pt, op, perm, errf(400, 40002, "invalid operation %q", a.Operation)
	}
	if perm, err = kmsg.ParseACLPermissionType(or(a.Permission, dflt)); err != nil {
		return rt, pt, op, perm, errf(400, 40002, "invalid permission %q", a.Permission)
	}
	return rt, pt, op, perm, nil
}

// aclFilter reads Confluent's query parameters.
func aclFilter(r *http.Request) aclFields {
	q := r.URL.Query()
	opt := func(k string) *string {
		if q.Has(k) {
			s := q.Get(k)
			return &s
		}
		return nil
	}
	return aclFields{ResourceType: q.Get("resource_type"), ResourceName: opt("resource_name"), PatternType: q.Get("pattern_type"),
		Principal: opt("principal"), Host: opt("host"), Operation: q.Get("operation"), Permission: q.Get("permission")}
}

func (v *v3req) aclBody(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) map[string]any {
	return map[string]any{"kind": "KafkaAcl", "metadata": map[string]any{"self": v.base + "/acls?resource_type=" + rt.String() +
		"&resource_name=" + name + "&pattern_type=" + pt.String() + "&principal=" + principal + "&host=" + host +
		"&operation=" + op.String() + "&permission=" + perm.String()},
		"cluster_id": v.cluster, "resource_type": rt.String(), "resource_name": name, "pattern_type": pt.String(),
		"principal": principal, "host": host, "operation": op.String(), "permission": perm.String()}
}

func (p *Proxy) v3ListACLs(v *v3req) (int, any, error) {
	f := aclFilter(v.r)
	rt, pt, op, perm, err := f.parsed(false)
	if err != nil {
		return 0, nil, err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = rt, f.ResourceName, pt
	req.Principal, req.Host, req.Operation, req.PermissionType = f.Principal, f.Host, op, perm
	resp, err := req.RequestWith(v.ctx, p.client(v.ctx))
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, nil, v3Error(err)
	}
	var data []any
	for _, res := range resp.Resources {
		for _, a := range res.ACLs {
			data = append(data, v.aclBody(res.ResourceType, res.ResourceName, res.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	return 200, v.list("KafkaAclList", "/acls", data), nil
}

func (p *Proxy) v3CreateACL(v *v3req) (int, any, error) {
	var a aclFields
	if err := decodeBody(v.r, &a, false); err != nil {
		return 0, nil, err
	}
	return p.createACLs(v, []aclFields{a})
}

// createACLs creates every ACL of as in one CreateAcls request.
func (p *Proxy) createACLs(v *v3req, as []aclFields) (int, any, error) {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range as {
		rt, pt, op, perm, err := a.parsed(true)
		if err != nil {
			return 0, nil, err
		}
		if a.ResourceName == nil || a.Principal == nil {
			return 0, nil, errf(400, 40002, "resource_name and principal are required")
		}
		host := "*"
		if a.Host != nil {
			host = *a.Host
		}
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, *a.ResourceName, pt
		c.Principal, c.Host, c.Operation, c.PermissionType = *a.Principal, host, op, perm
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(v.ctx, p.client(v.ctx))
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil {
				return 0, nil, errf(400, 40002, "%v: %s", err, *r.ErrorMessage)
			}
			return 0, nil, v3Error(err)
		}
	}
	return 201, nil, nil
}

func (p *Proxy) v3DeleteACLs(v *v3req) (int, any, error) {
	f := aclFilter(v.r)
	rt, pt, op, perm, err := f.parsed(false)
	if err != nil {
		return 0, nil, err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourceName, df.ResourcePatternType = rt, f.ResourceName, pt
	df.Principal, df.Host, df.Operation, df.PermissionType = f.Principal, f.Host, op, perm
	req.Filters = append(req.Filters, df)
	resp, err := req.RequestWith(v.ctx, p.client(v.ctx))
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	data := []any{}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return 0, nil, v3Error(err)
		}
		for _, a := range r.MatchingACLs {
			data = append(data, v.aclBody(a.ResourceType, a.ResourceName, a.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	return 200, map[string]any{"data": data}, nil
}
