package restproxy

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

const strategyOrderSchema = `{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"}]}`

// TestSubjectNameStrategies produces v3 records with each
// subject_name_strategy and checks with an sr client the subject each
// schema was registered under, and the subject each report names.
func TestSubjectNameStrategies(t *testing.T) {
	e, regURL := startWithRegistryURL(t)
	e.createTopic("orders", 1)
	cl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	v3 := "/v3/clusters/" + md.Cluster + "/topics/orders/records"
	schema, _ := json.Marshal(strategyOrderSchema)
	const protoText = "syntax = \"proto3\";\npackage shop;\nmessage Item { string sku = 1; }\n"
	item, err := cl.CreateSchema(e.ctx, "items", sr.Schema{Schema: protoText, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, subject string }{
		{`{"value":{"type":"AVRO","subject_name_strategy":"RECORD_NAME","schema":` + string(schema) + `,"data":{"id":1}}}`, "com.example.Order"},
		{`{"value":{"type":"AVRO","subject_name_strategy":"TOPIC_RECORD_NAME","schema":` + string(schema) + `,"data":{"id":2}}}`, "orders-com.example.Order"},
		{`{"value":{"type":"AVRO","subject_name_strategy":"TOPIC_NAME","schema":` + string(schema) + `,"data":{"id":3}}}`, "orders-value"},
		{`{"key":{"type":"AVRO","schema":` + string(schema) + `,"data":{"id":4}}}`, "orders-key"},
		{`{"value":{"subject_name_strategy":"RECORD_NAME","schema_id":` + strconv.Itoa(item.ID) + `,"data":{"sku":"a"}}}`, "shop.Item"},
		{`{"value":{"type":"JSONSCHEMA","subject_name_strategy":"TOPIC_RECORD_NAME","schema":"{\"title\":\"Note\",\"type\":\"object\"}","data":{}}}`, "orders-Note"},
	} {
		var rep map[string]map[string]any
		r := e.want(e.do("POST", v3, "application/json", "", c.body), 200)
		json.Unmarshal(r.body, &rep)
		part := rep["value"]
		if strings.HasPrefix(c.body, `{"key"`) {
			part = rep["key"]
		}
		if part["subject"] != c.subject {
			t.Errorf("%s: report %s, want subject %s", c.body, r.body, c.subject)
		}
	}
	subjects, err := cl.Subjects(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"com.example.Order", "orders-com.example.Order", "orders-value", "orders-key", "orders-Note"} {
		if !slices.Contains(subjects, want) {
			t.Errorf("subjects %v lack %s", subjects, want)
		}
	}
	// What Confluent's proxy refuses.
	for _, body := range []string{
		`{"value":{"type":"AVRO","subject_name_strategy":"RECORD_NAME","schema_version":1,"data":{"id":1}}}`,
		`{"value":{"type":"AVRO","subject_name_strategy":"RECORD_NAME","data":{"id":1}}}`,
		`{"value":{"schema_id":` + strconv.Itoa(item.ID) + `,"schema_version":1,"data":{"sku":"a"}}}`,
		`{"value":{"type":"AVRO","subject_name_strategy":"NAME_OF_MY_CAT","schema":` + string(schema) + `,"data":{"id":1}}}`,
	} {
		var rep map[string]any
		r := e.do("POST", v3, "application/json", "", body)
		json.Unmarshal(r.body, &rep)
		if r.status != 400 || rep["error_code"] != float64(400) {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	if got := e.consume("orders", 6); len(got) != 6 {
		t.Errorf("%d records", len(got))
	}
}

// TestAvroReferences produces with an Avro schema whose field type is a
// record of another subject (a schema reference) and decodes the record
// with that pair of schemas.
func TestAvroReferences(t *testing.T) {
	e, regURL := startWithRegistryURL(t)
	e.createTopic("shipments", 1)
	cl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	const address = `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}`
	const shipment = `{"type":"record","name":"Shipment","namespace":"com.example","fields":[{"name":"to","type":"com.example.Address"},{"name":"n","type":"int"}]}`
	if _, err := cl.CreateSchema(e.ctx, "address", sr.Schema{Schema: address}); err != nil {
		t.Fatal(err)
	}
	ship, err := cl.CreateSchema(e.ctx, "shipments-value", sr.Schema{Schema: shipment,
		References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "address", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	md, err := e.adm.BrokerMetadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"value":{"schema_id":` + strconv.Itoa(ship.ID) + `,"data":{"to":{"city":"Prague"},"n":7}}}`
	e.want(e.do("POST", "/v3/clusters/"+md.Cluster+"/topics/shipments/records", "application/json", "", body), 200)
	v2body := `{"value_schema_id":` + strconv.Itoa(ship.ID) + `,"records":[{"value":{"to":{"city":"Brno"},"n":8}}]}`
	e.want(e.do("POST", "/topics/shipments", "application/vnd.kafka.avro.v2+json", "", v2body), 200)

	cache := &avro.SchemaCache{}
	if _, err := avro.ParseWithCache(address, "", cache); err != nil {
		t.Fatal(err)
	}
	sch, err := avro.ParseWithCache(shipment, "", cache)
	if err != nil {
		t.Fatal(err)
	}
	type addr struct {
		City string `avro:"city"`
	}
	var got []string
	for _, r := range e.consume("shipments", 2) {
		if id := wireID(t, r.Value); id != ship.ID {
			t.Errorf("schema id %d, want %d", id, ship.ID)
		}
		var v struct {
			To addr `avro:"to"`
			N  int  `avro:"n"`
		}
		if err := avro.Unmarshal(sch, r.Value[5:], &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v.To.City+strconv.Itoa(v.N))
	}
	if !slices.Equal(got, []string{"Prague7", "Brno8"}) {
		t.Errorf("records %v", got)
	}
}
