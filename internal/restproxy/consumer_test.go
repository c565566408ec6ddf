package restproxy

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type v2RecordAnswer struct {
	Topic     string `json:"topic"`
	Key       any    `json:"key"`
	Value     any    `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// produceN writes n JSON records {"n":i} to partition 0 of topic with
// franz-go.
func (e *env) produceN(topic string, n int) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		r := &kgo.Record{Topic: topic, Key: []byte(strconv.Quote("k" + strconv.Itoa(i))), Value: []byte(`{"n":` + strconv.Itoa(i) + `}`)}
		if err := cl.ProduceSync(e.ctx, r).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// poll reads records until it has n (each call waits at most 1 s).
func (e *env) poll(base, accept string, n int, query string) []v2RecordAnswer {
	e.t.Helper()
	var out []v2RecordAnswer
	for len(out) < n {
		if e.ctx.Err() != nil {
			e.t.Fatalf("read %d of %d records", len(out), n)
		}
		var batch []v2RecordAnswer
		r := e.want(e.do("GET", base+"/records"+query, "", accept, nil), 200)
		if r.ct != accept {
			e.t.Errorf("records content type %q, want %q", r.ct, accept)
		}
		r.decode(e.t, &batch)
		out = append(out, batch...)
	}
	return out
}

// TestConsumerInstance runs a v2 consumer instance through subscribe,
// poll, commit, seek, assign and delete, checking the group's committed
// offsets with kadm.
func TestConsumerInstance(t *testing.T) {
	e := start(t, Config{})
	e.createTopic("events", 1)
	e.produceN("events", 10)
	const base = "/consumers/g/instances/c"

	var created map[string]string
	e.want(e.do("POST", "/consumers/g", v2Type, "", `{"name":"c","format":"json","auto.offset.reset":"earliest","auto.commit.enable":"false","consumer.request.timeout.ms":"5000"}`), 200).decode(t, &created)
	if created["instance_id"] != "c" || created["base_uri"] != e.url+base {
		t.Fatalf("create answer %v", created)
	}
	if code := e.want(e.do("POST", "/consumers/g", v2Type, "", `{"name":"c"}`), 409).errorCode(t); code != 40902 {
		t.Errorf("second instance c: error_code %d", code)
	}
	e.want(e.do("POST", base+"/subscription", v2Type, "", `{"topics":["events"]}`), 204)
	var sub map[string][]string
	e.want(e.do("GET", base+"/subscription", "", "", nil), 200).decode(t, &sub)
	if len(sub["topics"]) != 1 || sub["topics"][0] != "events" {
		t.Errorf("subscription %v", sub)
	}
	// The format is json: a binary Accept is refused.
	if code := e.want(e.do("GET", base+"/records", "", binaryType, nil), 406).errorCode(t); code != 40601 {
		t.Errorf("binary Accept on a json instance: error_code %d", code)
	}
	// max_bytes bounds an answer: each record is 11 bytes of key and value.
	first := e.poll(base, jsonType, 1, "?max_bytes=30")
	if len(first) > 2 {
		t.Errorf("max_bytes=30 answered %d records", len(first))
	}
	recs := append(first, e.poll(base, jsonType, 10-len(first), "")...)
	for i, r := range recs {
		v, _ := r.Value.(map[string]any)
		if r.Offset != int64(i) || r.Key != "k"+strconv.Itoa(i) || v["n"] != float64(i) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	// Commit offset 4 (the last consumed): the group stores 5.
	e.want(e.do("POST", base+"/offsets", v2Type, "", `{"offsets":[{"topic":"events","partition":0,"offset":4}]}`), 200)
	committed := func() int64 {
		t.Helper()
		os, err := e.adm.FetchOffsets(e.ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := os.Lookup("events", 0)
		return o.At
	}
	if got := committed(); got != 5 {
		t.Errorf("committed %d, want 5", got)
	}
	var offs struct {
		Offsets []topicPartitionOffset `json:"offsets"`
	}
	e.want(e.do("GET", base+"/offsets", v2Type, "", `{"partitions":[{"topic":"events","partition":0}]}`), 200).decode(t, &offs)
	if len(offs.Offsets) != 1 || offs.Offsets[0].Offset != 5 {
		t.Errorf("GET offsets %+v", offs)
	}
	// Commit without a body: everything answered.
	e.want(e.do("POST", base+"/offsets", v2Type, "", nil), 200)
	if got := committed(); got != 10 {
		t.Errorf("committed %d, want 10", got)
	}
	// Seek back to 7, then to the beginning.
	var asg struct {
		Partitions []topicPartition `json:"partitions"`
	}
	e.want(e.do("GET", base+"/assignments", "", "", nil), 200).decode(t, &asg)
	if len(asg.Partitions) != 1 || asg.Partitions[0].Topic != "events" {
		t.Errorf("assignments %+v", asg)
	}
	e.want(e.do("POST", base+"/positions", v2Type, "", `{"offsets":[{"topic":"events","partition":0,"offset":7}]}`), 204)
	if r := e.poll(base, jsonType, 1, ""); r[0].Offset != 7 {
		t.Errorf("after seek to 7: %+v", r[0])
	}
	e.want(e.do("POST", base+"/positions/beginning", v2Type, "", `{"partitions":[{"topic":"events","partition":0}]}`), 204)
	if r := e.poll(base, jsonType, 1, ""); r[0].Offset != 0 {
		t.Errorf("after seek to the beginning: %+v", r[0])
	}
	e.want(e.do("POST", base+"/positions/end", v2Type, "", `{"partitions":[{"topic":"events","partition":0}]}`), 204)
	var none []v2RecordAnswer
	e.want(e.do("GET", base+"/records?timeout=200", "", jsonType, nil), 200).decode(t, &none)
	if len(none) != 0 {
		t.Errorf("after seek to the end: %+v", none)
	}
	// Subscribed instances refuse an assignment.
	if code := e.want(e.do("POST", base+"/assignments", v2Type, "", `{"partitions":[{"topic":"events","partition":0}]}`), 409).errorCode(t); code != 40903 {
		t.Errorf("assign while subscribed: error_code %d", code)
	}
	e.want(e.do("DELETE", base+"/subscription", "", "", nil), 204)

	// A second instance, binary, assigned: it starts at the group's
	// committed offset (10).
	e.want(e.do("POST", "/consumers/g", v2Type, "", `{"name":"d","format":"binary","auto.commit.enable":"true"}`), 200)
	const d = "/consumers/g/instances/d"
	e.want(e.do("DELETE", base, "", "", nil), 204)
	e.want(e.do("POST", d+"/assignments", v2Type, "", `{"partitions":[{"topic":"events","partition":0}]}`), 204)
	e.produceN("events", 1) // offset 10
	r := e.poll(d, binaryType, 1, "")
	if r[0].Offset != 10 || r[0].Value != b64(`{"n":0}`) {
		t.Errorf("assigned instance read %+v", r[0])
	}
	// Auto commit: what was answered is committed by the next poll.
	e.want(e.do("GET", d+"/records?timeout=100", "", binaryType, nil), 200)
	if got := committed(); got != 11 {
		t.Errorf("auto commit: committed %d, want 11", got)
	}
	e.want(e.do("DELETE", d, "", "", nil), 204)

	for _, c := range []struct{ method, path, ct, body string }{
		{"GET", base + "/records", "", ""},
		{"POST", base + "/subscription", v2Type, `{"topics":["events"]}`},
		{"DELETE", base, "", ""},
		{"GET", "/consumers/nope/instances/x/offsets", v2Type, `{"partitions":[]}`},
	} {
		if code := e.want(e.do(c.method, c.path, c.ct, jsonType+", "+v2Type, c.body), 404).errorCode(t); code != 40403 {
			t.Errorf("%s %s: error_code %d", c.method, c.path, code)
		}
	}
	if code := e.want(e.do("POST", "/consumers/g", v2Type, "", `{"format":"xml"}`), 422).errorCode(t); code != 42204 {
		t.Errorf("format xml: error_code %d", code)
	}
	if code := e.want(e.do("POST", "/consumers/g", "text/plain", "", `{}`), 415).errorCode(t); code != 415 {
		t.Errorf("text/plain: error_code %d", code)
	}
}

// TestConsumerInstanceExpires: an idle instance is closed and answers
// 40403; a generated name starts with rest-consumer-.
func TestConsumerInstanceExpires(t *testing.T) {
	e := start(t, Config{ConsumerInstanceTimeout: 300 * time.Millisecond})
	var created map[string]string
	e.want(e.do("POST", "/consumers/g", v2Type, "", nil), 200).decode(t, &created)
	id := created["instance_id"]
	if len(id) <= len("rest-consumer-") || id[:len("rest-consumer-")] != "rest-consumer-" {
		t.Fatalf("generated instance id %q", id)
	}
	// A request keeps the instance alive: wait on the table instead.
	for e.proxy.instanceCount() > 0 {
		if e.ctx.Err() != nil {
			t.Fatal("the idle instance did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := e.want(e.do("GET", "/consumers/g/instances/"+id+"/subscription", "", "", nil), 404).errorCode(t); code != 40403 {
		t.Errorf("expired instance: error_code %d", code)
	}
}

// TestConsumerInstancesShareGroup: two instances of one group split a
// topic's partitions; together they read every record once.
func TestConsumerInstancesShareGroup(t *testing.T) {
	e := start(t, Config{})
	e.createTopic("shared", 2)
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		e.want(e.do("POST", "/consumers/gs", v2Type, "", `{"name":"`+name+`","format":"binary","auto.offset.reset":"earliest","auto.commit.enable":"false"}`), 200)
		e.want(e.do("POST", "/consumers/gs/instances/"+name+"/subscription", v2Type, "", `{"topics":["shared"]}`), 204)
	}
	e.eventually("the group is stable with both instances", func() bool {
		var cs v3List
		r := e.do("GET", "/v3/clusters/"+md.Cluster+"/consumer-groups/gs/consumers", "", "", nil)
		if r.status != 200 {
			return false
		}
		r.decode(t, &cs)
		var g map[string]json.RawMessage
		e.want(e.do("GET", "/v3/clusters/"+md.Cluster+"/consumer-groups/gs", "", "", nil), 200).decode(t, &g)
		return len(cs.Data) == 2 && str(t, g, "state") == "STABLE"
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 20 {
		if err := cl.ProduceSync(e.ctx, &kgo.Record{Topic: "shared", Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]string{} // partition/offset -> instance
	parts := map[string]map[int32]bool{"a": {}, "b": {}}
	for len(seen) < 20 {
		if e.ctx.Err() != nil {
			t.Fatalf("read %d of 20 records", len(seen))
		}
		for _, name := range []string{"a", "b"} {
			var batch []v2RecordAnswer
			e.want(e.do("GET", "/consumers/gs/instances/"+name+"/records?timeout=200", "", binaryType, nil), 200).decode(t, &batch)
			for _, r := range batch {
				k := strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
				if prev, ok := seen[k]; ok {
					t.Fatalf("record %s answered to %s and %s", k, prev, name)
				}
				seen[k] = name
				parts[name][r.Partition] = true
			}
		}
	}
	if len(parts["a"]) != 1 || len(parts["b"]) != 1 {
		t.Errorf("partitions read: a %v, b %v", parts["a"], parts["b"])
	}
}

// TestSeekRightAfterAssign seeks a manually assigned instance before its
// first poll: the first record answered is the one sought.
func TestSeekRightAfterAssign(t *testing.T) {
	e := start(t, Config{})
	e.createTopic("events", 1)
	e.produceN("events", 10)
	const base = "/consumers/gs/instances/s"
	e.want(e.do("POST", "/consumers/gs", v2Type, "", `{"name":"s","format":"json","auto.offset.reset":"earliest"}`), 200)
	e.want(e.do("POST", base+"/assignments", v2Type, "", `{"partitions":[{"topic":"events","partition":0}]}`), 204)
	e.want(e.do("POST", base+"/positions", v2Type, "", `{"offsets":[{"topic":"events","partition":0,"offset":7}]}`), 204)
	if got := e.poll(base, jsonType, 1, ""); got[0].Offset != 7 {
		t.Errorf("first record after seeking to 7: offset %d", got[0].Offset)
	}
}
