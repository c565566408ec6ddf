package connector

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestJsonConverterEnvelope(t *testing.T) {
	s := &Schema{Type: StructT, Name: "com.example.User", Fields: []Field{
		{Name: "id", Schema: Int64Schema},
		{Name: "name", Schema: OptionalStringSchema},
		{Name: "tags", Schema: &Schema{Type: Array, Value: StringSchema}},
	}}
	v := NewStruct(s).Put("id", int64(7)).Put("name", "ann").Put("tags", []any{"a", "b"})
	c := &JsonConverter{}
	if err := c.Configure(nil, false); err != nil {
		t.Fatal(err)
	}
	b, err := c.FromConnect("t", s, v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},{"type":"array","items":{"type":"string","optional":false},"optional":false,"field":"tags"}],"optional":false,"name":"com.example.User"},"payload":{"id":7,"name":"ann","tags":["a","b"]}}`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	gs, gv, err := c.ToConnect("t", b)
	if err != nil {
		t.Fatal(err)
	}
	if gs.Name != s.Name || len(gs.Fields) != 3 || gv.(*Struct).Get("id") != int64(7) || gv.(*Struct).Get("name") != "ann" {
		t.Fatalf("round trip: %+v %+v", gs, gv)
	}
	if b, _ := c.FromConnect("t", nil, nil); b != nil {
		t.Fatalf("null value: got %q, want a null (tombstone)", b)
	}
	if b, _ := c.FromConnect("t", StringSchema, "x"); string(b) != `{"schema":{"type":"string","optional":false},"payload":"x"}` {
		t.Fatalf("string: %s", b)
	}
	if _, _, err := c.ToConnect("t", []byte(`{"a":1}`)); err == nil || !strings.Contains(err.Error(), "schemas.enable") {
		t.Fatalf("plain JSON with schemas.enable: err %v", err)
	}
	if _, _, err := c.ToConnect("t", []byte(`not json`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
}

func TestJsonConverterSchemaless(t *testing.T) {
	c := &JsonConverter{}
	if err := c.Configure(map[string]string{"schemas.enable": "false"}, false); err != nil {
		t.Fatal(err)
	}
	s, v, err := c.ToConnect("t", []byte(`{"a":1,"b":[1.5,"x"],"c":null}`))
	if err != nil || s != nil {
		t.Fatal(s, err)
	}
	want := map[string]any{"a": int64(1), "b": []any{1.5, "x"}, "c": nil}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v", v)
	}
	b, err := c.FromConnect("t", nil, v)
	if err != nil || string(b) != `{"a":1,"b":[1.5,"x"],"c":null}` {
		t.Fatalf("got %s %v", b, err)
	}
	env := &JsonConverter{SchemasEnable: true}
	if b, _ := env.FromConnect("t", nil, "x"); string(b) != `{"schema":null,"payload":"x"}` {
		t.Fatalf("schemaless envelope: %s", b)
	}
}

func TestConfigDefValidate(t *testing.T) {
	d := ConfigDef{
		{Name: "file", Type: TypeString, Required: true},
		{Name: "batch.size", Type: TypeInt, Default: "2000", Validate: AtLeast(1)},
		{Name: "flag", Type: TypeBoolean, Default: "false"},
	}
	vals, _ := d.Validate(map[string]string{"batch.size": "0", "flag": "maybe"})
	var errs []string
	for _, v := range vals {
		errs = append(errs, strings.Join(v.Errors, "|"))
	}
	want := []string{
		`Missing required configuration "file" which has no default value.`,
		`Invalid value 0 for configuration batch.size: Value must be at least 1`,
		`Invalid value maybe for configuration flag: expected value to be either true or false`,
	}
	if !reflect.DeepEqual(errs, want) {
		t.Fatalf("got %q", errs)
	}
	p, err := d.Parse(map[string]string{"file": "/x"})
	if err != nil || p["batch.size"] != int64(2000) || p["flag"] != false {
		t.Fatal(p, err)
	}
}

func TestTransformChain(t *testing.T) {
	chain, err := NewChain(map[string]string{
		"transforms":                     "route,insert,rename,drop",
		"transforms.route.type":          "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":         "orders-(.*)",
		"transforms.route.replacement":   "copy-$1",
		"transforms.insert.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insert.topic.field":  "topic",
		"transforms.insert.static.field": "src",
		"transforms.insert.static.value": "samsa",
		"transforms.rename.type":         "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"transforms.rename.renames":      "id:order_id",
		"transforms.rename.exclude":      "secret",
		"transforms.drop.type":           "org.apache.kafka.connect.transforms.Filter",
		"transforms.drop.predicate":      "tomb",
		"predicates":                     "tomb",
		"predicates.tomb.type":           "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
	})
	if err != nil {
		t.Fatal(err)
	}
	in := &Record{Topic: "orders-eu", Value: map[string]any{"id": int64(1), "secret": "x"}, Timestamp: time.UnixMilli(5)}
	out, err := chain.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Topic != "copy-eu" {
		t.Fatalf("topic %q", out.Topic)
	}
	want := map[string]any{"order_id": int64(1), "topic": "copy-eu", "src": "samsa"}
	if !reflect.DeepEqual(out.Value, want) {
		t.Fatalf("value %#v", out.Value)
	}
	if in.Topic != "orders-eu" || len(in.Value.(map[string]any)) != 2 {
		t.Fatal("the chain changed its input")
	}
	if out, err := chain.Apply(&Record{Topic: "orders-eu"}); err != nil || out != nil {
		t.Fatalf("tombstone not filtered: %v %v", out, err)
	}
	if _, err := NewChain(map[string]string{"transforms": "x", "transforms.x.type": "Nope"}); err == nil {
		t.Fatal("unknown class accepted")
	}
}

func TestValueToKeyExtractField(t *testing.T) {
	s := &Schema{Type: StructT, Fields: []Field{{Name: "id", Schema: Int32Schema}, {Name: "v", Schema: StringSchema}}}
	r := &Record{Topic: "t", ValueSchema: s, Value: NewStruct(s).Put("id", int32(3)).Put("v", "x")}
	vk := &ValueToKey{}
	if err := vk.Configure(map[string]string{"fields": "id"}); err != nil {
		t.Fatal(err)
	}
	r, _ = vk.Apply(r)
	ex := &ExtractField{key: true}
	if err := ex.Configure(map[string]string{"field": "id"}); err != nil {
		t.Fatal(err)
	}
	r, err := ex.Apply(r)
	if err != nil || r.Key != int32(3) || r.KeySchema.Type != Int32 {
		t.Fatalf("key %v %v %v", r.Key, r.KeySchema, err)
	}
	p := &TopicNameMatches{}
	if err := p.Configure(map[string]string{"pattern": "t.*"}); err != nil || !p.Test(r) || p.Test(&Record{Topic: "xt"}) {
		t.Fatal("TopicNameMatches", err)
	}
}
