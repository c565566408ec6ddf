package restproxy

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestV3MorePaths changes the cluster through the v3 paths beyond the core
// and confirms each change with kadm: partition count, cluster-wide broker
// config, a broker's config batch, batch ACLs; and reads partition
// offsets, a broker's partition replicas and the (empty) reassignments.
func TestV3MorePaths(t *testing.T) {
	e := start(t, Config{}, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:ANONYMOUS")
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := "/v3/clusters/" + md.Cluster
	e.createTopic("more", 2)
	e.produceN("more", 5)

	var topic map[string]json.RawMessage
	e.want(e.do("PATCH", c+"/topics/more", "application/json", "", `{"partitions_count":4}`), 200).decode(t, &topic)
	if str(t, topic, "partitions_count") != "4" {
		t.Errorf("PATCH answered %v", topic)
	}
	e.eventually("more has 4 partitions", func() bool {
		tds, err := e.adm.ListTopics(e.ctx, "more")
		return err == nil && len(tds["more"].Partitions) == 4
	})
	if r := e.do("PATCH", c+"/topics/more", "application/json", "", `{"partitions_count":2}`); r.status != 400 || r.errorCode(t) != 40002 {
		t.Errorf("fewer partitions: %d %s", r.status, r.body)
	}

	e.want(e.do("PUT", c+"/broker-configs/log.cleaner.threads", "application/json", "", `{"value":"3"}`), 204)
	clusterValue := func() string {
		rcs, err := e.adm.DescribeBrokerConfigs(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range rcs {
			for _, cf := range rc.Configs {
				if cf.Key == "log.cleaner.threads" && cf.Value != nil {
					return *cf.Value
				}
			}
		}
		return ""
	}
	if v := clusterValue(); v != "3" {
		t.Errorf("cluster-wide log.cleaner.threads = %q after PUT", v)
	}
	var conf map[string]json.RawMessage
	e.want(e.do("GET", c+"/broker-configs/log.cleaner.threads", "", "", nil), 200).decode(t, &conf)
	if str(t, conf, "value") != "3" || str(t, conf, "source") != "DYNAMIC_DEFAULT_BROKER_CONFIG" || str(t, conf, "config_type") != "BROKER" {
		t.Errorf("cluster config %v", conf)
	}
	e.want(e.do("POST", c+"/broker-configs:alter", "application/json", "", `{"data":[{"name":"log.cleaner.threads","operation":"DELETE"}]}`), 204)
	if v := clusterValue(); v != "" {
		t.Errorf("cluster-wide log.cleaner.threads = %q after DELETE", v)
	}

	e.want(e.do("POST", c+"/brokers/1/configs:alter", "application/json", "", `{"data":[{"name":"log.cleaner.threads","value":"2"}]}`), 204)
	rcs, err := e.adm.DescribeBrokerConfigs(e.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, cf := range rcs[0].Configs {
		if cf.Key == "log.cleaner.threads" && cf.Value != nil {
			got = *cf.Value
		}
	}
	if got != "2" {
		t.Errorf("broker 1 log.cleaner.threads = %q", got)
	}

	e.want(e.do("POST", c+"/acls:batch", "application/json", "", `{"data":[`+
		`{"resource_type":"TOPIC","resource_name":"more","pattern_type":"LITERAL","principal":"User:x","host":"*","operation":"READ","permission":"ALLOW"},`+
		`{"resource_type":"GROUP","resource_name":"g-","pattern_type":"PREFIXED","principal":"User:x","host":"*","operation":"READ","permission":"DENY"}]}`), 201)
	acls, err := e.adm.DescribeACLs(e.ctx, kadm.NewACLs().AnyResource().Allow("User:x").AllowHosts().Deny("User:x").DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for _, r := range acls {
		for _, d := range r.Described {
			described = append(described, d.Type.String()+" "+d.Name+" "+d.Permission.String())
		}
	}
	slices.Sort(described)
	if !slices.Equal(described, []string{"GROUP g- DENY", "TOPIC more ALLOW"}) {
		t.Errorf("ACLs %v", described)
	}

	var offs map[string]json.RawMessage
	e.want(e.do("GET", c+"/topics/more/partitions/0/offset", "", "", nil), 200).decode(t, &offs)
	if str(t, offs, "earliest_offset") != "0" || str(t, offs, "latest_offset") != "5" {
		t.Errorf("offsets %v", offs)
	}
	var replicas v3List
	e.want(e.do("GET", c+"/brokers/1/partition-replicas", "", "", nil), 200).decode(t, &replicas)
	var parts []string
	for _, r := range replicas.Data {
		if str(t, r, "topic_name") == "more" {
			parts = append(parts, str(t, r, "partition_id"))
		}
	}
	if !slices.Equal(parts, []string{"0", "1", "2", "3"}) {
		t.Errorf("broker 1 replicas of more: %v", parts)
	}
	var reassign v3List
	e.want(e.do("GET", c+"/topics/-/partitions/-/reassignment", "", "", nil), 200).decode(t, &reassign)
	if reassign.Kind != "KafkaReassignmentList" || len(reassign.Data) != 0 {
		t.Errorf("reassignments %+v", reassign)
	}
}
