package restproxy

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (v *v3req) topicBody(td kadm.TopicDetail) map[string]any {
	path := "/topics/" + td.Topic
	rf := 0
	for _, pd := range td.Partitions {
		rf = len(pd.Replicas)
		break
	}
	return map[string]any{"kind": "KafkaTopic", "metadata": v.meta(path, "/topic="+td.Topic),
		"cluster_id": v.cluster, "topic_name": td.Topic, "is_internal": td.IsInternal,
		"replication_factor": rf, "partitions_count": len(td.Partitions),
		"partitions": v.related(path + "/partitions"), "configs": v.related(path + "/configs"),
		"partition_reassignments": v.related(path + "/partitions/-/reassignment"), "authorized_operations": []string{}}
}

func (p *Proxy) v3Topics(v *v3req) (int, any, error) {
	tds, err := p.admin(v.ctx).ListTopicsWithInternal(v.ctx)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	var data []any
	for _, td := range tds.Sorted() {
		data = append(data, v.topicBody(td))
	}
	return 200, v.list("KafkaTopicList", "/topics", data), nil
}

// v3TopicDetail is the {topic} of the path, or 404.
func (p *Proxy) v3TopicDetail(v *v3req) (kadm.TopicDetail, error) {
	td, err := p.topicDetail(v.r, v.r.PathValue("topic"))
	if err == errTopicNotFound {
		return td, errV3TopicNotFound
	}
	return td, err
}

func (p *Proxy) v3Topic(v *v3req) (int, any, error) {
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return 0, nil, err
	}
	return 200, v.topicBody(td), nil
}

func (p *Proxy) v3CreateTopic(v *v3req) (int, any, error) {
	var req struct {
		TopicName         string     `json:"topic_name"`
		PartitionsCount   *int32     `json:"partitions_count"`
		ReplicationFactor *int16     `json:"replication_factor"`
		Configs           []configOp `json:"configs"`
		ValidateOnly      bool       `json:"validate_only"`
	}
	if err := decodeBody(v.r, &req, false); err != nil {
		return 0, nil, err
	}
	if req.TopicName == "" {
		return 0, nil, errf(400, 40002, "topic_name is required")
	}
	parts, rf := int32(-1), int16(-1)
	if req.PartitionsCount != nil {
		parts = *req.PartitionsCount
	}
	if req.ReplicationFactor != nil {
		rf = *req.ReplicationFactor
	}
	configs := map[string]*string{}
	for _, c := range req.Configs {
		configs[c.Name] = c.Value
	}
	create := p.admin(v.ctx).CreateTopics
	if req.ValidateOnly {
		create = p.admin(v.ctx).ValidateCreateTopics
	}
	resp, err := create(v.ctx, parts, rf, configs, req.TopicName)
	if err != nil {
		return 0, nil, kafkaError(err)
	}
	r, err := resp.On(req.TopicName, nil)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return 0, nil, v3Error(err)
	}
	td := kadm.TopicDetail{Topic: req.TopicName, Partitions: kadm.PartitionDetails{}}
	for i := range r.NumPartitions {
		td.Partitions[i] = kadm.PartitionDetail{Topic: req.TopicName, Partition: i, Replicas: make([]int32, r.ReplicationFactor)}
	}
	return 201, v.topicBody(td), nil
}

func (p *Proxy) v3DeleteTopic(v *v3req) (int, any, error) {
	if _, err := p.v3TopicDetail(v); err != nil {
		return 0, nil, err
	}
	resp, err := p.admin(v.ctx).DeleteTopic(v.ctx, v.r.PathValue("topic"))
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return 0, nil, v3Error(err)
	}
	return 204, nil, nil
}

func (p *Proxy) topicConfigs(v *v3req) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if _, err := p.v3TopicDetail(v); err != nil {
		return nil, err
	}
	return p.describeConfigs(v.ctx, kmsg.ConfigResourceTypeTopic, v.r.PathValue("topic"))
}

func (v *v3req) topicConfigBody(c kmsg.DescribeConfigsResponseResourceConfig) map[string]any {
	t := v.r.PathValue("topic")
	return v.configBody("KafkaTopicConfig", "/topics/"+t+"/configs", "/topic="+t, map[string]any{"topic_name": t}, c)
}

func (p *Proxy) v3TopicConfigs(v *v3req) (int, any, error) {
	cs, err := p.topicConfigs(v)
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, c := range cs {
		data = append(data, v.topicConfigBody(c))
	}
	return 200, v.list("KafkaTopicConfigList", "/topics/"+v.r.PathValue("topic")+"/configs", data), nil
}

func (p *Proxy) v3TopicConfig(v *v3req) (int, any, error) {
	cs, err := p.topicConfigs(v)
	if err != nil {
		return 0, nil, err
	}
	for _, c := range cs {
		if c.Name == v.r.PathValue("name") {
			return 200, v.topicConfigBody(c), nil
		}
	}
	return 0, nil, errf(404, 404, "Config %s cannot be found for topic %s.", v.r.PathValue("name"), v.r.PathValue("topic"))
}

func (p *Proxy) v3SetTopicConfig(v *v3req) (int, any, error) {
	if _, err := p.v3TopicDetail(v); err != nil {
		return 0, nil, err
	}
	return p.setConfig(v, kmsg.ConfigResourceTypeTopic, v.r.PathValue("topic"), "SET")
}

func (p *Proxy) v3ResetTopicConfig(v *v3req) (int, any, error) {
	if _, err := p.v3TopicDetail(v); err != nil {
		return 0, nil, err
	}
	return p.setConfig(v, kmsg.ConfigResourceTypeTopic, v.r.PathValue("topic"), "DELETE")
}

// v3AlterTopicConfigs serves configs:alter: every change of the batch in
// one IncrementalAlterConfigs request.
func (p *Proxy) v3AlterTopicConfigs(v *v3req) (int, any, error) {
	var req struct {
		Data         []configOp `json:"data"`
		ValidateOnly bool       `json:"validate_only"`
	}
	if err := decodeBody(v.r, &req, false); err != nil {
		return 0, nil, err
	}
	if _, err := p.v3TopicDetail(v); err != nil {
		return 0, nil, err
	}
	if err := p.alterConfigs(v.ctx, kmsg.ConfigResourceTypeTopic, v.r.PathValue("topic"), req.Data); err != nil {
		return 0, nil, err
	}
	return 204, nil, nil
}

func (v *v3req) partitionBody(pd kadm.PartitionDetail) map[string]any {
	path := "/topics/" + pd.Topic + "/partitions/" + strconv.Itoa(int(pd.Partition))
	out := map[string]any{"kind": "KafkaPartition", "metadata": v.meta(path, "/topic="+pd.Topic+"/partition="+strconv.Itoa(int(pd.Partition))),
		"cluster_id": v.cluster, "topic_name": pd.Topic, "partition_id": pd.Partition,
		"replicas": v.related(path + "/replicas"), "reassignment": v.related(path + "/reassignment"), "leader": nil}
	if pd.Leader >= 0 {
		out["leader"] = v.related(path + "/replicas/" + strconv.Itoa(int(pd.Leader)))
	}
	return out
}

func (p *Proxy) v3Partitions(v *v3req) (int, any, error) {
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, pd := range td.Partitions.Sorted() {
		data = append(data, v.partitionBody(pd))
	}
	return 200, v.list("KafkaPartitionList", "/topics/"+td.Topic+"/partitions", data), nil
}

func (p *Proxy) v3PartitionDetail(v *v3req) (kadm.PartitionDetail, error) {
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	n, err := strconv.ParseInt(v.r.PathValue("partition"), 10, 32)
	if err != nil {
		return kadm.PartitionDetail{}, errV3Partition
	}
	pd, ok := td.Partitions[int32(n)]
	if !ok {
		return pd, errV3Partition
	}
	return pd, nil
}

func (p *Proxy) v3Partition(v *v3req) (int, any, error) {
	pd, err := p.v3PartitionDetail(v)
	if err != nil {
		return 0, nil, err
	}
	return 200, v.partitionBody(pd), nil
}

func (v *v3req) replicaBody(pd kadm.PartitionDetail, b int32) map[string]any {
	path := "/topics/" + pd.Topic + "/partitions/" + strconv.Itoa(int(pd.Partition)) + "/replicas/" + strconv.Itoa(int(b))
	inSync := false
	for _, i := range pd.ISR {
		inSync = inSync || i == b
	}
	return map[string]any{"kind": "KafkaReplica",
		"metadata":   v.meta(path, "/topic="+pd.Topic+"/partition="+strconv.Itoa(int(pd.Partition))+"/replica="+strconv.Itoa(int(b))),
		"cluster_id": v.cluster, "topic_name": pd.Topic, "partition_id": pd.Partition, "broker_id": b,
		"is_leader": b == pd.Leader, "is_in_sync": inSync, "broker": v.related("/brokers/" + strconv.Itoa(int(b)))}
}

func (p *Proxy) v3Replicas(v *v3req) (int, any, error) {
	pd, err := p.v3PartitionDetail(v)
	if err != nil {
		return 0, nil, err
	}
	var data []any
	for _, b := range pd.Replicas {
		data = append(data, v.replicaBody(pd, b))
	}
	return 200, v.list("KafkaReplicaList", "/topics/"+pd.Topic+"/partitions/"+strconv.Itoa(int(pd.Partition))+"/replicas", data), nil
}

func (p *Proxy) v3Replica(v *v3req) (int, any, error) {
	pd, err := p.v3PartitionDetail(v)
	if err != nil {
		return 0, nil, err
	}
	for _, b := range pd.Replicas {
		if strconv.Itoa(int(b)) == v.r.PathValue("broker") {
			return 200, v.replicaBody(pd, b), nil
		}
	}
	return 0, nil, errf(404, 404, "Replica %s cannot be found.", v.r.PathValue("broker"))
}
