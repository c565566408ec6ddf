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
	reg, cl, base := startRegistry(t, broker, topic)
	ctx := testContext(t)

	// A reference cycle cannot be registered (references are checked
	// and "latest" is pinned when a schema is registered), but a topic
	// written by other means may hold one: a version 1 references b
	// version 1 and b version 1 references a version 1, written straight
	// to _schemas. Whatever references a then comes back to a.
	type format struct {
		typ                  sr.SchemaType
		a, b, c              string
		aName, bName, sample string
	}
	formats := []format{
		{
			typ: sr.TypeAvro, aName: "A", bName: "B", sample: `{"type":"record","name":"S","fields":[]}`,
			a: `{"type":"record","name":"A","fields":[{"name":"b","type":"B"}]}`,
			b: `{"type":"record","name":"B","fields":[{"name":"a","type":"A"}]}`,
			c: `{"type":"record","name":"C","fields":[{"name":"a","type":"A"}]}`,
		},
		{
			typ: sr.TypeJSON, aName: "https://example.com/a.json", bName: "https://example.com/b.json", sample: `{"type":"object"}`,
			a: `{"$id":"https://example.com/a.json","type":"object","properties":{"b":{"$ref":"https://example.com/b.json"}}}`,
			b: `{"$id":"https://example.com/b.json","type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
			c: `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
		},
		{
			typ: sr.TypeProtobuf, aName: "a.proto", bName: "b.proto", sample: "syntax = \"proto3\";\nmessage S {}\n",
			a: "syntax = \"proto3\";\nimport \"b.proto\";\nmessage A { B b = 1; }\n",
			b: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage B { A a = 1; }\n",
			c: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage C { A a = 1; }\n",
		},
	}
	if _, err := cl.Subjects(ctx); err != nil { // opens the topic
		t.Fatal(err)
	}
	for i, f := range formats {
		name := strings.ToLower(f.typ.String())
		a, b := "cyc-a-"+name, "cyc-b-"+name
		typ := f.typ.String()
		if f.typ == sr.TypeAvro {
			typ = ""
		}
		for _, v := range []schemaValue{
			{Subject: a, Version: 1, ID: 1000 + 2*i, SchemaType: typ, Schema: f.a, References: []Reference{{Name: f.bName, Subject: b, Version: 1}}},
			{Subject: b, Version: 1, ID: 1001 + 2*i, SchemaType: typ, Schema: f.b, References: []Reference{{Name: f.aName, Subject: a, Version: 1}}},
		} {
			if err := reg.put(ctx, reg.log, schemaKey(v.Subject, 1), v); err != nil {
				t.Fatal(err)
			}
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
			badCase{name + ": 10 MB schema", "bad-" + name, body(strings.Repeat(" ", 10<<20)+f.sample, f.typ), 422, 42209, "too large"},
			badCase{name + ": a schema just over the limit", "bad-" + name,
				body(f.sample+strings.Repeat(" ", DefaultMaxSchemaBytes), f.typ), 422, 42209, "too large"},
			badCase{name + ": reference cycle", "bad-" + name,
				body(f.c, f.typ, Reference{Name: f.aName, Subject: "cyc-a-" + name, Version: 1}), 422, 42201, "circular"},
			badCase{name + ": reference cycle through latest", "bad-" + name,
				body(f.c, f.typ, Reference{Name: f.aName, Subject: "cyc-a-" + name, Version: -1}), 422, 42201, "circular"},
			badCase{name + ": malformed", "bad-" + name, body(f.sample[:len(f.sample)/2], f.typ), 422, 42201, ""},
			badCase{name + ": missing reference", "bad-" + name,
				body(f.c, f.typ, Reference{Name: f.aName, Subject: "nobody", Version: 1}), 422, 42201, "nobody"},
		)
		for _, subject := range []string{"__GLOBAL", "__EMPTY", "bad\x01" + name, ":.__GLOBAL:bad-" + name, ":.ctx:"} {
			cases = append(cases, badCase{fmt.Sprintf("%s: invalid subject %q", name, subject), subject, body(f.sample, f.typ), 422, 42208, "not a valid"})
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
