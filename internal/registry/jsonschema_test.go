package registry

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

// obj builds a JSON Schema object with the given properties (JSON
// members) and extra keywords.
func obj(props string, extra ...string) string {
	return `{"type":"object","properties":{` + props + `}` + strings.Join(extra, "") + `}`
}

const closed = `,"additionalProperties":false`

// TestJSONSchemaCompatibility checks compatibility decisions against
// evolution cases whose verdicts follow Confluent's JSON Schema rules
// (its provider's default, strict policy): the content model decides
// what adding or removing a property means, narrowing a type or a
// bound breaks backward compatibility, widening does not.
func TestJSONSchemaCompatibility(t *testing.T) {
	const (
		a     = `"a":{"type":"string"}`
		b     = `"b":{"type":"integer"}`
		bDef  = `"b":{"type":"integer","default":0}`
		bAny  = `"b":{}`
		aInt  = `"a":{"type":"integer"}`
		aNum  = `"a":{"type":"number"}`
		aNull = `"a":{"type":["string","null"]}`
		reqB  = `,"required":["b"]`
		reqA  = `,"required":["a"]`
		strs  = `,"additionalProperties":{"type":"string"}`
	)
	enum := func(vs string) string { return `{"enum":[` + vs + `]}` }
	str := func(kw string) string { return `{"type":"string"` + kw + `}` }
	num := func(kw string) string { return `{"type":"number"` + kw + `}` }
	list := func(kw string) string {
		return `{"$ref":"#/definitions/node","definitions":{"node":{"type":"object","properties":{"v":` + kw + `,"next":{"$ref":"#/definitions/node"}},"additionalProperties":false}}}`
	}
	cases := []struct {
		name    string
		level   string
		history []string
		next    string
		want    bool
		broke   string // a word the refusal must contain
	}{
		// Open content model: data of the old schema may already hold
		// any property, so adding one breaks, removing one does not.
		{"open: optional property added", "BACKWARD", []string{obj(a)}, obj(a + "," + b), false, "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
		{"open: required property added", "BACKWARD", []string{obj(a)}, obj(a+","+b, reqB), false, "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
		{"open: property with empty schema added", "BACKWARD", []string{obj(a)}, obj(a + "," + bAny), true, ""},
		{"open: property removed", "BACKWARD", []string{obj(a + "," + b)}, obj(a), true, ""},
		{"open: property removed, forward", "FORWARD", []string{obj(a + "," + b)}, obj(a), false, "#/properties/b"},
		// Closed content model: nothing else was allowed.
		{"closed: optional property added", "BACKWARD", []string{obj(a, closed)}, obj(a+","+b, closed), true, ""},
		{"closed: required property added", "BACKWARD", []string{obj(a, closed)}, obj(a+","+b, closed, reqB), false, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
		{"closed: required property with default added", "BACKWARD", []string{obj(a, closed)}, obj(a+","+bDef, closed, reqB), true, ""},
		{"closed: property removed", "BACKWARD", []string{obj(a+","+b, closed)}, obj(a, closed), false, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
		{"closed: optional property added, full", "FULL", []string{obj(a, closed)}, obj(a+","+b, closed), false, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
		{"closed to open", "BACKWARD", []string{obj(a, closed)}, obj(a), true, ""},
		{"open to closed", "BACKWARD", []string{obj(a)}, obj(a, closed), false, "ADDITIONAL_PROPERTIES_REMOVED"},
		// Partially open: other properties must be strings.
		{"partially open: covered property added", "BACKWARD", []string{obj(a, strs)}, obj(a+`,"c":{"type":"string"}`, strs), true, ""},
		{"partially open: uncovered property added", "BACKWARD", []string{obj(a, strs)}, obj(a+","+b, strs), false, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
		{"partially open: covered property removed", "BACKWARD", []string{obj(a, strs)}, obj("", strs), true, ""},
		{"partially open: uncovered property removed", "BACKWARD", []string{obj(b, strs)}, obj("", strs), false, "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
		{"pattern properties cover an added property", "BACKWARD", []string{obj(a, `,"patternProperties":{"^n_":{"type":"number"}}`, closed)},
			obj(a+`,"n_x":{"type":"number","title":"x"}`, `,"patternProperties":{"^n_":{"type":"number"}}`, closed), true, ""},
		// Required.
		{"required added", "BACKWARD", []string{obj(a)}, obj(a, reqA), false, "REQUIRED_ATTRIBUTE_ADDED"},
		{"required removed", "BACKWARD", []string{obj(a, reqA)}, obj(a), true, ""},
		{"required removed, forward", "FORWARD", []string{obj(a, reqA)}, obj(a), false, "#/required/a"},
		// Types.
		{"integer widened to number", "BACKWARD", []string{obj(aInt)}, obj(aNum), true, ""},
		{"number narrowed to integer", "BACKWARD", []string{obj(aNum)}, obj(aInt), false, "TYPE_NARROWED"},
		{"integer widened to number, forward", "FORWARD", []string{obj(aInt)}, obj(aNum), false, "TYPE_NARROWED"},
		{"string to integer", "BACKWARD", []string{obj(a)}, obj(aInt), false, "TYPE_CHANGED"},
		{"made nullable", "BACKWARD", []string{obj(a)}, obj(aNull), true, ""},
		{"nullable made required", "BACKWARD", []string{obj(aNull)}, obj(a), false, "#/properties/a"},
		// Enums.
		{"enum extended", "BACKWARD", []string{enum(`"red","green"`)}, enum(`"red","green","blue"`), true, ""},
		{"enum narrowed", "BACKWARD", []string{enum(`"red","green"`)}, enum(`"red"`), false, "ENUM_ARRAY_NARROWED"},
		{"enum extended, forward", "FORWARD", []string{enum(`"red","green"`)}, enum(`"red","green","blue"`), false, "ENUM_ARRAY_NARROWED"},
		// Bounds.
		{"maxLength increased", "BACKWARD", []string{str(`,"maxLength":10`)}, str(`,"maxLength":20`), true, ""},
		{"maxLength decreased", "BACKWARD", []string{str(`,"maxLength":20`)}, str(`,"maxLength":10`), false, "MAX_LENGTH_DECREASED"},
		{"pattern added", "BACKWARD", []string{str("")}, str(`,"pattern":"^a"`), false, "PATTERN_ADDED"},
		{"minimum lowered", "BACKWARD", []string{num(`,"minimum":5`)}, num(`,"minimum":0`), true, ""},
		{"maximum added", "BACKWARD", []string{num("")}, num(`,"maximum":100`), false, "MAXIMUM_ADDED"},
		{"multipleOf reduced", "BACKWARD", []string{num(`,"multipleOf":4`)}, num(`,"multipleOf":2`), true, ""},
		{"multipleOf expanded", "BACKWARD", []string{num(`,"multipleOf":2`)}, num(`,"multipleOf":4`), false, "MULTIPLE_OF_EXPANDED"},
		{"draft 4 exclusive maximum raised", "BACKWARD", []string{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":10,"exclusiveMaximum":true}`},
			`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","maximum":20,"exclusiveMaximum":true}`, true, ""},
		// Combined schemas.
		{"oneOf branch added", "BACKWARD", []string{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`}, `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, true, ""},
		{"oneOf branch removed", "BACKWARD", []string{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`}, `{"oneOf":[{"type":"string"}]}`, false, "SUM_TYPE_NARROWED"},
		{"anyOf branch changed", "BACKWARD", []string{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`}, `{"anyOf":[{"type":"string"},{"type":"boolean"}]}`, false, "COMBINED_TYPE_SUBSCHEMAS_CHANGED"},
		{"oneOf to anyOf", "BACKWARD", []string{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`}, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, true, ""},
		{"anyOf to allOf", "BACKWARD", []string{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`}, `{"allOf":[{"type":"string"},{"type":"integer"}]}`, false, "COMBINED_TYPE_CHANGED"},
		{"type became a oneOf including it", "BACKWARD", []string{`{"type":"string"}`}, `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, true, ""},
		// Arrays (2020-12 tuples).
		{"tuple item added to closed tuple", "BACKWARD", []string{`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string"}],"items":false}`},
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, true, ""},
		{"array items type changed", "BACKWARD", []string{`{"type":"array","items":{"type":"string"}}`}, `{"type":"array","items":{"type":"integer"}}`, false, "#/items"},
		// Recursive schemas.
		{"recursive: unchanged but reworded", "FULL", []string{list(`{"type":"integer"}`)}, list(`{"type":"integer","description":"value"}`), true, ""},
		{"recursive: value type changed", "BACKWARD", []string{list(`{"type":"integer"}`)}, list(`{"type":"string"}`), false, "#/properties/v"},
		// Levels.
		{"anything under NONE", "NONE", []string{obj(a)}, `{"type":"integer"}`, true, ""},
		{"title changed, full", "FULL", []string{`{"title":"A","type":"string"}`}, `{"title":"B","type":"string"}`, true, ""},
		{"latest only, not transitive", "BACKWARD", []string{str(`,"maxLength":20`), str(`,"maxLength":10`)}, str(`,"maxLength":15`), true, ""},
		{"transitive finds the older break", "BACKWARD_TRANSITIVE", []string{str(`,"maxLength":20`), str(`,"maxLength":10`)}, str(`,"maxLength":15`), false, "oldSchemaVersion: 1"},
		{"forward transitive", "FORWARD_TRANSITIVE", []string{str(`,"maxLength":10`), str(`,"maxLength":20`)}, str(`,"maxLength":15`), false, "oldSchemaVersion: 1"},
		{"full transitive", "FULL_TRANSITIVE", []string{obj(a, closed), obj(a, closed, `,"title":"x"`)}, obj(a, closed, `,"title":"y"`), true, ""},
	}
	r := New(Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var history []*version
			for i, s := range tc.history {
				history = append(history, &version{Version: i + 1, SchemaType: typeJSON, Schema: s})
				if _, err := r.parse(typeJSON, s, nil); err != nil {
					t.Fatalf("history %d: %v", i+1, err)
				}
			}
			p, err := r.parse(typeJSON, tc.next, nil)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			msgs := r.compat(p, history, tc.level)
			if got := len(msgs) == 0; got != tc.want {
				t.Fatalf("compatible = %v, want %v: %v", got, tc.want, msgs)
			}
			if !tc.want && !strings.Contains(strings.Join(msgs, " "), tc.broke) {
				t.Fatalf("messages %v do not say %q", msgs, tc.broke)
			}
		})
	}
	t.Run("another schema type", func(t *testing.T) {
		p, err := r.parse(typeJSON, `{"type":"string"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs := r.compat(p, []*version{{Version: 1, SchemaType: typeAvro, Schema: `"string"`}}, "BACKWARD")
		if len(msgs) == 0 || !strings.Contains(msgs[0], "AVRO") {
			t.Fatalf("JSON after AVRO: %v", msgs)
		}
	})
}

// TestJSONSchemaParse checks what is refused as an invalid schema, with
// a message naming the problem, and what counts as the same schema.
func TestJSONSchemaParse(t *testing.T) {
	r := New(Config{})
	for _, tc := range []struct{ name, schema, says string }{
		{"malformed JSON", `{"type":"object"`, "malformed JSON"},
		{"trailing text", `{"type":"object"} x`, "malformed JSON"},
		{"type is a number", `{"type":5}`, "/type"},
		{"not a schema", `5`, "want boolean or object"},
		{"unresolvable $ref", `{"$ref":"other.json"}`, `no reference is named "other.json"`},
		{"missing definition", `{"$ref":"#/definitions/missing"}`, "definitions/missing"},
		{"$ref cycle", `{"$ref":"#/definitions/a","definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}}}`, "reference cycle"},
		{"allOf cycle", `{"allOf":[{"$ref":"#"}]}`, "reference cycle"},
		{"dependency cycle", `{"dependencies":{"a":{"$ref":"#"}}}`, "reference cycle"},
		{"remote metaschema", `{"$schema":"http://example.com/meta","type":"object"}`, "example.com/meta"},
		{"file reference", `{"$ref":"file:///etc/hostname"}`, "unresolvable $ref"},
	} {
		_, err := r.parse(typeJSON, tc.schema, nil)
		if err == nil || err.Code != 42201 || !strings.Contains(err.Message, tc.says) {
			t.Errorf("%s: %v, want 42201 saying %q", tc.name, err, tc.says)
		}
	}
	for _, ok := range []string{
		`true`, `{}`,
		`{"type":"object","properties":{"next":{"$ref":"#"}}}`,
		`{"$schema":"http://json-schema.org/draft-06/schema#","type":"string"}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a","maxLength":3}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string"}]}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$dynamicAnchor":"n","type":"object","properties":{"child":{"$dynamicRef":"#n"}}}`,
		`{"type":"object","dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
	} {
		if _, err := r.parse(typeJSON, ok, nil); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// A $ref to another document finds the reference it names, however
	// the name is written.
	addr := jsonRef{name: "address.json", doc: map[string]any{"type": "object"}}
	for _, tc := range []struct {
		schema string
		ref    jsonRef
	}{
		{`{"$ref":"address.json"}`, addr},
		{`{"$id":"https://example.com/person.json","$ref":"address.json"}`, addr},
		{`{"$ref":"https://example.com/address.json"}`, jsonRef{name: "https://example.com/address.json", doc: addr.doc}},
		{`{"$ref":"https://example.com/a.json"}`, jsonRef{name: "a", doc: addr.doc, id: "https://example.com/a.json"}},
	} {
		if _, err := parseJSONSchema(tc.schema, []jsonRef{tc.ref}); err != nil {
			t.Errorf("%s with a reference named %q: %v", tc.schema, tc.ref.name, err)
		}
	}
	if _, err := parseJSONSchema(`{"$ref":"other.json"}`, []jsonRef{addr}); err == nil {
		t.Errorf("a $ref no reference names resolved")
	}

	p1, _ := r.parse(typeJSON, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, nil)
	p2, _ := r.parse(typeJSON, "{\n  \"properties\": {\"b\": {\"type\": \"integer\"}, \"a\": {\"type\": \"string\"}},\n  \"type\": \"object\"\n}", nil)
	p3, _ := r.parse(typeJSON, `{"type":"object","properties":{"a":{"type":"string"}}}`, nil)
	if p1.key != p2.key || p1.key == p3.key {
		t.Errorf("identity: reordered and respaced equal %v, different schema differs %v", p1.key == p2.key, p1.key != p3.key)
	}
}

// TestJSONSchemaRegistry registers, looks up and evolves JSON schemas
// with a reference through franz-go's sr client, and produces and
// consumes records encoded with them through the broker.
func TestJSONSchemaRegistry(t *testing.T) {
	s := servertest.Start(t)
	broker := servertest.Addr(s)
	_, cl, url := startRegistry(t, broker, "_schemas")
	ctx := testContext(t)

	types, err := cl.SupportedTypes(ctx)
	if err != nil || !slicesContain(types, sr.TypeJSON) {
		t.Fatalf("supported types %v, %v", types, err)
	}
	const address = `{"$id":"https://example.com/address.json","type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	addr, err := cl.CreateSchema(ctx, "address-json", sr.Schema{Schema: address, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	person := sr.Schema{
		Type:       sr.TypeJSON,
		Schema:     `{"type":"object","properties":{"name":{"type":"string"},"home":{"$ref":"https://example.com/address.json"}},"required":["name"],"additionalProperties":false}`,
		References: []sr.SchemaReference{{Name: "https://example.com/address.json", Subject: "address-json", Version: 1}},
	}
	p1, err := cl.CreateSchema(ctx, "person-json-value", person)
	if err != nil {
		t.Fatal(err)
	}
	if p1.Type != sr.TypeJSON || p1.ID == addr.ID {
		t.Fatalf("registered %+v", p1)
	}
	// The same schema with its keys reordered is the same version.
	reordered := person
	reordered.Schema = `{"additionalProperties":false, "required":["name"], "properties":{"home":{"$ref":"https://example.com/address.json"}, "name":{"type":"string"}}, "type":"object"}`
	if again, err := cl.RegisterSchema(ctx, "person-json-value", reordered, -1, -1); err != nil || again != p1.ID {
		t.Fatalf("re-registration: id %d, %v; want %d", again, err, p1.ID)
	}
	found, err := cl.LookupSchema(ctx, "person-json-value", reordered)
	if err != nil || found.Version != 1 || found.ID != p1.ID || found.Type != sr.TypeJSON {
		t.Fatalf("lookup: %+v, %v", found, err)
	}
	byID, err := cl.SchemaByID(ctx, p1.ID)
	if err != nil || byID.Type != sr.TypeJSON || byID.Schema != person.Schema || len(byID.References) != 1 {
		t.Fatalf("by id: %+v, %v", byID, err)
	}
	refs, err := cl.SchemaReferences(ctx, "address-json", 1)
	if err != nil || len(refs) != 1 || refs[0].ID != p1.ID || refs[0].Type != sr.TypeJSON {
		t.Fatalf("referenced by: %+v, %v", refs, err)
	}

	// Evolution under the default BACKWARD level: a closed model takes
	// an optional property, not a new required one.
	v2 := person
	v2.Schema = strings.Replace(person.Schema, `"name":{"type":"string"}`, `"name":{"type":"string"},"age":{"type":"integer"}`, 1)
	p2, err := cl.CreateSchema(ctx, "person-json-value", v2)
	if err != nil || p2.Version != 2 {
		t.Fatalf("optional property: %+v, %v", p2, err)
	}
	bad := v2
	bad.Schema = strings.Replace(v2.Schema, `"required":["name"]`, `"required":["name","email"]`, 1)
	bad.Schema = strings.Replace(bad.Schema, `"age":{"type":"integer"}`, `"age":{"type":"integer"},"email":{"type":"string"}`, 1)
	_, err = cl.CreateSchema(ctx, "person-json-value", bad)
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 409 || !strings.Contains(re.Message, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL") || !strings.Contains(re.Message, "#/properties/email") {
		t.Fatalf("required property added: %v, want 409 naming it", err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "person-json-value", -1, bad)
	if err != nil || res.Is || len(res.Messages) == 0 {
		t.Fatalf("compatibility check: %+v, %v", res, err)
	}

	// Bad input: refused as an invalid schema, nothing stored.
	for _, body := range []string{
		`{"schemaType":"JSON","schema":"{\"type\":"}`,
		`{"schemaType":"JSON","schema":"{\"type\":5}"}`,
		`{"schemaType":"JSON","schema":"{\"$ref\":\"https://example.com/nowhere.json\"}"}`,
		`{"schemaType":"JSON","schema":"{\"$ref\":\"#/definitions/a\",\"definitions\":{\"a\":{\"$ref\":\"#\"}}}"}`,
		`{"schemaType":"JSON","schema":"{}","references":[{"name":"x.json","subject":"nobody","version":1}]}`,
	} {
		if status, code := call(t, http.MethodPost, url+"/subjects/bad-json-value/versions", body); status != 422 || code != 42201 {
			t.Errorf("%s: %d %d, want 422 42201", body, status, code)
		}
	}
	if subs, _ := cl.Subjects(ctx); contains(subs, "bad-json-value") {
		t.Errorf("bad input stored a subject: %v", subs)
	}

	// Typed records through the broker, encoded as Confluent's JSON
	// serializer does (magic byte, id, JSON).
	type home struct {
		City string `json:"city"`
	}
	type personRec struct {
		Name string `json:"name"`
		Age  int    `json:"age"`
		Home home   `json:"home"`
	}
	var serde sr.Serde
	serde.Register(p2.ID, personRec{}, sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))
	kcl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("people"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	in := personRec{Name: "ada", Age: 36, Home: home{City: "London"}}
	if err := kcl.ProduceSync(ctx, &kgo.Record{Topic: "people", Value: serde.MustEncode(in)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for {
		fs := kcl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			var out personRec
			if err := serde.Decode(recs[0].Value, &out); err != nil || out != in {
				t.Fatalf("decoded %+v, %v; want %+v", out, err, in)
			}
			// The record names the registered JSON schema.
			if id := binary.BigEndian.Uint32(recs[0].Value[1:5]); recs[0].Value[0] != 0 || id != uint32(p2.ID) {
				t.Fatalf("record header % x, want magic 0 and id %d", recs[0].Value[:5], p2.ID)
			}
			return
		}
	}
}

func slicesContain[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
