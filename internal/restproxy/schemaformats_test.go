package restproxy

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/samsa-io/samsa/internal/registry"
	"github.com/samsa-io/samsa/internal/servertest"
)

// startWithRegistry starts a broker, a Schema Registry on it and the
// proxy using that registry.
func startWithRegistry(t *testing.T) *env {
	e, _ := startWithRegistryURL(t)
	return e
}

func startWithRegistryURL(t *testing.T) (*env, string) {
	s := servertest.Start(t)
	reg := registry.New(registry.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(servertest.Addr(s))}, Logger: servertest.Logger()})
	regSrv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() { regSrv.Close(); reg.Close() })
	return startOn(t, s, Config{SchemaRegistryURL: regSrv.URL}), regSrv.URL
}

// wireID checks b is in Confluent's wire format and returns its schema id.
func wireID(t *testing.T, b []byte) int {
	t.Helper()
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not in the wire format: %x", b)
	}
	return int(binary.BigEndian.Uint32(b[1:5]))
}

func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	g, _ := json.Marshal(got)
	var a, b any
	json.Unmarshal(g, &a)
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]}`

// TestJSONSchema produces jsonschema keys and values over v2 and v3,
// checks the wire format and the schema with franz-go and jsonschema,
// reads them back through a jsonschema consumer instance, and refuses
// values the schema does not admit.
func TestJSONSchema(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("people", 1)
	const ct = "application/vnd.kafka.jsonschema.v2+json"
	values := []string{`{"name":"ann","age":31}`, `{"name":"bob"}`}
	body := `{"key_schema":"{\"type\":\"string\"}","value_schema":` + strconv.Quote(personSchema) +
		`,"records":[{"key":"k1","value":` + values[0] + `},{"value":` + values[1] + `}]}`
	var ans offsetAnswer
	e.want(e.do("POST", "/topics/people", ct, "", body), 200).decode(t, &ans)
	if ans.KeySchemaID == nil || ans.ValueSchemaID == nil || len(ans.Offsets) != 2 || *ans.Offsets[1].Offset != 1 {
		t.Fatalf("answer %s", mustJSON(ans))
	}
	id := *ans.ValueSchemaID

	// v3, by the value schema's id.
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	v3 := "/v3/clusters/" + md.Cluster + "/topics/people/records"
	var rep map[string]json.RawMessage
	e.want(e.do("POST", v3, "application/json", "", `{"value":{"type":"JSONSCHEMA","schema_id":`+strconv.Itoa(id)+`,"data":{"name":"cy","age":7}}}`), 200).decode(t, &rep)
	if string(rep["offset"]) != "2" || !strings.Contains(string(rep["value"]), `"schema_id":`+strconv.Itoa(id)) || !strings.Contains(string(rep["value"]), `"JSONSCHEMA"`) {
		t.Errorf("v3 report %s", mustJSON(rep))
	}
	values = append(values, `{"name":"cy","age":7}`)

	c := jsonschema.NewCompiler()
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(personSchema))
	c.AddResource("person.json", doc)
	sch := c.MustCompile("person.json")
	recs := e.consume("people", 3)
	for i, r := range recs {
		if got := wireID(t, r.Value); got != id {
			t.Fatalf("record %d: schema id %d, want %d", i, got, id)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(r.Value[5:])))
		if err != nil || sch.Validate(inst) != nil {
			t.Errorf("record %d: %q does not match the schema: %v", i, r.Value[5:], err)
		}
		if !sameJSON(t, json.RawMessage(r.Value[5:]), values[i]) {
			t.Errorf("record %d: %s, want %s", i, r.Value[5:], values[i])
		}
	}
	if wireID(t, recs[0].Key) != *ans.KeySchemaID || string(recs[0].Key[5:]) != `"k1"` || recs[1].Key != nil {
		t.Errorf("keys %x %x", recs[0].Key, recs[1].Key)
	}

	e.want(e.do("POST", "/consumers/gj", v2Type, "", `{"name":"j","format":"jsonschema","auto.offset.reset":"earliest"}`), 200)
	e.want(e.do("POST", "/consumers/gj/instances/j/subscription", v2Type, "", `{"topics":["people"]}`), 204)
	got := e.poll("/consumers/gj/instances/j", ct, 3, "")
	for i, r := range got {
		if !sameJSON(t, r.Value, values[i]) {
			t.Errorf("consumed record %d: %v, want %s", i, r.Value, values[i])
		}
	}
	if got[0].Key != "k1" || got[1].Key != nil {
		t.Errorf("consumed keys %v %v", got[0].Key, got[1].Key)
	}

	for _, c := range []struct{ name, body string }{
		{"missing required", `{"value_schema_id":` + strconv.Itoa(id) + `,"records":[{"value":{"name":"ok"}},{"value":{"age":3}}]}`},
		{"wrong type", `{"value_schema_id":` + strconv.Itoa(id) + `,"records":[{"value":{"name":"x","age":-1}}]}`},
	} {
		r := e.do("POST", "/topics/people", ct, "", c.body)
		if r.status != 422 || r.errorCode(t) != 42203 {
			t.Errorf("%s: %d %s, want 422 with 42203", c.name, r.status, r.body)
		}
	}
	if r := e.do("POST", "/topics/people", ct, "", `{"value_schema":"{\"type\":12}","records":[{"value":{}}]}`); r.status != 422 || r.errorCode(t) != 42205 {
		t.Errorf("invalid schema: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/topics/people", ct, "", `{"records":[{"value":{"name":"x"}}]}`); r.status != 422 || r.errorCode(t) != 42202 {
		t.Errorf("no value schema: %d %s", r.status, r.body)
	}
	end, err := e.adm.ListEndOffsets(e.ctx, "people")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("people", 0); o.Offset != 3 {
		t.Errorf("end offset %d after refused requests, want 3", o.Offset)
	}
}

const orderProto = `syntax = "proto3";
package test;
message Order {
  int64 id = 1;
  string note = 2;
  repeated string tags = 3;
  Line line = 4;
  message Line { string sku = 1; int32 qty = 2; }
}
message Other { string s = 1; }
`

func compileTestProto(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.ResolverFunc(func(p string) (protocompile.SearchResult, error) {
		if p == "order.proto" {
			return protocompile.SearchResult{Source: strings.NewReader(orderProto)}, nil
		}
		return protocompile.SearchResult{}, fs.ErrNotExist
	})}
	files, err := c.Compile(context.Background(), "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0]
}

// TestProtobuf produces protobuf values over v2 and v3, decodes the
// records franz-go reads with the schema (message indexes [0] as the
// single byte 0), reads them and a record of the second message (indexes
// [1]) through a protobuf consumer instance, and refuses bad values.
func TestProtobuf(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("orders", 1)
	const ct = "application/vnd.kafka.protobuf.v2+json"
	values := []string{`{"id":"12","note":"first","tags":["a","b"],"line":{"sku":"x1","qty":3}}`, `{"id":"9007199254740993"}`}
	body := `{"value_schema":` + strconv.Quote(orderProto) + `,"records":[{"value":` + values[0] + `},{"value":` + values[1] + `}]}`
	var ans offsetAnswer
	e.want(e.do("POST", "/topics/orders", ct, "", body), 200).decode(t, &ans)
	if ans.ValueSchemaID == nil || ans.KeySchemaID != nil || len(ans.Offsets) != 2 {
		t.Fatalf("answer %s", mustJSON(ans))
	}
	id := *ans.ValueSchemaID

	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	v3 := "/v3/clusters/" + md.Cluster + "/topics/orders/records"
	var rep map[string]json.RawMessage
	e.want(e.do("POST", v3, "application/json", "", `{"value":{"type":"PROTOBUF","schema_id":`+strconv.Itoa(id)+`,"data":{"id":5,"line":{"qty":1}}}}`), 200).decode(t, &rep)
	if string(rep["offset"]) != "2" || !strings.Contains(string(rep["value"]), `"PROTOBUF"`) {
		t.Errorf("v3 report %s", mustJSON(rep))
	}

	fd := compileTestProto(t)
	order := fd.Messages().ByName("Order")
	recs := e.consume("orders", 3)
	wantIDs := []int64{12, 9007199254740993, 5}
	for i, r := range recs {
		if got := wireID(t, r.Value); got != id {
			t.Fatalf("record %d: schema id %d, want %d", i, got, id)
		}
		if r.Value[5] != 0 {
			t.Fatalf("record %d: message indexes %x, want the single byte 0", i, r.Value[5:])
		}
		m := dynamicpb.NewMessage(order)
		if err := proto.Unmarshal(r.Value[6:], m); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got := m.Get(order.Fields().ByName("id")).Int(); got != wantIDs[i] {
			t.Errorf("record %d: id %d, want %d", i, got, wantIDs[i])
		}
	}
	m0 := dynamicpb.NewMessage(order)
	proto.Unmarshal(recs[0].Value[6:], m0)
	line := m0.Get(order.Fields().ByName("line")).Message()
	if m0.Get(order.Fields().ByName("tags")).List().Len() != 2 || line.Get(line.Descriptor().Fields().ByName("sku")).String() != "x1" {
		t.Errorf("record 0 decoded %v", m0)
	}

	// A record of the second message, as Confluent's serializer writes
	// it: indexes [1] are count 1 and index 1, both zigzag varints.
	other := fd.Messages().ByName("Other")
	om := dynamicpb.NewMessage(other)
	om.Set(other.Fields().ByName("s"), protoreflect.ValueOfString("hi"))
	ob, _ := proto.Marshal(om)
	raw := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	raw = append(append(raw, 2, 2), ob...)
	if err := e.cl.ProduceSync(e.ctx, &kgo.Record{Topic: "orders", Value: raw}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	e.want(e.do("POST", "/consumers/gp", v2Type, "", `{"name":"p","format":"protobuf","auto.offset.reset":"earliest"}`), 200)
	e.want(e.do("POST", "/consumers/gp/instances/p/subscription", v2Type, "", `{"topics":["orders"]}`), 204)
	got := e.poll("/consumers/gp/instances/p", ct, 4, "")
	want := []string{
		`{"id":"12","note":"first","tags":["a","b"],"line":{"sku":"x1","qty":3}}`,
		`{"id":"9007199254740993","note":"","tags":[],"line":null}`,
		`{"id":"5","note":"","tags":[],"line":{"sku":"","qty":1}}`,
		`{"s":"hi"}`,
	}
	for i, r := range got {
		if !sameJSON(t, r.Value, want[i]) {
			t.Errorf("consumed record %d: %s, want %s", i, mustJSON(r.Value), want[i])
		}
	}

	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"unknown field", `{"value_schema_id":` + strconv.Itoa(id) + `,"records":[{"value":{"id":1}},{"value":{"nope":1}}]}`, 42203},
		{"wrong type", `{"value_schema_id":` + strconv.Itoa(id) + `,"records":[{"value":{"id":"one"}}]}`, 42203},
		{"invalid schema", `{"value_schema":"message {","records":[{"value":{}}]}`, 42205},
	} {
		r := e.do("POST", "/topics/orders", ct, "", c.body)
		if r.status != 422 || r.errorCode(t) != c.code {
			t.Errorf("%s: %d %s, want 422 with %d", c.name, r.status, r.body, c.code)
		}
	}
	end, err := e.adm.ListEndOffsets(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("orders", 0); o.Offset != 4 {
		t.Errorf("end offset %d after refused requests, want 4", o.Offset)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSchemaReferences produces by the id of jsonschema and protobuf
// schemas registered with references ($ref and import), and reads the
// protobuf records back through a consumer instance.
func TestSchemaReferences(t *testing.T) {
	e, regURL := startWithRegistryURL(t)
	e.createTopic("refs", 1)
	e.createTopic("refs-pb", 1)
	cl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	register := func(subject, text string, typ sr.SchemaType, refs ...sr.SchemaReference) int {
		ss, err := cl.CreateSchema(e.ctx, subject, sr.Schema{Schema: text, Type: typ, References: refs})
		if err != nil {
			t.Fatalf("registering %s: %v", subject, err)
		}
		return ss.ID
	}
	register("addr", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, sr.TypeJSON)
	jsonID := register("cust", `{"type":"object","properties":{"addr":{"$ref":"addr.json"}},"required":["addr"]}`, sr.TypeJSON,
		sr.SchemaReference{Name: "addr.json", Subject: "addr", Version: 1})
	register("line", "syntax = \"proto3\";\npackage shop;\nmessage Line { string sku = 1; }\n", sr.TypeProtobuf)
	protoID := register("order", "syntax = \"proto3\";\npackage shop;\nimport \"line.proto\";\nmessage Order { repeated Line lines = 1; }\n", sr.TypeProtobuf,
		sr.SchemaReference{Name: "line.proto", Subject: "line", Version: 1})

	const jsType, pbType = "application/vnd.kafka.jsonschema.v2+json", "application/vnd.kafka.protobuf.v2+json"
	e.want(e.do("POST", "/topics/refs", jsType, "", `{"value_schema_id":`+strconv.Itoa(jsonID)+`,"records":[{"value":{"addr":{"city":"Oslo"}}}]}`), 200)
	if r := e.do("POST", "/topics/refs", jsType, "", `{"value_schema_id":`+strconv.Itoa(jsonID)+`,"records":[{"value":{"addr":{"town":"Oslo"}}}]}`); r.status != 422 || r.errorCode(t) != 42203 {
		t.Errorf("value not matching the referenced schema: %d %s", r.status, r.body)
	}
	e.want(e.do("POST", "/topics/refs-pb", pbType, "", `{"value_schema_id":`+strconv.Itoa(protoID)+`,"records":[{"value":{"lines":[{"sku":"a"},{"sku":"b"}]}}]}`), 200)
	if r := e.do("POST", "/topics/refs-pb", pbType, "", `{"value_schema_id":`+strconv.Itoa(protoID)+`,"records":[{"value":{"lines":[{"qty":1}]}}]}`); r.status != 422 || r.errorCode(t) != 42203 {
		t.Errorf("value not matching the imported message: %d %s", r.status, r.body)
	}

	if rec := e.consume("refs", 1)[0]; wireID(t, rec.Value) != jsonID || string(rec.Value[5:]) != `{"addr":{"city":"Oslo"}}` {
		t.Errorf("jsonschema record %q", rec.Value)
	}
	recs := e.consume("refs-pb", 1)
	// Order{lines: [{sku: "a"}, {sku: "b"}]}: field 1, two length-delimited
	// Lines, each field 1 a string.
	if wireID(t, recs[0].Value) != protoID || string(recs[0].Value[5:]) != "\x00\x0a\x03\x0a\x01a\x0a\x03\x0a\x01b" {
		t.Errorf("protobuf record %x", recs[0].Value)
	}

	e.want(e.do("POST", "/consumers/gr", v2Type, "", `{"name":"r","format":"protobuf","auto.offset.reset":"earliest"}`), 200)
	e.want(e.do("POST", "/consumers/gr/instances/r/subscription", v2Type, "", `{"topics":["refs-pb"]}`), 204)
	got := e.poll("/consumers/gr/instances/r", pbType, 1, "")
	if !sameJSON(t, got[0].Value, `{"lines":[{"sku":"a"},{"sku":"b"}]}`) {
		t.Errorf("consumed %s", mustJSON(got[0].Value))
	}
}

// TestV3SchemaLookup produces v3 records whose schema is named by
// schema_version of a subject, by the subject's latest, and by a
// schema_id without a type (the type is the schema's).
func TestV3SchemaLookup(t *testing.T) {
	e, regURL := startWithRegistryURL(t)
	e.createTopic("looks", 1)
	cl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := cl.CreateSchema(e.ctx, "looks-value", sr.Schema{Schema: `{"type":"object","properties":{"a":{"type":"integer"}}}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	other, err := cl.CreateSchema(e.ctx, "shared", sr.Schema{Schema: "syntax = \"proto3\";\nmessage M { string s = 1; }\n", Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	v3 := "/v3/clusters/" + md.Cluster + "/topics/looks/records"
	for i, c := range []struct{ body, typ string }{
		{`{"value":{"type":"JSONSCHEMA","schema_version":1,"data":{"a":1}}}`, "JSONSCHEMA"},
		{`{"value":{"type":"JSONSCHEMA","data":{"a":2}}}`, "JSONSCHEMA"},
		{`{"value":{"schema_id":` + strconv.Itoa(other.ID) + `,"data":{"s":"x"}}}`, "PROTOBUF"},
		{`{"value":{"type":"PROTOBUF","subject":"shared","schema_version":1,"data":{"s":"y"}}}`, "PROTOBUF"},
	} {
		var rep map[string]json.RawMessage
		e.want(e.do("POST", v3, "application/json", "", c.body), 200).decode(t, &rep)
		if string(rep["error_code"]) != "200" || !strings.Contains(string(rep["value"]), `"`+c.typ+`"`) {
			t.Errorf("record %d: report %s", i, mustJSON(rep))
		}
	}
	if r := e.do("POST", v3, "application/json", "", `{"value":{"type":"JSONSCHEMA","schema_version":1,"data":{"a":"x"}}}`); !strings.Contains(string(r.body), `"error_code":422`) {
		t.Errorf("a value the version's schema refuses: %d %s", r.status, r.body)
	}
	if r := e.do("POST", v3, "application/json", "", `{"value":{"type":"JSONSCHEMA","subject":"nope","data":{"a":1}}}`); !strings.Contains(string(r.body), `"error_code":422`) {
		t.Errorf("a subject without schemas: %d %s", r.status, r.body)
	}
	recs := e.consume("looks", 4)
	wantIDs := []int{v1.ID, v1.ID, other.ID, other.ID}
	wantBody := []string{`{"a":1}`, `{"a":2}`, "\x00\x0a\x01x", "\x00\x0a\x01y"}
	for i, r := range recs {
		if wireID(t, r.Value) != wantIDs[i] || string(r.Value[5:]) != wantBody[i] {
			t.Errorf("record %d: %x, want id %d and %q", i, r.Value, wantIDs[i], wantBody[i])
		}
	}
}
