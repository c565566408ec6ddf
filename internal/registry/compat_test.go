package registry

import (
	"strings"
	"testing"
)

// rec builds an Avro record schema named R with the given fields (JSON).
func rec(fields ...string) string {
	return `{"type":"record","name":"R","namespace":"ns","fields":[` + strings.Join(fields, ",") + `]}`
}

// TestAvroCompatibility checks compatibility decisions against evolution
// cases whose verdicts follow Confluent's documented rules (Schema
// Evolution and Compatibility: "Compatibility types") and Avro's schema
// resolution.
func TestAvroCompatibility(t *testing.T) {
	const (
		a        = `{"name":"a","type":"string"}`
		bDefault = `{"name":"b","type":"int","default":0}`
		b        = `{"name":"b","type":"int"}`
		aInt     = `{"name":"a","type":"int"}`
		aLong    = `{"name":"a","type":"long"}`
		aNull    = `{"name":"a","type":["null","string"],"default":null}`
		aRenamed = `{"name":"a2","type":"string","aliases":["a"]}`
	)
	enum := func(symbols string, def string) string {
		return `{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":[` + symbols + `]` + def + `}}]}`
	}
	cases := []struct {
		name    string
		level   string
		history []string
		next    string
		want    bool
		broke   string // a word the refusal must contain
	}{
		{"add field with default", "BACKWARD", []string{rec(a)}, rec(a, bDefault), true, ""},
		{"add field without default", "BACKWARD", []string{rec(a)}, rec(a, b), false, "'b'"},
		{"add field without default, forward", "FORWARD", []string{rec(a)}, rec(a, b), true, ""},
		{"delete field", "BACKWARD", []string{rec(a, b)}, rec(a), true, ""},
		{"delete field without default, forward", "FORWARD", []string{rec(a, b)}, rec(a), false, "'b'"},
		{"delete field with default, forward", "FORWARD", []string{rec(a, bDefault)}, rec(a), true, ""},
		{"add field with default, full", "FULL", []string{rec(a)}, rec(a, bDefault), true, ""},
		{"add field without default, full", "FULL", []string{rec(a)}, rec(a, b), false, "'b'"},
		{"delete field without default, full", "FULL", []string{rec(a, b)}, rec(a), false, "'b'"},
		{"promote int to long", "BACKWARD", []string{rec(aInt)}, rec(aLong), true, ""},
		{"promote int to long, forward", "FORWARD", []string{rec(aInt)}, rec(aLong), false, "TYPE_MISMATCH"},
		{"demote long to int", "BACKWARD", []string{rec(aLong)}, rec(aInt), false, "/fields/0/type"},
		{"string to int", "BACKWARD", []string{rec(a)}, rec(aInt), false, "TYPE_MISMATCH"},
		{"make field nullable", "BACKWARD", []string{rec(a)}, rec(aNull), true, ""},
		{"make field nullable, forward", "FORWARD", []string{rec(a)}, rec(aNull), false, "NULL"},
		{"enum symbol added", "BACKWARD", []string{enum(`"X"`, "")}, enum(`"X","Y"`, ""), true, ""},
		{"enum symbol added, forward", "FORWARD", []string{enum(`"X"`, "")}, enum(`"X","Y"`, ""), false, "MISSING_ENUM_SYMBOLS"},
		{"enum symbol added, forward, reader default", "FORWARD", []string{enum(`"X"`, `,"default":"X"`)}, enum(`"X","Y"`, `,"default":"X"`), true, ""},
		{"enum symbol removed", "BACKWARD", []string{enum(`"X","Y"`, "")}, enum(`"X"`, ""), false, "[Y]"},
		{"union branch missing", "BACKWARD", []string{rec(aInt)}, rec(aNull), false, "MISSING_UNION_BRANCH"},
		{"record renamed", "BACKWARD", []string{rec(a)}, strings.Replace(rec(a), `"name":"R"`, `"name":"S"`, 1), false, "NAME_MISMATCH"},
		{"record renamed with alias", "BACKWARD", []string{rec(a)}, strings.Replace(rec(a), `"name":"R"`, `"name":"S","aliases":["ns.R"]`, 1), true, ""},
		{"field renamed with alias", "BACKWARD", []string{rec(a)}, rec(aRenamed), true, ""},
		{"field renamed without alias", "BACKWARD", []string{rec(a)}, rec(`{"name":"a2","type":"string"}`), false, "'a2'"},
		{"anything under NONE", "NONE", []string{rec(a)}, `"int"`, true, ""},
		{"latest only, not transitive", "BACKWARD", []string{rec(a), rec(a, bDefault)}, rec(a, b), true, ""},
		{"transitive finds the older break", "BACKWARD_TRANSITIVE", []string{rec(a), rec(a, bDefault)}, rec(a, b), false, "oldSchemaVersion: 1"},
		{"forward transitive", "FORWARD_TRANSITIVE", []string{rec(a, b), rec(a, bDefault)}, rec(a), false, "oldSchemaVersion: 1"},
		{"full transitive", "FULL_TRANSITIVE", []string{rec(a), rec(a, bDefault)}, rec(a, bDefault, `{"name":"c","type":"int","default":1}`), true, ""},
		{"recursive type", "FULL", []string{`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"],"default":null}]}`},
			`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"],"default":null},{"name":"v","type":"int","default":0}]}`, true, ""},
		{"fixed size changed", "BACKWARD", []string{`{"type":"fixed","name":"F","size":4}`}, `{"type":"fixed","name":"F","size":8}`, false, "FIXED_SIZE_MISMATCH"},
		{"array items promoted", "BACKWARD", []string{`{"type":"array","items":"int"}`}, `{"type":"array","items":"double"}`, true, ""},
		{"map values changed", "BACKWARD", []string{`{"type":"map","values":"int"}`}, `{"type":"map","values":"string"}`, false, "/values"},
	}
	r := New(Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var history []*version
			for i, s := range tc.history {
				history = append(history, &version{Version: i + 1, SchemaType: typeAvro, Schema: s})
			}
			p, err := r.parse(typeAvro, tc.next, nil)
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
}
