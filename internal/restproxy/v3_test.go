package restproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type v3List struct {
	Kind     string                       `json:"kind"`
	Metadata map[string]any               `json:"metadata"`
	Data     []map[string]json.RawMessage `json:"data"`
}

func str(t *testing.T, m map[string]json.RawMessage, k string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(m[k], &s); err != nil {
		var n json.Number
		if err := json.Unmarshal(m[k], &n); err != nil {
			t.Fatalf("%s: %s", k, m[k])
		}
		return n.String()
	}
	return s
}

// TestV3Admin walks the v3 administration paths, confirming each change
// with kadm.
func TestV3Admin(t *testing.T) {
	e := start(t, Config{})
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := md.Cluster
	c := "/v3/clusters/" + id

	var clusters v3List
	e.want(e.do("GET", "/v3/clusters", "", "", nil), 200).decode(t, &clusters)
	if clusters.Kind != "KafkaClusterList" || len(clusters.Data) != 1 || str(t, clusters.Data[0], "cluster_id") != id {
		t.Fatalf("clusters %+v", clusters)
	}
	var cluster map[string]json.RawMessage
	e.want(e.do("GET", c, "", "", nil), 200).decode(t, &cluster)
	if str(t, cluster, "kind") != "KafkaCluster" || !strings.Contains(string(cluster["controller"]), c+"/brokers/1") {
		t.Errorf("cluster %s", e.do("GET", c, "", "", nil).body)
	}
	if code := e.want(e.do("GET", "/v3/clusters/nope/topics", "", "", nil), 404).errorCode(t); code != 404 {
		t.Errorf("unknown cluster: error_code %d", code)
	}
	var brokers v3List
	e.want(e.do("GET", c+"/brokers", "", "", nil), 200).decode(t, &brokers)
	if len(brokers.Data) != 1 || str(t, brokers.Data[0], "broker_id") != "1" || str(t, brokers.Data[0], "host") != "127.0.0.1" {
		t.Errorf("brokers %+v", brokers)
	}
	e.want(e.do("GET", c+"/brokers/1", "", "", nil), 200)
	e.want(e.do("GET", c+"/brokers/9", "", "", nil), 404)
	var bconfigs v3List
	e.want(e.do("GET", c+"/brokers/1/configs", "", "", nil), 200).decode(t, &bconfigs)
	if len(bconfigs.Data) < 50 {
		t.Errorf("%d broker configs", len(bconfigs.Data))
	}
	var bconf map[string]json.RawMessage
	e.want(e.do("GET", c+"/brokers/1/configs/num.io.threads", "", "", nil), 200).decode(t, &bconf)
	if str(t, bconf, "name") != "num.io.threads" || str(t, bconf, "kind") != "KafkaBrokerConfig" {
		t.Errorf("broker config %v", bconf)
	}
	e.want(e.do("PUT", c+"/brokers/1/configs/log.cleaner.threads", "application/json", "", `{"value":"2"}`), 204)
	rcs, err := e.adm.DescribeBrokerConfigs(e.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := rcs.On("1", nil); !strings.Contains(func() string {
		for _, c := range cfg.Configs {
			if c.Key == "log.cleaner.threads" && c.Value != nil {
				return *c.Value + c.Source.String()
			}
		}
		return ""
	}(), "2DYNAMIC_BROKER_CONFIG") {
		t.Errorf("log.cleaner.threads not set dynamically: %+v", cfg)
	}
	e.want(e.do("DELETE", c+"/brokers/1/configs/log.cleaner.threads", "", "", nil), 204)

	// Topics: create, list, get, configs, partitions, replicas, delete.
	r := e.want(e.do("POST", c+"/topics", "application/json", "", `{"topic_name":"t3","partitions_count":3,"replication_factor":1,"configs":[{"name":"cleanup.policy","value":"compact"}]}`), 201)
	var created map[string]json.RawMessage
	r.decode(t, &created)
	if str(t, created, "topic_name") != "t3" || str(t, created, "partitions_count") != "3" {
		t.Errorf("created %s", r.body)
	}
	tds, err := e.adm.ListTopics(e.ctx, "t3")
	if err != nil || len(tds["t3"].Partitions) != 3 {
		t.Fatalf("kadm sees %+v, %v", tds, err)
	}
	if code := e.want(e.do("POST", c+"/topics", "application/json", "", `{"topic_name":"t3","partitions_count":1}`), 400).errorCode(t); code != 40002 {
		t.Errorf("second create: error_code %d", code)
	}
	e.eventually("t3 listed", func() bool {
		var topics v3List
		e.want(e.do("GET", c+"/topics", "", "", nil), 200).decode(t, &topics)
		for _, d := range topics.Data {
			if str(t, d, "topic_name") == "t3" {
				return true
			}
		}
		return false
	})
	var topic map[string]json.RawMessage
	e.want(e.do("GET", c+"/topics/t3", "", "", nil), 200).decode(t, &topic)
	if str(t, topic, "partitions_count") != "3" || str(t, topic, "replication_factor") != "1" {
		t.Errorf("topic %v", topic)
	}
	var conf map[string]json.RawMessage
	e.want(e.do("GET", c+"/topics/t3/configs/cleanup.policy", "", "", nil), 200).decode(t, &conf)
	if str(t, conf, "value") != "compact" || str(t, conf, "source") != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("cleanup.policy %v", conf)
	}
	var confs v3List
	e.want(e.do("GET", c+"/topics/t3/configs", "", "", nil), 200).decode(t, &confs)
	if len(confs.Data) < 20 {
		t.Errorf("%d topic configs", len(confs.Data))
	}
	e.want(e.do("PUT", c+"/topics/t3/configs/retention.ms", "application/json", "", `{"value":"60000"}`), 204)
	e.want(e.do("POST", c+"/topics/t3/configs:alter", "application/json", "", `{"data":[{"name":"segment.ms","value":"120000"},{"name":"cleanup.policy","operation":"DELETE"}]}`), 204)
	e.want(e.do("DELETE", c+"/topics/t3/configs/retention.ms", "", "", nil), 204)
	e.want(e.do("PUT", c+"/topics/t3/configs/max.message.bytes", "application/json", "", `{"value":"2000000"}`), 204)
	trc, err := e.adm.DescribeTopicConfigs(e.ctx, "t3")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	rc, _ := trc.On("t3", nil)
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			got[c.Key] = *c.Value
		}
	}
	if len(got) != 2 || got["segment.ms"] != "120000" || got["max.message.bytes"] != "2000000" {
		t.Errorf("dynamic topic configs after the changes: %v", got)
	}
	var parts v3List
	e.want(e.do("GET", c+"/topics/t3/partitions", "", "", nil), 200).decode(t, &parts)
	if len(parts.Data) != 3 || str(t, parts.Data[2], "partition_id") != "2" {
		t.Errorf("partitions %+v", parts)
	}
	e.want(e.do("GET", c+"/topics/t3/partitions/1", "", "", nil), 200)
	if code := e.want(e.do("GET", c+"/topics/t3/partitions/3", "", "", nil), 404).errorCode(t); code != 40403 {
		t.Errorf("partition 3: error_code %d", code)
	}
	var reps v3List
	e.want(e.do("GET", c+"/topics/t3/partitions/1/replicas", "", "", nil), 200).decode(t, &reps)
	if len(reps.Data) != 1 || string(reps.Data[0]["is_leader"]) != "true" || string(reps.Data[0]["is_in_sync"]) != "true" {
		t.Errorf("replicas %+v", reps)
	}
	e.want(e.do("GET", c+"/topics/t3/partitions/1/replicas/1", "", "", nil), 200)
	e.want(e.do("DELETE", c+"/topics/t3", "", "", nil), 204)
	e.eventually("t3 gone", func() bool { return e.do("GET", c+"/topics/t3", "", "", nil).status == 404 })
	if code := e.want(e.do("GET", c+"/topics/t3", "", "", nil), 404).errorCode(t); code != 40403 {
		t.Errorf("deleted topic: error_code %d", code)
	}
	e.eventually("kadm sees t3 deleted", func() bool {
		tds, err := e.adm.ListTopics(e.ctx, "t3")
		return err == nil && (!tds.Has("t3") || tds["t3"].Err != nil)
	})
	if code := e.want(e.do("POST", c+"/topics", "text/plain", "", `{}`), 415).errorCode(t); code != 415 {
		t.Errorf("text/plain: error_code %d", code)
	}
	if code := e.want(e.do("POST", c+"/topics", "application/json", "", `{"topic_name":`), 400).errorCode(t); code != 400 {
		t.Errorf("malformed: error_code %d", code)
	}
}

// TestV3GroupsAndACLs: a franz-go group's members and lags, and ACLs
// created and deleted over HTTP as kadm sees them.
func TestV3GroupsAndACLs(t *testing.T) {
	e := start(t, Config{}, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "allow.everyone.if.no.acl.found=true")
	md, _ := e.adm.BrokerMetadata(e.ctx)
	c := "/v3/clusters/" + md.Cluster
	e.createTopic("lagging", 2)
	e.produceN("lagging", 5)
	if err := e.adm.CommitAllOffsets(e.ctx, "g3", kadm.OffsetsFromRecords(kgo.Record{Topic: "lagging", Partition: 0, Offset: 1})); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.ConsumerGroup("g3"), kgo.ConsumeTopics("lagging"), kgo.ClientID("lagger"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var members int
	for members == 0 {
		pctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		cl.PollRecords(pctx, 1)
		cancel()
		var g map[string]json.RawMessage
		r := e.do("GET", c+"/consumer-groups/g3", "", "", nil)
		if r.status == 200 {
			r.decode(t, &g)
			if str(t, g, "state") == "STABLE" {
				var cs v3List
				e.want(e.do("GET", c+"/consumer-groups/g3/consumers", "", "", nil), 200).decode(t, &cs)
				members = len(cs.Data)
				if members == 1 && str(t, cs.Data[0], "client_id") != "lagger" {
					t.Errorf("consumer %v", cs.Data[0])
				}
			}
		}
		if e.ctx.Err() != nil {
			t.Fatal("the group never became stable with a member")
		}
	}
	var cs v3List
	e.want(e.do("GET", c+"/consumer-groups/g3/consumers", "", "", nil), 200).decode(t, &cs)
	member := str(t, cs.Data[0], "consumer_id")
	var asg v3List
	e.want(e.do("GET", c+"/consumer-groups/g3/consumers/"+member+"/assignments", "", "", nil), 200).decode(t, &asg)
	if len(asg.Data) != 2 || str(t, asg.Data[0], "topic_name") != "lagging" {
		t.Errorf("assignments %+v", asg)
	}
	var one map[string]json.RawMessage
	e.want(e.do("GET", c+"/consumer-groups/g3/lags/lagging/partitions/0", "", "", nil), 200).decode(t, &one)
	if str(t, one, "lag") != "3" || str(t, one, "consumer_id") != member {
		t.Errorf("lag of partition 0: %v", one)
	}
	var groups v3List
	e.want(e.do("GET", c+"/consumer-groups", "", "", nil), 200).decode(t, &groups)
	if len(groups.Data) != 1 || str(t, groups.Data[0], "consumer_group_id") != "g3" {
		t.Errorf("groups %+v", groups)
	}
	var lags v3List
	e.want(e.do("GET", c+"/consumer-groups/g3/lags", "", "", nil), 200).decode(t, &lags)
	var lag0 map[string]json.RawMessage
	for _, l := range lags.Data {
		if str(t, l, "partition_id") == "0" {
			lag0 = l
		}
	}
	if lag0 == nil || str(t, lag0, "current_offset") != "2" || str(t, lag0, "log_end_offset") != "5" || str(t, lag0, "lag") != "3" {
		t.Errorf("lags %+v", lags)
	}
	var sum map[string]json.RawMessage
	e.want(e.do("GET", c+"/consumer-groups/g3/lag-summary", "", "", nil), 200).decode(t, &sum)
	if str(t, sum, "max_lag") != "3" || str(t, sum, "total_lag") != "3" || str(t, sum, "max_lag_topic_name") != "lagging" {
		t.Errorf("lag summary %v", sum)
	}
	e.want(e.do("GET", c+"/consumer-groups/nope", "", "", nil), 404)

	e.want(e.do("POST", c+"/acls", "application/json", "", `{"resource_type":"TOPIC","resource_name":"lagging","pattern_type":"LITERAL","principal":"User:alice","host":"*","operation":"READ","permission":"ALLOW"}`), 201)
	e.want(e.do("POST", c+"/acls", "application/json", "", `{"resource_type":"GROUP","resource_name":"g","pattern_type":"PREFIXED","principal":"User:bob","host":"*","operation":"ALL","permission":"DENY"}`), 201)
	e.eventually("kadm sees both ACLs", func() bool { return len(e.acls()) == 2 })
	var acls v3List
	e.want(e.do("GET", c+"/acls?resource_type=TOPIC&principal=User:alice", "", "", nil), 200).decode(t, &acls)
	if len(acls.Data) != 1 || str(t, acls.Data[0], "resource_name") != "lagging" || str(t, acls.Data[0], "operation") != "READ" || str(t, acls.Data[0], "permission") != "ALLOW" {
		t.Errorf("acls %+v", acls)
	}
	var deleted v3List
	e.want(e.do("DELETE", c+"/acls?resource_type=GROUP&pattern_type=PREFIXED", "", "", nil), 200).decode(t, &deleted)
	if len(deleted.Data) != 1 || str(t, deleted.Data[0], "principal") != "User:bob" {
		t.Errorf("deleted %+v", deleted)
	}
	e.eventually("one ACL left", func() bool {
		a := e.acls()
		return len(a) == 1 && strings.HasPrefix(a[0], "User:alice TOPIC lagging READ")
	})
	if code := e.want(e.do("GET", c+"/acls?resource_type=TABLE", "", "", nil), 400).errorCode(t); code != 40002 {
		t.Errorf("bad resource_type: error_code %d", code)
	}
}

// TestV3Records produces one record, then a stream of records on one
// connection answered report by report, and reads them with franz-go. A
// stream's records may add up to more than MaxRequestBytes; one may not.
func TestV3Records(t *testing.T) {
	e := start(t, Config{MaxRequestBytes: 1 << 20})
	md, _ := e.adm.BrokerMetadata(e.ctx)
	c := "/v3/clusters/" + md.Cluster
	e.createTopic("rec", 2)

	r := e.want(e.do("POST", c+"/topics/rec/records", "application/json", "", `{"partition_id":1,"headers":[{"name":"h","value":"`+b64("hv")+`"}],"key":{"type":"STRING","data":"k"},"value":{"type":"JSON","data":{"a":[1,2]}}}`), 200)
	var rep map[string]json.RawMessage
	r.decode(t, &rep)
	if str(t, rep, "error_code") != "200" || str(t, rep, "partition_id") != "1" || str(t, rep, "offset") != "0" || str(t, rep, "topic_name") != "rec" ||
		!strings.Contains(string(rep["value"]), `"JSON"`) || !strings.Contains(string(rep["key"]), `"size":1`) {
		t.Errorf("report %s", r.body)
	}

	// A stream: write one record, read its report, then the next, on the
	// same request.
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(e.ctx, "POST", e.url+c+"/topics/rec/records", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	respc := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(respc)
			return
		}
		respc <- resp
	}()
	send := func(s string) {
		if _, err := io.WriteString(pw, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"partition_id":0,"key":{"type":"BINARY","data":"` + b64("k0") + `"},"value":{"type":"BINARY","data":"` + b64("v0") + `"}}`)
	resp := <-respc
	if resp == nil {
		t.FailNow()
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream status %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	next := func() map[string]json.RawMessage {
		t.Helper()
		line, err := rd.ReadBytes('\n')
		if err != nil {
			t.Fatalf("report: %v (%q)", err, line)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("report %q: %v", line, err)
		}
		return m
	}
	if m := next(); str(t, m, "error_code") != "200" || str(t, m, "offset") != "0" || str(t, m, "partition_id") != "0" {
		t.Errorf("first stream report %v", m)
	}
	for i := 1; i < 4; i++ {
		send(`{"partition_id":0,"value":{"type":"STRING","data":"v` + strconv.Itoa(i) + `"}}`)
		if m := next(); str(t, m, "error_code") != "200" || str(t, m, "offset") != strconv.Itoa(i) || string(m["key"]) != "null" {
			t.Errorf("stream report %d: %v", i, m)
		}
	}
	send(`{"partition_id":0,"value":{"type":"BINARY","data":"%%%"}}`)
	if m := next(); str(t, m, "error_code") != "422" {
		t.Errorf("bad base64 in the stream: %v", m)
	}
	send(`{"partition_id":5,"value":{"data":1}}`)
	if m := next(); str(t, m, "error_code") != "404" {
		t.Errorf("partition 5 in the stream: %v", m)
	}
	send(`{"partition_id":0,"value":{"type":"JSON","data":{"last":true}}}`)
	if m := next(); str(t, m, "error_code") != "200" || str(t, m, "offset") != "4" {
		t.Errorf("last report %v", m)
	}
	pw.Close()
	if rest, _ := io.ReadAll(rd); len(bytes.TrimSpace(rest)) != 0 {
		t.Errorf("after the stream: %q", rest)
	}

	recs := e.consume("rec", 6)
	var p0 []*kgo.Record
	for _, r := range recs {
		if r.Partition == 1 {
			if string(r.Key) != "k" || string(r.Value) != `{"a":[1,2]}` || len(r.Headers) != 1 || string(r.Headers[0].Value) != "hv" {
				t.Errorf("partition 1 record %+v", r)
			}
			continue
		}
		p0 = append(p0, r)
	}
	want := []string{"v0", "v1", "v2", "v3", `{"last":true}`}
	for i, r := range p0 {
		if r.Offset != int64(i) || string(r.Value) != want[i] {
			t.Errorf("partition 0 offset %d: %q, want %q at %d", r.Offset, r.Value, want[i], i)
		}
	}
	if string(p0[0].Key) != "k0" {
		t.Errorf("first key %q", p0[0].Key)
	}

	// records:batch: successes and failures by id.
	var batch struct {
		Successes []map[string]json.RawMessage `json:"successes"`
		Failures  []map[string]json.RawMessage `json:"failures"`
	}
	e.want(e.do("POST", c+"/topics/rec/records:batch", "application/json", "", `{"entries":[{"id":"a","partition_id":1,"value":{"type":"STRING","data":"b1"}},{"id":"b","partition_id":9,"value":{"data":1}},{"id":"c","partition_id":1,"value":{"type":"STRING","data":"b2"}}]}`), 207).decode(t, &batch)
	if len(batch.Successes) != 2 || len(batch.Failures) != 1 || str(t, batch.Failures[0], "id") != "b" || str(t, batch.Failures[0], "error_code") != "404" ||
		str(t, batch.Successes[0], "id") != "a" || str(t, batch.Successes[0], "offset") != "1" || str(t, batch.Successes[1], "offset") != "2" {
		t.Errorf("batch answer %+v", batch)
	}
	end, err := e.adm.ListEndOffsets(e.ctx, "rec")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("rec", 1); o.Offset != 3 {
		t.Errorf("partition 1 ends at %d after the batch, want 3", o.Offset)
	}

	if code := e.want(e.do("POST", c+"/topics/nope/records", "application/json", "", `{"value":{"data":1}}`), 404).errorCode(t); code != 40403 {
		t.Errorf("unknown topic: error_code %d", code)
	}
	r = e.do("POST", c+"/topics/rec/records", "application/json", "", `{"value":{"type":"STRING","data":"`+strings.Repeat("x", 2<<20)+`"}}`)
	if r.status != 413 || r.errorCode(t) != 413 {
		t.Errorf("oversized record: %d %.200s", r.status, r.body)
	}
	big := `{"partition_id":0,"value":{"type":"STRING","data":"` + strings.Repeat("y", 400<<10) + `"}}`
	r = e.want(e.do("POST", c+"/topics/rec/records", "application/json", "", big+big+big), 200)
	if n := strings.Count(string(r.body), `"error_code":200`); n != 3 {
		t.Errorf("a 1.2 MB stream of 400 KB records: %d delivered: %.300s", n, r.body)
	}
	r = e.do("POST", c+"/topics/rec/records", "application/json", "", `{"value":{"type":"AVRO","data":1}}`)
	if r.status != 422 || r.errorCode(t) != 422 {
		t.Errorf("AVRO without a registry: %d %s", r.status, r.body)
	}
}

// acls lists every ACL of the cluster as "principal type name operation
// permission".
func (e *env) acls() []string {
	e.t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(e.ctx, e.cl)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, a.Principal+" "+r.ResourceType.String()+" "+r.ResourceName+" "+a.Operation.String()+" "+a.PermissionType.String())
		}
	}
	return out
}
