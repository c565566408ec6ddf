package registry

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestBadInputStoresNothing sends every kind of bad registration, in each
// format, and checks Confluent's status and error code, and that the
// _schemas topic did not grow: nothing was stored.
func TestBadInputStoresNothing(t *testing.T) {
	s := servertest.Start(t)
	broker := servertest.Addr(s)
	const topic = "_schemas_bad"
	_, cl, base := startRegistry(t, broker, topic)
	ctx := testContext(t)

	// Reference cycles need references to "latest": a references b
	// (latest), then a new b references a, so whatever references a
	// comes back to a. One such pair per format.
	type format struct {
		typ              sr.SchemaType
		b1, a, b2, c     string
		aName, bName     string
		big, unknownType string
	}
	formats := []format{
		{
			typ: sr.TypeAvro, aName: "A", bName: "B",
			b1: `{"type":"record","name":"B","fields":[]}`,
			a:  `{"type":"record","name":"A","fields":[{"name":"b","type":"B"}]}`,
			b2: `{"type":"record","name":"B2","fields":[{"name":"a","type":"A"}]}`,
			c:  `{"type":"record","name":"C","fields":[{"name":"a","type":"A"}]}`,
		},
		{
			typ: sr.TypeJSON, aName: "https://example.com/a.json", bName: "https://example.com/b.json",
			b1: `{"$id":"https://example.com/b.json","type":"object"}`,
			a:  `{"$id":"https://example.com/a.json","type":"object","properties":{"b":{"$ref":"https://example.com/b.json"}}}`,
			b2: `{"$id":"https://example.com/b.json","type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
			c:  `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
		},
		{
			typ: sr.TypeProtobuf, aName: "a.proto", bName: "b.proto",
			b1: "syntax = \"proto3\";\nmessage B {}\n",
			a:  "syntax = \"proto3\";\nimport \"b.proto\";\nmessage A { B b = 1; }\n",
			b2: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage B2 { A a = 1; }\n",
			c:  "syntax = \"proto3\";\nimport \"a.proto\";\nmessage C { A a = 1; }\n",
		},
	}
	for _, f := range formats {
		name := strings.ToLower(f.typ.String())
		a, b := "cyc-a-"+name, "cyc-b-"+name
		if _, err := cl.CreateSchema(ctx, b, sr.Schema{Schema: f.b1, Type: f.typ}); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateSchema(ctx, a, sr.Schema{Schema: f.a, Type: f.typ,
			References: []sr.SchemaReference{{Name: f.bName, Subject: b, Version: -1}}}); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if err := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, b)[0].Err; err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateSchema(ctx, b, sr.Schema{Schema: f.b2, Type: f.typ,
			References: []sr.SchemaReference{{Name: f.aName, Subject: a, Version: -1}}}); err != nil {
			t.Fatalf("%s v2: %v", b, err)
		}
	}

	adm := kadm.NewClient(newClient(t, broker))
	endOffset := func() int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := ends.Lookup(topic, 0)
		if !ok || o.Err != nil {
			t.Fatalf("end offset of %s: %+v", topic, o)
		}
		return o.Offset
	}
	before := endOffset()
	subjectsBefore, err := cl.Subjects(ctx)
	if err != nil {
		t.Fatal(err)
	}

	body := func(schema string, typ sr.SchemaType, refs ...Reference) string {
		m := map[string]any{"schema": schema, "schemaType": typ.String()}
		if refs != nil {
			m["references"] = refs
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	type badCase struct {
		name, subject, body string
		status, code        int
		says                string
	}
	var cases []badCase
	for _, f := range formats {
		name := strings.ToLower(f.typ.String())
		cases = append(cases,
			badCase{name + ": 10 MB schema", "bad-" + name, body(strings.Repeat(" ", 10<<20)+f.b1, f.typ), 422, 42209, "too large"},
			badCase{name + ": a schema just over the limit", "bad-" + name,
				body(f.b1+strings.Repeat(" ", DefaultMaxSchemaBytes), f.typ), 422, 42209, "too large"},
			badCase{name + ": reference cycle", "bad-" + name,
				body(f.c, f.typ, Reference{Name: f.aName, Subject: "cyc-a-" + name, Version: -1}), 422, 42201, "circular"},
			badCase{name + ": malformed", "bad-" + name, body(f.b1[:len(f.b1)/2], f.typ), 422, 42201, ""},
			badCase{name + ": missing reference", "bad-" + name,
				body(f.c, f.typ, Reference{Name: f.aName, Subject: "nobody", Version: 1}), 422, 42201, "nobody"},
		)
		for _, subject := range []string{"__GLOBAL", "__EMPTY", "bad\x01" + name, ":.__GLOBAL:bad-" + name, ":.ctx:"} {
			cases = append(cases, badCase{fmt.Sprintf("%s: invalid subject %q", name, subject), subject, body(f.b1, f.typ), 422, 42208, "not a valid"})
		}
	}
	for _, typ := range []string{"XML", "avro2", "PROTOBUF3"} {
		cases = append(cases, badCase{"unknown schema type " + typ, "bad-type",
			`{"schema":"{}","schemaType":"` + typ + `"}`, 422, 42201, "Invalid schema type " + strings.ToUpper(typ)})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, b := do(t, "POST", base+"/subjects/"+url.PathEscape(tc.subject)+"/versions", tc.body)
			var e errorBody
			_ = json.Unmarshal(b, &e)
			if status != tc.status || e.ErrorCode != tc.code || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("%d %.300s, want %d %d saying %q", status, b, tc.status, tc.code, tc.says)
			}
		})
	}

	if after := endOffset(); after != before {
		t.Errorf("_schemas grew from %d to %d records: bad input was stored", before, after)
	}
	subjectsAfter, err := cl.Subjects(ctx)
	if err != nil || strings.Join(subjectsAfter, ",") != strings.Join(subjectsBefore, ",") {
		t.Errorf("subjects %v (%v), were %v", subjectsAfter, err, subjectsBefore)
	}
}

func newClient(t *testing.T, broker string) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
