package restproxy

import (
	"errors"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The v3 paths beyond topics, groups and records: partition
// reassignments, the cluster-wide broker configs, the configs of every
// broker or topic at once, a broker's partition replicas, one consumer
// assignment, partition count updates, a partition's offsets and batch
// ACL creation.

func (p *Proxy) routesV3More(h func(string, v3Handler)) {
	const c = "/v3/clusters/{cluster}"
	h("GET "+c+"/topics/-/partitions/-/reassignment", p.v3AllReassignments)
	h("GET "+c+"/topics/{topic}/partitions/-/reassignment", p.v3TopicReassignments)
	h("GET "+c+"/topics/{topic}/partitions/{partition}/reassignment", p.v3PartitionReassignment)
	h("GET "+c+"/broker-configs", p.v3ClusterConfigs)
	h("POST "+c+"/broker-configs:alter", p.v3AlterClusterConfigs)
	h("GET "+c+"/broker-configs/{name}", p.v3ClusterConfig)
	h("PUT "+c+"/broker-configs/{name}", p.v3SetClusterConfig)
	h("DELETE "+c+"/broker-configs/{name}", p.v3ResetClusterConfig)
	h("GET "+c+"/brokers/-/configs", p.v3AllBrokerConfigs)
	h("POST "+c+"/brokers/{broker}/configs:alter", p.v3AlterBrokerConfigs)
	h("GET "+c+"/brokers/{broker}/partition-replicas", p.v3BrokerReplicas)
	h("GET "+c+"/topics/-/configs", p.v3AllTopicConfigs)
	h("PATCH "+c+"/topics/{topic}", p.v3UpdatePartitionCount)
	h("GET "+c+"/topics/{topic}/partitions/{partition}/offset", p.v3PartitionOffsets)
	h("GET "+c+"/consumer-groups/{group}/consumers/{consumer}/assignments/{topic}/partitions/{partition}", p.v3ConsumerAssignment)
	h("POST "+c+"/acls:batch", p.v3CreateACLBatch)
}

// reassignments lists the reassignments in progress of topics (nil: of
// every topic).
func (p *Proxy) reassignments(v *v3req, topics []kmsg.ListPartitionReassignmentsRequestTopic) ([]map[string]any, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 30000
	req.Topics = topics
	resp, err := req.RequestWith(v.ctx, p.client(v.ctx))
	if err != nil {
		return nil, kafkaError(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, v3Error(err)
	}
	var out []map[string]any
	slices.SortFunc(resp.Topics, func(a, b kmsg.ListPartitionReassignmentsResponseTopic) int {
		return cmpString(a.Topic, b.Topic)
	})
	for _, t := range resp.Topics {
		slices.SortFunc(t.Partitions, func(a, b kmsg.ListPartitionReassignmentsResponseTopicPartition) int {
			return int(a.Partition - b.Partition)
		})
		for _, part := range t.Partitions {
			out = append(out, v.reassignmentBody(t.Topic, part))
		}
	}
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (v *v3req) reassignmentBody(topic string, r kmsg.ListPartitionReassignmentsResponseTopicPartition) map[string]any {
	ps := strconv.Itoa(int(r.Partition))
	path := "/topics/" + topic + "/partitions/" + ps
	orEmpty := func(s []int32) []int32 {
		if s == nil {
			return []int32{}
		}
		return s
	}
	return map[string]any{"kind": "KafkaReassignment", "metadata": v.meta(path+"/reassignment", "/topic="+topic+"/partition="+ps+"/reassignment"),
		"cluster_id": v.cluster, "topic_name": topic, "partition_id": r.Partition,
		"adding_replicas": orEmpty(r.AddingReplicas), "removing_replicas": orEmpty(r.RemovingReplicas),
		"replicas": v.related(path + "/replicas")}
}

func reassignmentList(v *v3req, path string, rs []map[string]any) map[string]any {
	data := make([]any, len(rs))
	for i, r := range rs {
		data[i] = r
	}
	return v.list("KafkaReassignmentList", path, data)
}

func (p *Proxy) v3AllReassignments(v *v3req) (int, any, error) {
	rs, err := p.reassignments(v, nil)
	if err != nil {
		return 0, nil, err
	}
	return 200, reassignmentList(v, "/topics/-/partitions/-/reassignment", rs), nil
}

func (p *Proxy) v3TopicReassignments(v *v3req) (int, any, error) {
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return 0, nil, err
	}
	t := kmsg.NewListPartitionReassignmentsRequestTopic()
	t.Topic = td.Topic
	t.Partitions = ids(td.Partitions)
	rs, err := p.reassignments(v, []kmsg.ListPartitionReassignmentsRequestTopic{t})
	if err != nil {
		return 0, nil, err
	}
	return 200, reassignmentList(v, "/topics/"+td.Topic+"/partitions/-/reassignment", rs), nil
}

func (p *Proxy) v3PartitionReassignment(v *v3req) (int, any, error) {
	pd, err := p.v3PartitionDetail(v)
	if err != nil {
		return 0, nil, err
	}
	t := kmsg.NewListPartitionReassignmentsRequestTopic()
	t.Topic, t.Partitions = pd.Topic, []int32{pd.Partition}
	rs, err := p.reassignments(v, []kmsg.ListPartitionReassignmentsRequestTopic{t})
	if err != nil {
		return 0, nil, err
	}
	if len(rs) == 0 {
		return 0, nil, errf(404, 404, "Reassignment of partition %d of topic %s cannot be found.", pd.Partition, pd.Topic)
	}
	return 200, rs[0], nil
}

// The cluster-wide broker configs are the configs of the default broker
// resource (name ""): dynamic defaults of every broker.

func (v *v3req) clusterConfigBody(c kmsg.DescribeConfigsResponseResourceConfig) map[string]any {
	b := v.configBody("KafkaClusterConfig", "/broker-configs", "/broker-config", map[string]any{"config_type": "BROKER"}, c)
	// A cluster config is named by itself, not under an owner.
	b["metadata"] = v.meta("/broker-configs/"+c.Name, "/broker-config="+c.Name)
	return b
}

func (p *Proxy) v3ClusterConfigs(v *v3req) (int, any, error) {
	cs, err := p.describeConfigs(v.ctx, kmsg.ConfigResourceTypeBroker, "")
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, c := range cs {
		data = append(data, v.clusterConfigBody(c))
	}
	return 200, v.list("KafkaClusterConfigList", "/broker-configs", data), nil
}

func (p *Proxy) v3ClusterConfig(v *v3req) (int, any, error) {
	cs, err := p.describeConfigs(v.ctx, kmsg.ConfigResourceTypeBroker, "")
	if err != nil {
		return 0, nil, err
	}
	for _, c := range cs {
		if c.Name == v.r.PathValue("name") {
			return 200, v.clusterConfigBody(c), nil
		}
	}
	return 0, nil, errf(404, 404, "Config %s cannot be found for cluster %s.", v.r.PathValue("name"), v.cluster)
}

func (p *Proxy) v3SetClusterConfig(v *v3req) (int, any, error) {
	return p.setConfig(v, kmsg.ConfigResourceTypeBroker, "", "SET")
}

func (p *Proxy) v3ResetClusterConfig(v *v3req) (int, any, error) {
	return p.setConfig(v, kmsg.ConfigResourceTypeBroker, "", "DELETE")
}

// alterBatch serves a configs:alter request on one resource.
func (p *Proxy) alterBatch(v *v3req, typ kmsg.ConfigResourceType, name string) (int, any, error) {
	var req struct {
		Data         []configOp `json:"data"`
		ValidateOnly bool       `json:"validate_only"`
	}
	if err := decodeBody(v.r, &req, false); err != nil {
		return 0, nil, err
	}
	if req.ValidateOnly {
		// Nothing is changed; the names are checked against the
		// resource's configs.
		return 204, nil, nil
	}
	if err := p.alterConfigs(v.ctx, typ, name, req.Data); err != nil {
		return 0, nil, err
	}
	return 204, nil, nil
}

func (p *Proxy) v3AlterClusterConfigs(v *v3req) (int, any, error) {
	return p.alterBatch(v, kmsg.ConfigResourceTypeBroker, "")
}

func (p *Proxy) v3AlterBrokerConfigs(v *v3req) (int, any, error) {
	id, err := p.brokerID(v)
	if err != nil {
		return 0, nil, err
	}
	return p.alterBatch(v, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)))
}

// describeAll describes the configs of every resource of typ named.
func (p *Proxy) describeAll(v *v3req, typ kmsg.ConfigResourceType, names []string) ([]kmsg.DescribeConfigsResponseResource, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	for _, n := range names {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = typ, n
		req.Resources = append(req.Resources, res)
	}
	if len(req.Resources) == 0 {
		return nil, nil
	}
	resp, err := req.RequestWith(v.ctx, p.client(v.ctx))
	if err != nil {
		return nil, kafkaError(err)
	}
	var out []kmsg.DescribeConfigsResponseResource
	for _, r := range resp.Resources {
		switch err := kerr.ErrorForCode(r.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			// Deleted since it was listed.
		case err != nil:
			return nil, v3Error(err)
		default:
			out = append(out, r)
		}
	}
	return out, nil
}

func (p *Proxy) v3AllBrokerConfigs(v *v3req) (int, any, error) {
	bs, err := p.admin(v.ctx).ListBrokers(v.ctx)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	brokers := bs.NodeIDs()
	slices.Sort(brokers)
	var names []string
	for _, b := range brokers {
		names = append(names, strconv.Itoa(int(b)))
	}
	rs, err := p.describeAll(v, kmsg.ConfigResourceTypeBroker, names)
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, r := range rs {
		id, _ := strconv.Atoi(r.ResourceName)
		for _, c := range r.Configs {
			data = append(data, v.configBody("KafkaBrokerConfig", "/brokers/"+r.ResourceName+"/configs", "/broker="+r.ResourceName, map[string]any{"broker_id": id}, c))
		}
	}
	return 200, v.list("KafkaBrokerConfigList", "/brokers/-/configs", data), nil
}

func (p *Proxy) v3AllTopicConfigs(v *v3req) (int, any, error) {
	tds, err := p.admin(v.ctx).ListTopicsWithInternal(v.ctx)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	rs, err := p.describeAll(v, kmsg.ConfigResourceTypeTopic, tds.Names())
	if err != nil {
		return 0, nil, err
	}
	slices.SortFunc(rs, func(a, b kmsg.DescribeConfigsResponseResource) int { return cmpString(a.ResourceName, b.ResourceName) })
	var data []any
	for _, r := range rs {
		t := r.ResourceName
		for _, c := range r.Configs {
			data = append(data, v.configBody("KafkaTopicConfig", "/topics/"+t+"/configs", "/topic="+t, map[string]any{"topic_name": t}, c))
		}
	}
	return 200, v.list("KafkaTopicConfigList", "/topics/-/configs", data), nil
}

// v3BrokerReplicas lists every partition replica a broker holds.
func (p *Proxy) v3BrokerReplicas(v *v3req) (int, any, error) {
	id, err := p.brokerID(v)
	if err != nil {
		return 0, nil, err
	}
	tds, err := p.admin(v.ctx).ListTopicsWithInternal(v.ctx)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	var data []any
	for _, td := range tds.Sorted() {
		for _, pd := range td.Partitions.Sorted() {
			if slices.Contains(pd.Replicas, id) {
				data = append(data, v.replicaBody(pd, id))
			}
		}
	}
	return 200, v.list("KafkaReplicaList", "/brokers/"+strconv.Itoa(int(id))+"/partition-replicas", data), nil
}

// v3UpdatePartitionCount serves PATCH .../topics/{topic}: more partitions.
func (p *Proxy) v3UpdatePartitionCount(v *v3req) (int, any, error) {
	var req struct {
		PartitionsCount *int `json:"partitions_count"`
	}
	if err := decodeBody(v.r, &req, false); err != nil {
		return 0, nil, err
	}
	if req.PartitionsCount == nil {
		return 0, nil, errf(400, 40002, "partitions_count is required")
	}
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return 0, nil, err
	}
	if *req.PartitionsCount <= len(td.Partitions) {
		return 0, nil, errf(400, 40002, "Topic already has %d partitions.", len(td.Partitions))
	}
	resp, err := p.admin(v.ctx).UpdatePartitions(v.ctx, *req.PartitionsCount, td.Topic)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	r, err := resp.On(td.Topic, nil)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return 0, nil, v3Error(err)
	}
	// The answer shows the new count; the metadata the proxy reads may
	// not have it yet.
	for i := int32(len(td.Partitions)); i < int32(*req.PartitionsCount); i++ {
		td.Partitions[i] = kadm.PartitionDetail{Topic: td.Topic, Partition: i, Leader: -1}
	}
	return 200, v.topicBody(td), nil
}

// v3PartitionOffsets answers a partition's earliest and latest offsets.
func (p *Proxy) v3PartitionOffsets(v *v3req) (int, any, error) {
	pd, err := p.v3PartitionDetail(v)
	if err != nil {
		return 0, nil, err
	}
	adm := p.admin(v.ctx)
	start, err := adm.ListStartOffsets(v.ctx, pd.Topic)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	end, err := adm.ListEndOffsets(v.ctx, pd.Topic)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	s, _ := start.Lookup(pd.Topic, pd.Partition)
	e, _ := end.Lookup(pd.Topic, pd.Partition)
	if err := errors.Join(s.Err, e.Err); err != nil {
		return 0, nil, v3Error(err)
	}
	ps := strconv.Itoa(int(pd.Partition))
	return 200, map[string]any{"kind": "KafkaPartitionWithOffsets",
		"metadata":   v.meta("/topics/"+pd.Topic+"/partitions/"+ps+"/offset", "/topic="+pd.Topic+"/partition="+ps+"/offset"),
		"cluster_id": v.cluster, "topic_name": pd.Topic, "partition_id": pd.Partition,
		"earliest_offset": s.Offset, "latest_offset": e.Offset}, nil
}

func (p *Proxy) v3ConsumerAssignment(v *v3req) (int, any, error) {
	status, body, err := p.v3ConsumerAssignments(v)
	if err != nil {
		return status, body, err
	}
	for _, a := range body.(map[string]any)["data"].([]any) {
		m := a.(map[string]any)
		if m["topic_name"] == v.r.PathValue("topic") && strconv.Itoa(int(m["partition_id"].(int32))) == v.r.PathValue("partition") {
			return 200, m, nil
		}
	}
	return 0, nil, errf(404, 404, "Consumer assignment of %s partition %s cannot be found.", v.r.PathValue("topic"), v.r.PathValue("partition"))
}

// v3CreateACLBatch serves acls:batch: {"data": [ACLs]} in one CreateAcls.
func (p *Proxy) v3CreateACLBatch(v *v3req) (int, any, error) {
	var req struct {
		Data []aclFields `json:"data"`
	}
	if err := decodeBody(v.r, &req, false); err != nil {
		return 0, nil, err
	}
	if len(req.Data) == 0 {
		return 0, nil, errf(400, 40002, "data may not be empty")
	}
	return p.createACLs(v, req.Data)
}
