package restproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The OpenAPI walk: a list of requests written from the API descriptions
// Confluent publishes (api/v3/openapi.yaml of kafka-rest for v3, the v2
// API reference for v2): for each path and method, the status code and
// the answer's shape: its required fields and their JSON types, its
// kind, its metadata.self and the related links it carries. The list is
// ours; the facts are the description's. Every related link met is then
// followed and must answer 200.

// Field types: a JSON type, "?" after it when null is allowed too; "rel"
// is a relationship ({"related": URL}); "meta" a resource's metadata
// ({"self": URL, "resource_name": string or null}); "list" a collection's
// metadata ({"self": URL, "next": URL or null}).
type field struct{ name, typ string }

// shapes are the answer shapes of the descriptions, by schema name; each
// lists the required fields (and a few optional ones checked when
// present, marked with a leading "~").
var shapes = map[string][]field{
	// v3 (api/v3/openapi.yaml, components/schemas).
	"ClusterData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"acls", "rel"}, {"brokers", "rel"},
		{"broker_configs", "rel"}, {"consumer_groups", "rel"}, {"topics", "rel"}, {"partition_reassignments", "rel"}, {"~controller", "rel"}},
	"BrokerData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"broker_id", "integer"}, {"configs", "rel"},
		{"partition_replicas", "rel"}, {"~host", "string?"}, {"~port", "integer?"}, {"~rack", "string?"}},
	"BrokerConfigData":  append(configFields(), field{"broker_id", "integer"}),
	"ClusterConfigData": append(configFields(), field{"config_type", "string"}),
	"TopicConfigData":   append(configFields(), field{"topic_name", "string"}),
	"TopicData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"topic_name", "string"}, {"is_internal", "boolean"},
		{"replication_factor", "integer"}, {"partitions_count", "integer"}, {"partitions", "rel"}, {"configs", "rel"},
		{"partition_reassignments", "rel"}, {"~authorized_operations", "array"}},
	"PartitionData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"topic_name", "string"},
		{"partition_id", "integer"}, {"replicas", "rel"}, {"reassignment", "rel"}, {"~leader", "rel"}},
	"PartitionWithOffsetsData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"topic_name", "string"},
		{"partition_id", "integer"}, {"earliest_offset", "integer"}, {"latest_offset", "integer"}},
	"ReplicaData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"topic_name", "string"}, {"partition_id", "integer"},
		{"broker_id", "integer"}, {"is_leader", "boolean"}, {"is_in_sync", "boolean"}, {"broker", "rel"}},
	"ReassignmentData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"topic_name", "string"},
		{"partition_id", "integer"}, {"adding_replicas", "array"}, {"removing_replicas", "array"}, {"replicas", "rel"}},
	"ConsumerGroupData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"consumer_group_id", "string"},
		{"is_simple", "boolean"}, {"partition_assignor", "string"}, {"state", "string"}, {"type", "string"},
		{"is_mixed_consumer_group", "boolean"}, {"coordinator", "rel"}, {"consumers", "rel"}, {"lag_summary", "rel"}},
	"ConsumerData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"consumer_group_id", "string"},
		{"consumer_id", "string"}, {"~instance_id", "string?"}, {"client_id", "string"}, {"assignments", "rel"}},
	"ConsumerAssignmentData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"consumer_group_id", "string"},
		{"consumer_id", "string"}, {"topic_name", "string"}, {"partition_id", "integer"}, {"partition", "rel"}, {"lag", "rel"}},
	"ConsumerLagData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"consumer_group_id", "string"},
		{"topic_name", "string"}, {"partition_id", "integer"}, {"current_offset", "integer"}, {"log_end_offset", "integer"},
		{"lag", "integer"}, {"consumer_id", "string"}, {"~instance_id", "string?"}, {"client_id", "string"}},
	"ConsumerGroupLagSummaryData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"consumer_group_id", "string"},
		{"max_lag_consumer_id", "string"}, {"~max_lag_instance_id", "string?"}, {"max_lag_client_id", "string"},
		{"max_lag_topic_name", "string"}, {"max_lag_partition_id", "integer"}, {"max_lag", "integer"}, {"total_lag", "integer"},
		{"max_lag_consumer", "rel"}, {"max_lag_partition", "rel"}},
	"AclData": {{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"resource_type", "string"},
		{"resource_name", "string"}, {"pattern_type", "string"}, {"principal", "string"}, {"host", "string"},
		{"operation", "string"}, {"permission", "string"}},
	"DeleteAclsResponse": {{"data", "array"}},
	"ProduceResponse": {{"error_code", "integer"}, {"~cluster_id", "string"}, {"~topic_name", "string"}, {"~partition_id", "integer"},
		{"~offset", "integer"}, {"~timestamp", "string?"}, {"~key", "object?"}, {"~value", "object?"}},
	"ProduceBatchResponse": {{"successes", "array"}, {"failures", "array"}},
	"Error":                {{"error_code", "integer"}, {"message", "string?"}},

	// v2 (the v2 API reference).
	"v2Topic":      {{"name", "string"}, {"configs", "object"}, {"partitions", "array"}},
	"v2Partition":  {{"partition", "integer"}, {"leader", "integer"}, {"replicas", "array"}},
	"v2Offsets":    {{"beginning_offset", "integer"}, {"end_offset", "integer"}},
	"v2Produce":    {{"key_schema_id", "integer?"}, {"value_schema_id", "integer?"}, {"offsets", "array"}},
	"v2Brokers":    {{"brokers", "array"}},
	"v2Instance":   {{"instance_id", "string"}, {"base_uri", "string"}},
	"v2Topics":     {{"topics", "array"}},
	"v2Partitions": {{"partitions", "array"}},
	"v2Committed":  {{"offsets", "array"}},
}

// itemShapes are the shapes of the array items of some shapes.
var itemShapes = map[string]map[string]string{
	"v2Topic":            {"partitions": "v2Partition"},
	"v2Partition":        {"replicas": "v2Replica"},
	"v2Produce":          {"offsets": "v2ProduceOffset"},
	"v2Committed":        {"offsets": "v2CommittedOffset"},
	"v2Partitions":       {"partitions": "v2TopicPartition"},
	"DeleteAclsResponse": {"data": "AclData"},
}

func init() {
	shapes["v2Replica"] = []field{{"broker", "integer"}, {"leader", "boolean"}, {"in_sync", "boolean"}}
	shapes["v2ProduceOffset"] = []field{{"partition", "integer?"}, {"offset", "integer?"}, {"error_code", "integer?"}, {"error", "string?"}}
	shapes["v2CommittedOffset"] = []field{{"topic", "string"}, {"partition", "integer"}, {"offset", "integer"}, {"metadata", "string"}}
	shapes["v2TopicPartition"] = []field{{"topic", "string"}, {"partition", "integer"}}
	shapes["v2Record"] = []field{{"topic", "string"}, {"key", "string?"}, {"value", "string?"}, {"partition", "integer"}, {"offset", "integer"}}
}

func configFields() []field {
	return []field{{"kind", "string"}, {"metadata", "meta"}, {"cluster_id", "string"}, {"name", "string"}, {"value", "string?"},
		{"is_default", "boolean"}, {"is_read_only", "boolean"}, {"is_sensitive", "boolean"}, {"source", "string"}, {"synonyms", "array"}}
}

// walkCall is one request of the walk and what the description says of
// its answer.
type walkCall struct {
	method, path string // {c}: the cluster id, {m}: a group member's id
	ct, body     string
	accept       string
	status       int
	// shape of the answer ("" for none); "list:X" a collection of X,
	// "[]X" a JSON array of X.
	shape string
	kind  string // the answer's kind, or the collection items' kind
	// errorCode is the error_code of an error answer.
	errorCode int
}

// walker checks answers against shapes and collects related links.
type walker struct {
	t       *testing.T
	e       *env
	related map[string]string // link → where it was met
}

func (w *walker) fail(where, format string, args ...any) {
	w.t.Helper()
	w.t.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
}

// checkShape checks v against the named shape.
func (w *walker) checkShape(where string, v any, shape string) {
	w.t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		w.fail(where, "not an object: %v", v)
		return
	}
	for _, f := range shapes[shape] {
		name, optional := strings.CutPrefix(f.name, "~")
		val, present := obj[name]
		if !present {
			if !optional {
				w.fail(where, "%s: required field %s missing", shape, name)
			}
			continue
		}
		w.checkType(where+"."+name, val, f.typ)
		if item := itemShapes[shape][name]; item != "" {
			arr, _ := val.([]any)
			for i, x := range arr {
				w.checkShape(fmt.Sprintf("%s.%s[%d]", where, name, i), x, item)
			}
		}
	}
}

func (w *walker) checkType(where string, v any, typ string) {
	w.t.Helper()
	typ, nullable := strings.CutSuffix(typ, "?")
	if v == nil {
		if !nullable {
			w.fail(where, "null where %s is required", typ)
		}
		return
	}
	switch typ {
	case "string":
		_, ok := v.(string)
		w.want(where, ok, typ, v)
	case "integer":
		n, ok := v.(float64)
		w.want(where, ok && n == float64(int64(n)), typ, v)
	case "boolean":
		_, ok := v.(bool)
		w.want(where, ok, typ, v)
	case "array":
		_, ok := v.([]any)
		w.want(where, ok, typ, v)
	case "object":
		_, ok := v.(map[string]any)
		w.want(where, ok, typ, v)
	case "rel":
		m, _ := v.(map[string]any)
		link, ok := m["related"].(string)
		w.want(where, ok && w.absolute(link), "relationship", v)
		if ok {
			w.related[link] = where
		}
	case "meta", "list":
		m, _ := v.(map[string]any)
		self, ok := m["self"].(string)
		w.want(where, ok && w.absolute(self), typ+" with an absolute self", v)
		other := "resource_name"
		if typ == "list" {
			other = "next"
		}
		if x, present := m[other]; present && x != nil {
			_, isStr := x.(string)
			w.want(where+"."+other, isStr, "string or null", x)
		}
	default:
		w.t.Fatalf("unknown type %s", typ)
	}
}

func (w *walker) want(where string, ok bool, typ string, v any) {
	w.t.Helper()
	if !ok {
		w.fail(where, "want %s, got %v", typ, v)
	}
}

func (w *walker) absolute(u string) bool { return strings.HasPrefix(u, w.e.url+"/") }

// do runs one call and checks its answer.
func (w *walker) do(c walkCall, cluster, member string) any {
	w.t.Helper()
	path := strings.NewReplacer("{c}", cluster, "{m}", member).Replace(c.path)
	where := c.method + " " + path
	var body any
	if c.body != "" {
		body = c.body
	}
	r := w.e.do(c.method, path, c.ct, c.accept, body)
	if r.status != c.status {
		w.fail(where, "status %d, want %d: %s", r.status, c.status, r.body)
		return nil
	}
	if c.shape == "" {
		if len(strings.TrimSpace(string(r.body))) != 0 && c.status == http.StatusNoContent {
			w.fail(where, "204 with a body %q", r.body)
		}
		return nil
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		w.fail(where, "answer is not JSON: %v: %q", err, r.body)
		return nil
	}
	wantCT := v3Type
	switch {
	case strings.Contains(path, "/records?"):
		// Records are answered in the instance's embedded format.
		wantCT = "application/vnd.kafka.binary.v2+json"
	case !strings.HasPrefix(path, "/v3/"):
		wantCT = v2Type
	}
	if c.shape == "Error" {
		wantCT = "application/json"
	}
	if mediaType(r.ct) != wantCT {
		w.fail(where, "content type %q, want %q", r.ct, wantCT)
	}
	self := w.e.url + strings.SplitN(path, "?", 2)[0]
	switch {
	case strings.HasPrefix(c.shape, "list:"):
		w.checkType(where+".metadata", field2(v, "metadata"), "list")
		if got := field2(field2(v, "metadata"), "self"); got != self && !strings.HasSuffix(c.path, "/acls") {
			w.fail(where, "list self %v, want %s", got, self)
		}
		if k := field2(v, "kind"); k != c.kind+"List" {
			w.fail(where, "kind %v, want %sList", k, c.kind)
		}
		items, ok := field2(v, "data").([]any)
		if !ok {
			w.fail(where, "data is not an array: %v", field2(v, "data"))
		}
		for i, item := range items {
			iw := fmt.Sprintf("%s data[%d]", where, i)
			w.checkShape(iw, item, c.shape[len("list:"):])
			if k := field2(item, "kind"); k != c.kind {
				w.fail(iw, "kind %v, want %s", k, c.kind)
			}
		}
	case strings.HasPrefix(c.shape, "[]"):
		items, ok := v.([]any)
		if !ok {
			w.fail(where, "not an array: %v", v)
		}
		for i, item := range items {
			if c.shape == "[]string" {
				w.checkType(fmt.Sprintf("%s[%d]", where, i), item, "string")
				continue
			}
			w.checkShape(fmt.Sprintf("%s[%d]", where, i), item, c.shape[2:])
		}
	default:
		w.checkShape(where, v, c.shape)
		if c.kind != "" {
			if k := field2(v, "kind"); k != c.kind {
				w.fail(where, "kind %v, want %s", k, c.kind)
			}
			if got := field2(field2(v, "metadata"), "self"); c.method == "GET" && got != self {
				w.fail(where, "self %v, want %s", got, self)
			}
		}
		if c.errorCode != 0 && field2(v, "error_code") != float64(c.errorCode) {
			w.fail(where, "error_code %v, want %d", field2(v, "error_code"), c.errorCode)
		}
	}
	return v
}

func field2(v any, name string) any {
	m, _ := v.(map[string]any)
	return m[name]
}

// TestOpenAPIWalk walks v2 and v3 against a cluster with a topic, a live
// consumer group, an ACL and records.
func TestOpenAPIWalk(t *testing.T) {
	e := start(t, Config{}, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS")
	e.createTopic("walk", 2)
	e.createTopic("doomed", 1)
	e.produceN("walk", 3)
	// A live member of a classic group, which has consumed and committed.
	member, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.ConsumerGroup("walk-group"), kgo.ConsumeTopics("walk"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("walker"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for n := 0; n < 3; {
		fs := member.PollFetches(e.ctx)
		if e.ctx.Err() != nil {
			t.Fatal("the group member read nothing")
		}
		n += len(fs.Records())
	}
	if err := member.CommitUncommittedOffsets(e.ctx); err != nil {
		t.Fatal(err)
	}
	var clusters struct {
		Data []struct {
			ClusterID string `json:"cluster_id"`
		} `json:"data"`
	}
	e.want(e.do("GET", "/v3/clusters", "", "", nil), 200).decode(t, &clusters)
	cluster := clusters.Data[0].ClusterID
	var consumers struct {
		Data []struct {
			ConsumerID string `json:"consumer_id"`
		} `json:"data"`
	}
	e.eventually("walk-group has its member", func() bool {
		e.want(e.do("GET", "/v3/clusters/"+cluster+"/consumer-groups/walk-group/consumers", "", "", nil), 200).decode(t, &consumers)
		return len(consumers.Data) == 1
	})
	w := &walker{t: t, e: e, related: map[string]string{}}
	followed := map[string]bool{}
	for _, c := range append(slices.Clone(v3Walk), v2Walk...) {
		w.do(c, cluster, consumers.Data[0].ConsumerID)
		w.follow(followed)
	}
	if len(followed) < 30 {
		t.Errorf("only %d related links met", len(followed))
	}
}

// follow GETs every related link met and not followed yet: each must
// answer 200.
func (w *walker) follow(followed map[string]bool) {
	w.t.Helper()
	var links []string
	for l := range w.related {
		if !followed[l] {
			links = append(links, l)
			followed[l] = true
		}
	}
	sort.Strings(links)
	for _, l := range links {
		path := strings.TrimPrefix(l, w.e.url)
		r := w.e.do("GET", path, "", "", nil)
		// A partition's reassignment exists only while one runs: the
		// description answers 404 for the others.
		if strings.HasSuffix(path, "/reassignment") && !strings.Contains(path, "/-/reassignment") && r.status == 404 {
			continue
		}
		if r.status != 200 {
			w.t.Errorf("related link %s (from %s): %d %s", l, w.related[l], r.status, r.body)
		}
	}
}

const (
	c3 = "/v3/clusters/{c}"
	j  = "application/json"
)

// v3Walk follows api/v3/openapi.yaml: each path and method with the status
// and schema of its answer, and the error answers the description lists.
var v3Walk = []walkCall{
	{method: "GET", path: "/v3/clusters", status: 200, shape: "list:ClusterData", kind: "KafkaCluster"},
	{method: "GET", path: c3, status: 200, shape: "ClusterData", kind: "KafkaCluster"},
	{method: "GET", path: "/v3/clusters/no-such-cluster", status: 404, shape: "Error", errorCode: 404},
	{method: "GET", path: c3 + "/no-such-resource", status: 404, shape: "Error", errorCode: 404},
	{method: "DELETE", path: "/v3/clusters", status: 405, shape: "Error", errorCode: 405},

	{method: "GET", path: c3 + "/brokers", status: 200, shape: "list:BrokerData", kind: "KafkaBroker"},
	{method: "GET", path: c3 + "/brokers/1", status: 200, shape: "BrokerData", kind: "KafkaBroker"},
	{method: "GET", path: c3 + "/brokers/99", status: 404, shape: "Error", errorCode: 404},
	{method: "GET", path: c3 + "/brokers/1/configs", status: 200, shape: "list:BrokerConfigData", kind: "KafkaBrokerConfig"},
	{method: "GET", path: c3 + "/brokers/-/configs", status: 200, shape: "list:BrokerConfigData", kind: "KafkaBrokerConfig"},
	{method: "GET", path: c3 + "/brokers/1/configs/log.retention.ms", status: 200, shape: "BrokerConfigData", kind: "KafkaBrokerConfig"},
	{method: "PUT", path: c3 + "/brokers/1/configs/log.cleaner.threads", ct: j, body: `{"value":"2"}`, status: 204},
	{method: "POST", path: c3 + "/brokers/1/configs:alter", ct: j, body: `{"data":[{"name":"log.cleaner.threads","value":"3"}]}`, status: 204},
	{method: "DELETE", path: c3 + "/brokers/1/configs/log.cleaner.threads", status: 204},
	{method: "GET", path: c3 + "/brokers/1/partition-replicas", status: 200, shape: "list:ReplicaData", kind: "KafkaReplica"},

	{method: "PUT", path: c3 + "/broker-configs/log.cleaner.threads", ct: j, body: `{"value":"2"}`, status: 204},
	{method: "GET", path: c3 + "/broker-configs", status: 200, shape: "list:ClusterConfigData", kind: "KafkaClusterConfig"},
	{method: "GET", path: c3 + "/broker-configs/log.cleaner.threads", status: 200, shape: "ClusterConfigData", kind: "KafkaClusterConfig"},
	{method: "POST", path: c3 + "/broker-configs:alter", ct: j, body: `{"data":[{"name":"log.cleaner.threads","value":"3"}]}`, status: 204},
	{method: "DELETE", path: c3 + "/broker-configs/log.cleaner.threads", status: 204},

	{method: "GET", path: c3 + "/topics", status: 200, shape: "list:TopicData", kind: "KafkaTopic"},
	{method: "POST", path: c3 + "/topics", ct: j, body: `{"topic_name":"walk-new","partitions_count":1,"configs":[{"name":"cleanup.policy","value":"compact"}]}`,
		status: 201, shape: "TopicData", kind: "KafkaTopic"},
	{method: "POST", path: c3 + "/topics", ct: j, body: `{"topic_name":"walk","partitions_count":1}`, status: 400, shape: "Error", errorCode: 40002},
	{method: "GET", path: c3 + "/topics/walk", status: 200, shape: "TopicData", kind: "KafkaTopic"},
	{method: "GET", path: c3 + "/topics/nope", status: 404, shape: "Error", errorCode: 40403},
	{method: "PATCH", path: c3 + "/topics/walk", ct: j, body: `{"partitions_count":3}`, status: 200, shape: "TopicData", kind: "KafkaTopic"},
	{method: "PATCH", path: c3 + "/topics/walk", ct: j, body: `{"partitions_count":1}`, status: 400, shape: "Error", errorCode: 40002},
	{method: "DELETE", path: c3 + "/topics/doomed", status: 204},
	{method: "DELETE", path: c3 + "/topics/nope", status: 404, shape: "Error", errorCode: 40403},
	{method: "GET", path: c3 + "/topics/-/configs", status: 200, shape: "list:TopicConfigData", kind: "KafkaTopicConfig"},
	{method: "GET", path: c3 + "/topics/walk/configs", status: 200, shape: "list:TopicConfigData", kind: "KafkaTopicConfig"},
	{method: "GET", path: c3 + "/topics/nope/configs", status: 404, shape: "Error", errorCode: 40403},
	{method: "PUT", path: c3 + "/topics/walk/configs/retention.ms", ct: j, body: `{"value":"3600000"}`, status: 204},
	{method: "GET", path: c3 + "/topics/walk/configs/retention.ms", status: 200, shape: "TopicConfigData", kind: "KafkaTopicConfig"},
	{method: "POST", path: c3 + "/topics/walk/configs:alter", ct: j,
		body: `{"data":[{"name":"retention.ms","operation":"DELETE"},{"name":"segment.ms","value":"600000"}]}`, status: 204},
	{method: "DELETE", path: c3 + "/topics/walk/configs/segment.ms", status: 204},
	{method: "GET", path: c3 + "/topics/walk/partitions", status: 200, shape: "list:PartitionData", kind: "KafkaPartition"},
	{method: "GET", path: c3 + "/topics/walk/partitions/0", status: 200, shape: "PartitionData", kind: "KafkaPartition"},
	{method: "GET", path: c3 + "/topics/walk/partitions/99", status: 404, shape: "Error", errorCode: 40403},
	{method: "GET", path: c3 + "/topics/walk/partitions/0/offset", status: 200, shape: "PartitionWithOffsetsData", kind: "KafkaPartitionWithOffsets"},
	{method: "GET", path: c3 + "/topics/walk/partitions/0/replicas", status: 200, shape: "list:ReplicaData", kind: "KafkaReplica"},
	{method: "GET", path: c3 + "/topics/walk/partitions/0/replicas/1", status: 200, shape: "ReplicaData", kind: "KafkaReplica"},
	{method: "GET", path: c3 + "/topics/-/partitions/-/reassignment", status: 200, shape: "list:ReassignmentData", kind: "KafkaReassignment"},
	{method: "GET", path: c3 + "/topics/walk/partitions/-/reassignment", status: 200, shape: "list:ReassignmentData", kind: "KafkaReassignment"},
	{method: "GET", path: c3 + "/topics/nope/partitions/-/reassignment", status: 404, shape: "Error", errorCode: 40403},
	{method: "GET", path: c3 + "/topics/walk/partitions/0/reassignment", status: 404, shape: "Error"},

	{method: "POST", path: c3 + "/topics/walk/records", ct: j, body: `{"partition_id":1,"value":{"type":"JSON","data":{"n":1}}}`,
		status: 200, shape: "ProduceResponse"},
	{method: "POST", path: c3 + "/topics/walk/records", ct: "text/plain", body: `{}`, status: 415, shape: "Error", errorCode: 415},
	{method: "POST", path: c3 + "/topics/nope/records", ct: j, body: `{"value":{"type":"JSON","data":1}}`, status: 404, shape: "Error", errorCode: 40403},
	{method: "POST", path: c3 + "/topics/walk/records:batch", ct: j,
		body:   `{"entries":[{"id":"a","value":{"type":"STRING","data":"x"}},{"id":"b","partition_id":99,"value":{"type":"STRING","data":"y"}}]}`,
		status: 207, shape: "ProduceBatchResponse"},

	{method: "GET", path: c3 + "/consumer-groups", status: 200, shape: "list:ConsumerGroupData", kind: "KafkaConsumerGroup"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group", status: 200, shape: "ConsumerGroupData", kind: "KafkaConsumerGroup"},
	{method: "GET", path: c3 + "/consumer-groups/nope", status: 404, shape: "Error", errorCode: 404},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/consumers", status: 200, shape: "list:ConsumerData", kind: "KafkaConsumer"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/consumers/{m}", status: 200, shape: "ConsumerData", kind: "KafkaConsumer"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/consumers/{m}/assignments", status: 200, shape: "list:ConsumerAssignmentData", kind: "KafkaConsumerAssignment"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/consumers/{m}/assignments/walk/partitions/0", status: 200, shape: "ConsumerAssignmentData", kind: "KafkaConsumerAssignment"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/lags", status: 200, shape: "list:ConsumerLagData", kind: "KafkaConsumerLag"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/lags/walk/partitions/0", status: 200, shape: "ConsumerLagData", kind: "KafkaConsumerLag"},
	{method: "GET", path: c3 + "/consumer-groups/walk-group/lag-summary", status: 200, shape: "ConsumerGroupLagSummaryData", kind: "KafkaConsumerGroupLagSummary"},

	{method: "POST", path: c3 + "/acls", ct: j, status: 201,
		body: `{"resource_type":"TOPIC","resource_name":"walk","pattern_type":"LITERAL","principal":"User:alice","host":"*","operation":"READ","permission":"ALLOW"}`},
	{method: "POST", path: c3 + "/acls:batch", ct: j, status: 201,
		body: `{"data":[{"resource_type":"TOPIC","resource_name":"walk-","pattern_type":"PREFIXED","principal":"User:bob","host":"*","operation":"WRITE","permission":"ALLOW"},` +
			`{"resource_type":"GROUP","resource_name":"walk-group","pattern_type":"LITERAL","principal":"User:bob","host":"*","operation":"READ","permission":"ALLOW"}]}`},
	{method: "POST", path: c3 + "/acls", ct: j, status: 400, shape: "Error", body: `{"resource_type":"TOPIC","operation":"READ"}`},
	{method: "GET", path: c3 + "/acls?principal=User%3Abob", status: 200, shape: "list:AclData", kind: "KafkaAcl"},
	{method: "DELETE", path: c3 + "/acls?resource_type=TOPIC&principal=User%3Aalice", status: 200, shape: "DeleteAclsResponse"},
}

const v2j = "application/vnd.kafka.v2+json"

// v2Walk follows Confluent's v2 API reference.
var v2Walk = []walkCall{
	{method: "GET", path: "/topics", status: 200, shape: "[]string"},
	{method: "GET", path: "/topics/walk", status: 200, shape: "v2Topic"},
	{method: "GET", path: "/topics/nope", status: 404, shape: "Error", errorCode: 40401},
	{method: "GET", path: "/topics/walk/partitions", status: 200, shape: "[]v2Partition"},
	{method: "GET", path: "/topics/walk/partitions/0", status: 200, shape: "v2Partition"},
	{method: "GET", path: "/topics/walk/partitions/99", status: 404, shape: "Error", errorCode: 40402},
	{method: "GET", path: "/topics/walk/partitions/0/offsets", status: 200, shape: "v2Offsets"},
	{method: "POST", path: "/topics/walk", ct: "application/vnd.kafka.binary.v2+json", body: `{"records":[{"key":"aw==","value":"dg=="}]}`, status: 200, shape: "v2Produce"},
	{method: "POST", path: "/topics/walk/partitions/1", ct: "application/vnd.kafka.json.v2+json", body: `{"records":[{"value":{"a":1}}]}`, status: 200, shape: "v2Produce"},
	{method: "POST", path: "/topics/walk", ct: "application/vnd.kafka.binary.v2+json", body: `{"records":[{"value":"!!"}]}`, status: 422, shape: "Error", errorCode: 422},
	{method: "POST", path: "/topics/nope", ct: "application/vnd.kafka.binary.v2+json", body: `{"records":[{"value":"dg=="}]}`, status: 404, shape: "Error", errorCode: 40401},
	{method: "POST", path: "/topics/walk", ct: "application/json", body: `{"records":[{"value":"dg=="}]}`, status: 415, shape: "Error", errorCode: 415},
	{method: "POST", path: "/topics/walk", ct: "application/vnd.kafka.binary.v2+json", body: `{"records":[`, status: 400, shape: "Error", errorCode: 400},
	{method: "GET", path: "/brokers", status: 200, shape: "v2Brokers"},

	{method: "POST", path: "/consumers/walk-v2", ct: v2j, body: `{"name":"i1","format":"binary","auto.offset.reset":"earliest"}`, status: 200, shape: "v2Instance"},
	{method: "POST", path: "/consumers/walk-v2", ct: v2j, body: `{"name":"i1","format":"binary"}`, status: 409, shape: "Error", errorCode: 40902},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/subscription", ct: v2j, body: `{"topics":["walk"]}`, status: 204},
	{method: "GET", path: "/consumers/walk-v2/instances/i1/subscription", status: 200, shape: "v2Topics"},
	{method: "DELETE", path: "/consumers/walk-v2/instances/i1/subscription", status: 204},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/assignments", ct: v2j, body: `{"partitions":[{"topic":"walk","partition":0}]}`, status: 204},
	{method: "GET", path: "/consumers/walk-v2/instances/i1/assignments", status: 200, shape: "v2Partitions"},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/positions", ct: v2j, body: `{"offsets":[{"topic":"walk","partition":0,"offset":1}]}`, status: 204},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/positions/beginning", ct: v2j, body: `{"partitions":[{"topic":"walk","partition":0}]}`, status: 204},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/positions/end", ct: v2j, body: `{"partitions":[{"topic":"walk","partition":0}]}`, status: 204},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/positions/beginning", ct: v2j, body: `{"partitions":[{"topic":"walk","partition":0}]}`, status: 204},
	{method: "GET", path: "/consumers/walk-v2/instances/i1/records?timeout=200", status: 200, shape: "[]v2Record"},
	{method: "GET", path: "/consumers/walk-v2/instances/i1/records?timeout=200", accept: "application/vnd.kafka.json.v2+json", status: 406, shape: "Error", errorCode: 40601},
	{method: "POST", path: "/consumers/walk-v2/instances/i1/offsets", ct: v2j, body: `{"offsets":[{"topic":"walk","partition":0,"offset":0}]}`, status: 200},
	{method: "GET", path: "/consumers/walk-v2/instances/i1/offsets", ct: v2j, body: `{"partitions":[{"topic":"walk","partition":0}]}`, status: 200, shape: "v2Committed"},
	{method: "GET", path: "/consumers/walk-v2/instances/nope/subscription", status: 404, shape: "Error", errorCode: 40403},
	{method: "DELETE", path: "/consumers/walk-v2/instances/i1", status: 204},
	{method: "DELETE", path: "/consumers/walk-v2/instances/i1", status: 404, shape: "Error", errorCode: 40403},
}
