package restproxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/registry"
	"github.com/samsa-io/samsa/internal/servertest"
)

const orderSchema = `{"type":"record","name":"Order","namespace":"test","fields":[
{"name":"id","type":"long"},
{"name":"note","type":["null","string"],"default":null},
{"name":"raw","type":"bytes"},
{"name":"tags","type":{"type":"array","items":"string"}},
{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"]}}]}`

// TestAvro produces Avro over v2 with a schema registered through the
// registry, checks the Confluent wire format with franz-go and hamba/avro,
// and reads the records back through an avro consumer instance.
func TestAvro(t *testing.T) {
	s := servertest.Start(t)
	reg := registry.New(registry.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(servertest.Addr(s))}, Logger: servertest.Logger()})
	regSrv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() { regSrv.Close(); reg.Close() })
	e := startOn(t, s, Config{SchemaRegistryURL: regSrv.URL})
	e.createTopic("orders", 1)
	const avroType = "application/vnd.kafka.avro.v2+json"

	values := []string{
		`{"id":1,"note":{"string":"first"},"raw":"\u0000\u00ffa","tags":["x","y"],"kind":"A"}`,
		`{"id":9007199254740993,"note":null,"raw":"","tags":[],"kind":"B"}`,
	}
	body := `{"value_schema":` + strconv.Quote(orderSchema) + `,"records":[{"value":` + values[0] + `},{"value":` + values[1] + `}]}`
	var ans struct {
		ValueSchemaID *int `json:"value_schema_id"`
		KeySchemaID   *int `json:"key_schema_id"`
		Offsets       []struct {
			Offset    int64 `json:"offset"`
			ErrorCode *int  `json:"error_code"`
		} `json:"offsets"`
	}
	e.want(e.do("POST", "/topics/orders", avroType, "", body), 200).decode(t, &ans)
	if ans.ValueSchemaID == nil || ans.KeySchemaID != nil || len(ans.Offsets) != 2 || ans.Offsets[1].Offset != 1 {
		t.Fatalf("answer %+v", ans)
	}
	id := *ans.ValueSchemaID
	// By id, with an Avro key too.
	body = `{"key_schema":"\"string\"","value_schema_id":` + strconv.Itoa(id) + `,"records":[{"key":"k3","value":` + values[0] + `}]}`
	var ans2 struct {
		KeySchemaID   *int `json:"key_schema_id"`
		ValueSchemaID *int `json:"value_schema_id"`
	}
	e.want(e.do("POST", "/topics/orders", avroType, "", body), 200).decode(t, &ans2)
	if ans2.KeySchemaID == nil || *ans2.KeySchemaID == id || ans2.ValueSchemaID == nil || *ans2.ValueSchemaID != id {
		t.Fatalf("answer %+v", ans2)
	}

	sch := avro.MustParse(orderSchema)
	recs := e.consume("orders", 3)
	for i, r := range recs {
		if len(r.Value) < 5 || r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != id {
			t.Fatalf("record %d is not in the wire format with id %d: %x", i, id, r.Value)
		}
		var got map[string]any
		if err := avro.Unmarshal(sch, r.Value[5:], &got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		wantID := int64(1)
		if i == 1 {
			wantID = 9007199254740993
		}
		if got["id"] != wantID || got["kind"] != []string{"A", "B", "A"}[i] {
			t.Errorf("record %d decoded %v", i, got)
		}
		if i == 0 && (string(got["raw"].([]byte)) != "\x00\xffa" || got["note"] != "first") {
			t.Errorf("record 0 decoded %v", got)
		}
	}
	if len(recs[2].Key) < 5 || recs[2].Key[0] != 0 || string(recs[2].Key[5:]) != "\x04k3" {
		t.Errorf("avro key %x", recs[2].Key)
	}

	// An avro consumer instance answers Avro's JSON encoding.
	e.want(e.do("POST", "/consumers/ga", v2Type, "", `{"name":"a","format":"avro","auto.offset.reset":"earliest"}`), 200)
	e.want(e.do("POST", "/consumers/ga/instances/a/subscription", v2Type, "", `{"topics":["orders"]}`), 204)
	got := e.poll("/consumers/ga/instances/a", avroType, 3, "")
	for i, r := range got {
		var want any
		json.Unmarshal([]byte(values[[]int{0, 1, 0}[i]]), &want)
		gotV, _ := json.Marshal(r.Value)
		var gotAny any
		json.Unmarshal(gotV, &gotAny)
		if !reflect.DeepEqual(gotAny, want) {
			t.Errorf("record %d: %s, want %s", i, gotV, values[[]int{0, 1, 0}[i]])
		}
	}
	if got[2].Key != "k3" || got[0].Key != nil {
		t.Errorf("keys %v %v", got[0].Key, got[2].Key)
	}
	if code := e.want(e.do("GET", "/consumers/ga/instances/a/records", "", binaryType, nil), 406).errorCode(t); code != 40601 {
		t.Errorf("binary Accept on an avro instance: error_code %d", code)
	}

	// v3: AVRO data with the schema's id, and with a schema registered
	// under the key subject (the same as v2's key schema: an incompatible
	// one would be refused by the registry).
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	v3 := "/v3/clusters/" + md.Cluster + "/topics/orders/records"
	var rep map[string]json.RawMessage
	e.want(e.do("POST", v3, "application/json", "", `{"key":{"type":"AVRO","schema":"\"string\"","data":"k4"},"value":{"schema_id":`+strconv.Itoa(id)+`,"data":`+values[1]+`}}`), 200).decode(t, &rep)
	var valRep struct {
		Type     string `json:"type"`
		SchemaID int    `json:"schema_id"`
	}
	json.Unmarshal(rep["value"], &valRep)
	if string(rep["offset"]) != "3" || valRep.Type != "AVRO" || valRep.SchemaID != id || !bytes.Contains(rep["key"], []byte(`"schema_id"`)) {
		t.Errorf("v3 avro report %v", rep)
	}
	rec4 := e.consume("orders", 4)[3]
	var v4 map[string]any
	if len(rec4.Value) < 5 || int(binary.BigEndian.Uint32(rec4.Value[1:5])) != id || avro.Unmarshal(sch, rec4.Value[5:], &v4) != nil || v4["id"] != int64(9007199254740993) {
		t.Errorf("v3 avro value %x", rec4.Value)
	}
	if len(rec4.Key) < 5 || string(rec4.Key[5:]) != "\x04k4" {
		t.Errorf("v3 avro key %x", rec4.Key)
	}

	// Bad input: nothing produced.
	for _, c := range []struct {
		name, body string
		code       int
	}{
		{"invalid schema", `{"value_schema":"{\"type\":\"recordd\"}","records":[{"value":{}}]}`, 42205},
		{"unknown schema id", `{"value_schema_id":9999,"records":[{"value":{}}]}`, 42205},
		{"value not of the schema", `{"value_schema_id":` + strconv.Itoa(id) + `,"records":[{"value":` + values[0] + `},{"value":{"id":"one"}}]}`, 42203},
		{"union without its branch", `{"value_schema_id":` + strconv.Itoa(id) + `,"records":[{"value":{"id":1,"note":"bare","raw":"","tags":[],"kind":"A"}}]}`, 42203},
	} {
		r := e.do("POST", "/topics/orders", avroType, "", c.body)
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
