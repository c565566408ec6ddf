package restproxy

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// v3 answers are application/json, resources as Confluent's v3 draws them:
// {"kind": ..., "metadata": {"self": ..., "resource_name": ...}, fields,
// {"related": url} links}; lists as {"kind": ...List, "metadata":
// {"self", "next": null}, "data": [...]}.
const v3Type = "application/json"

// Confluent's v3 error codes for Kafka exceptions.
var (
	errV3TopicNotFound = &apiError{404, 40403, "This server does not host this topic-partition."}
	errV3Partition     = &apiError{404, 40403, "This server does not host this topic-partition."}
)

type v3Handler func(v *v3req) (status int, body any, err error)

// v3req is one v3 request: its cluster checked and its base URL known.
type v3req struct {
	w       http.ResponseWriter
	r       *http.Request
	ctx     context.Context
	cluster string
	base    string // http://host/v3/clusters/{cluster}
}

func (v *v3req) meta(path, resource string) map[string]any {
	m := map[string]any{"self": v.base + path}
	if resource != "" {
		m["resource_name"] = "crn:///kafka=" + v.cluster + resource
	}
	return m
}

func (v *v3req) related(path string) map[string]string {
	return map[string]string{"related": v.base + path}
}

func (v *v3req) list(kind, path string, data []any) map[string]any {
	if data == nil {
		data = []any{}
	}
	return map[string]any{"kind": kind, "metadata": map[string]any{"self": v.base + path, "next": nil}, "data": data}
}

func (p *Proxy) routesV3() {
	h := func(pattern string, f v3Handler) {
		p.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if !accepts(r, v3Type) {
				writeError(w, errNotAcceptable)
				return
			}
			if (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) && mediaType(r.Header.Get("Content-Type")) != v3Type {
				writeError(w, errUnsupportedType)
				return
			}
			ctx, cancel := reqContext(r)
			defer cancel()
			v := &v3req{w: w, r: r, ctx: ctx}
			if err := p.checkCluster(v); err != nil {
				writeError(w, err)
				return
			}
			status, body, err := f(v)
			switch {
			case err != nil:
				writeError(w, err)
			case status == 0: // answered already (streaming)
			case body == nil:
				w.WriteHeader(status)
			default:
				writeJSON(w, status, v3Type, body)
			}
		})
	}
	const c = "/v3/clusters/{cluster}"
	h("GET /v3/clusters", p.v3Clusters)
	h("GET "+c, p.v3Cluster)
	h("GET "+c+"/brokers", p.v3Brokers)
	h("GET "+c+"/brokers/{broker}", p.v3Broker)
	h("GET "+c+"/brokers/{broker}/configs", p.v3BrokerConfigs)
	h("GET "+c+"/brokers/{broker}/configs/{name}", p.v3BrokerConfig)
	h("PUT "+c+"/brokers/{broker}/configs/{name}", p.v3SetBrokerConfig)
	h("DELETE "+c+"/brokers/{broker}/configs/{name}", p.v3ResetBrokerConfig)
	h("GET "+c+"/topics", p.v3Topics)
	h("POST "+c+"/topics", p.v3CreateTopic)
	h("GET "+c+"/topics/{topic}", p.v3Topic)
	h("DELETE "+c+"/topics/{topic}", p.v3DeleteTopic)
	h("GET "+c+"/topics/{topic}/configs", p.v3TopicConfigs)
	h("POST "+c+"/topics/{topic}/configs:alter", p.v3AlterTopicConfigs)
	h("GET "+c+"/topics/{topic}/configs/{name}", p.v3TopicConfig)
	h("PUT "+c+"/topics/{topic}/configs/{name}", p.v3SetTopicConfig)
	h("DELETE "+c+"/topics/{topic}/configs/{name}", p.v3ResetTopicConfig)
	h("GET "+c+"/topics/{topic}/partitions", p.v3Partitions)
	h("GET "+c+"/topics/{topic}/partitions/{partition}", p.v3Partition)
	h("GET "+c+"/topics/{topic}/partitions/{partition}/replicas", p.v3Replicas)
	h("GET "+c+"/topics/{topic}/partitions/{partition}/replicas/{broker}", p.v3Replica)
	h("POST "+c+"/topics/{topic}/records", p.v3ProduceRecords)
	h("POST "+c+"/topics/{topic}/records:batch", p.v3ProduceBatch)
	h("GET "+c+"/consumer-groups", p.v3Groups)
	h("GET "+c+"/consumer-groups/{group}", p.v3Group)
	h("GET "+c+"/consumer-groups/{group}/consumers", p.v3GroupConsumers)
	h("GET "+c+"/consumer-groups/{group}/consumers/{consumer}", p.v3GroupConsumer)
	h("GET "+c+"/consumer-groups/{group}/consumers/{consumer}/assignments", p.v3ConsumerAssignments)
	h("GET "+c+"/consumer-groups/{group}/lags", p.v3GroupLags)
	h("GET "+c+"/consumer-groups/{group}/lags/{topic}/partitions/{partition}", p.v3GroupLag)
	h("GET "+c+"/consumer-groups/{group}/lag-summary", p.v3GroupLagSummary)
	h("GET "+c+"/acls", p.v3ListACLs)
	h("POST "+c+"/acls", p.v3CreateACL)
	h("DELETE "+c+"/acls", p.v3DeleteACLs)
	p.routesV3More(h)
}

// checkCluster answers 404 for a cluster id that is not this cluster's.
func (p *Proxy) checkCluster(v *v3req) error {
	md, err := p.admin(v.ctx).BrokerMetadata(v.ctx)
	if err != nil {
		return kafkaError(err)
	}
	scheme := "http"
	if v.r.TLS != nil {
		scheme = "https"
	}
	v.cluster = md.Cluster
	v.base = scheme + "://" + v.r.Host + "/v3/clusters/" + md.Cluster
	if c := v.r.PathValue("cluster"); c != "" && c != md.Cluster {
		return errf(404, 404, "Cluster %s cannot be found.", c)
	}
	return nil
}

// v3Error maps a Kafka error to Confluent's v3 answer.
func v3Error(err error) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kafkaError(err)
	}
	switch ke {
	case kerr.UnknownTopicOrPartition:
		return errV3TopicNotFound
	case kerr.TopicAlreadyExists, kerr.InvalidPartitions, kerr.InvalidReplicationFactor, kerr.InvalidConfig,
		kerr.InvalidTopicException, kerr.InvalidRequest, kerr.PolicyViolation, kerr.InvalidReplicaAssignment:
		return errf(400, 40002, "%s", err)
	case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed:
		return errf(403, 40301, "%s", err)
	case kerr.GroupIDNotFound:
		return errf(404, 404, "Consumer group not found.")
	}
	return kafkaError(err)
}

func (p *Proxy) v3Clusters(v *v3req) (int, any, error) {
	c, err := p.cluster(v)
	if err != nil {
		return 0, nil, err
	}
	out := v.list("KafkaClusterList", "", []any{c})
	out["metadata"] = map[string]any{"self": v.base[:len(v.base)-len("/"+v.cluster)], "next": nil}
	return 200, out, nil
}

func (p *Proxy) v3Cluster(v *v3req) (int, any, error) {
	c, err := p.cluster(v)
	return 200, c, err
}

func (p *Proxy) cluster(v *v3req) (map[string]any, error) {
	md, err := p.admin(v.ctx).BrokerMetadata(v.ctx)
	if err != nil {
		return nil, kafkaError(err)
	}
	c := map[string]any{"kind": "KafkaCluster", "metadata": v.meta("", ""), "cluster_id": v.cluster,
		"acls": v.related("/acls"), "brokers": v.related("/brokers"), "broker_configs": v.related("/broker-configs"),
		"consumer_groups": v.related("/consumer-groups"), "topics": v.related("/topics"),
		"partition_reassignments": v.related("/topics/-/partitions/-/reassignment"), "controller": nil}
	if md.Controller >= 0 {
		c["controller"] = v.related("/brokers/" + strconv.Itoa(int(md.Controller)))
	}
	return c, nil
}

func (p *Proxy) brokerBody(v *v3req, id int32, host string, port int32, rack *string) map[string]any {
	path := "/brokers/" + strconv.Itoa(int(id))
	return map[string]any{"kind": "KafkaBroker", "metadata": v.meta(path, "/broker="+strconv.Itoa(int(id))),
		"cluster_id": v.cluster, "broker_id": id, "host": host, "port": port, "rack": rack,
		"configs": v.related(path + "/configs"), "partition_replicas": v.related(path + "/partition-replicas")}
}

func (p *Proxy) v3Brokers(v *v3req) (int, any, error) {
	bs, err := p.admin(v.ctx).ListBrokers(v.ctx)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	var data []any
	for _, b := range bs {
		data = append(data, p.brokerBody(v, b.NodeID, b.Host, b.Port, b.Rack))
	}
	return 200, v.list("KafkaBrokerList", "/brokers", data), nil
}

// brokerID is the {broker} of the path, or 404.
func (p *Proxy) brokerID(v *v3req) (int32, error) {
	bs, err := p.admin(v.ctx).ListBrokers(v.ctx)
	if err != nil {
		return 0, kafkaError(err)
	}
	id, err := strconv.ParseInt(v.r.PathValue("broker"), 10, 32)
	if err == nil {
		for _, b := range bs {
			if b.NodeID == int32(id) {
				return b.NodeID, nil
			}
		}
	}
	return 0, errf(404, 404, "Broker %s cannot be found.", v.r.PathValue("broker"))
}

func (p *Proxy) v3Broker(v *v3req) (int, any, error) {
	id, err := p.brokerID(v)
	if err != nil {
		return 0, nil, err
	}
	bs, _ := p.admin(v.ctx).ListBrokers(v.ctx)
	for _, b := range bs {
		if b.NodeID == id {
			return 200, p.brokerBody(v, b.NodeID, b.Host, b.Port, b.Rack), nil
		}
	}
	return 0, nil, errf(404, 404, "Broker %d cannot be found.", id)
}

// describeConfigs describes one topic's or broker's configs.
func (p *Proxy) describeConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	req.Resources = append(req.Resources, res)
	req.IncludeSynonyms = true
	resp, err := req.RequestWith(ctx, p.client(ctx))
	if err != nil {
		return nil, kafkaError(err)
	}
	if len(resp.Resources) != 1 {
		return nil, kafkaError(errors.New("DescribeConfigs answered no resource"))
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		return nil, v3Error(err)
	}
	return resp.Resources[0].Configs, nil
}

// configBody is one config as Confluent's v3 answers it; owner holds the
// owner's fields (topic_name or broker_id).
func (v *v3req) configBody(kind, path, resource string, owner map[string]any, c kmsg.DescribeConfigsResponseResourceConfig) map[string]any {
	out := map[string]any{"kind": kind, "metadata": v.meta(path+"/"+c.Name, resource+"/config="+c.Name),
		"cluster_id": v.cluster, "name": c.Name, "value": c.Value, "is_default": c.Source == kmsg.ConfigSourceDefaultConfig,
		"is_read_only": c.ReadOnly, "is_sensitive": c.IsSensitive, "source": c.Source.String()}
	for k, val := range owner {
		out[k] = val
	}
	syn := []any{}
	for _, s := range c.ConfigSynonyms {
		syn = append(syn, map[string]any{"name": s.Name, "value": s.Value, "source": s.Source.String()})
	}
	out["synonyms"] = syn
	return out
}

func (p *Proxy) brokerConfigs(v *v3req) (int32, []kmsg.DescribeConfigsResponseResourceConfig, error) {
	id, err := p.brokerID(v)
	if err != nil {
		return 0, nil, err
	}
	cs, err := p.describeConfigs(v.ctx, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)))
	return id, cs, err
}

func (p *Proxy) v3BrokerConfigs(v *v3req) (int, any, error) {
	id, cs, err := p.brokerConfigs(v)
	if err != nil {
		return 0, nil, err
	}
	path := "/brokers/" + strconv.Itoa(int(id)) + "/configs"
	var data []any
	for _, c := range cs {
		data = append(data, v.configBody("KafkaBrokerConfig", path, "/broker="+strconv.Itoa(int(id)), map[string]any{"broker_id": id}, c))
	}
	return 200, v.list("KafkaBrokerConfigList", path, data), nil
}

func (p *Proxy) v3BrokerConfig(v *v3req) (int, any, error) {
	id, cs, err := p.brokerConfigs(v)
	if err != nil {
		return 0, nil, err
	}
	path := "/brokers/" + strconv.Itoa(int(id)) + "/configs"
	for _, c := range cs {
		if c.Name == v.r.PathValue("name") {
			return 200, v.configBody("KafkaBrokerConfig", path, "/broker="+strconv.Itoa(int(id)), map[string]any{"broker_id": id}, c), nil
		}
	}
	return 0, nil, errf(404, 404, "Config %s cannot be found for broker %d.", v.r.PathValue("name"), id)
}

// alterConfigs applies incremental config changes to one resource.
func (p *Proxy) alterConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string, ops []configOp) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = o.Name, o.Value
		switch o.Operation {
		case "", "SET", "set":
			c.Op = kmsg.IncrementalAlterConfigOpSet
		case "DELETE", "delete":
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		case "APPEND", "append":
			c.Op = kmsg.IncrementalAlterConfigOpAppend
		case "SUBTRACT", "subtract":
			c.Op = kmsg.IncrementalAlterConfigOpSubtract
		default:
			return errf(400, 40002, "operation %q is not SET, DELETE, APPEND or SUBTRACT", o.Operation)
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, p.client(ctx))
	if err != nil {
		return kafkaError(err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil {
				return v3Error(errors.Join(err, errors.New(*r.ErrorMessage)))
			}
			return v3Error(err)
		}
	}
	return nil
}

type configOp struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Operation string  `json:"operation"`
}

func (p *Proxy) setConfig(v *v3req, typ kmsg.ConfigResourceType, name string, op string) (int, any, error) {
	var body struct {
		Value *string `json:"value"`
	}
	if op == "SET" {
		if err := decodeBody(v.r, &body, false); err != nil {
			return 0, nil, err
		}
	}
	if err := p.alterConfigs(v.ctx, typ, name, []configOp{{Name: v.r.PathValue("name"), Value: body.Value, Operation: op}}); err != nil {
		return 0, nil, err
	}
	return 204, nil, nil
}

func (p *Proxy) v3SetBrokerConfig(v *v3req) (int, any, error) {
	id, err := p.brokerID(v)
	if err != nil {
		return 0, nil, err
	}
	return p.setConfig(v, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)), "SET")
}

func (p *Proxy) v3ResetBrokerConfig(v *v3req) (int, any, error) {
	id, err := p.brokerID(v)
	if err != nil {
		return 0, nil, err
	}
	return p.setConfig(v, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)), "DELETE")
}

// ids sorts a set of int32s.
func ids[M ~map[int32]V, V any](m M) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
