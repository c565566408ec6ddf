package registry

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/samsa-io/samsa/internal/servertest"
)

// msg builds a proto3 file of package p with message M holding body.
func msg(body string) string {
	return "syntax = \"proto3\";\npackage p;\nmessage M {\n" + body + "\n}\n"
}

// TestProtobufCompatibility checks compatibility decisions against
// evolution cases whose verdicts follow Confluent's Protobuf rules
// (Confluent's "Schema Evolution and Compatibility" for Protobuf: fields
// compared by number, scalar types in wire-compatible groups, message
// removal and new exclusivity in oneofs breaking).
func TestProtobufCompatibility(t *testing.T) {
	const (
		a      = "string a = 1;"
		b      = "int32 b = 2;"
		enumE  = "enum E { E0 = 0; E1 = 1; }"
		nested = "message N { int32 x = 1; }"
	)
	proto2 := func(body string) string {
		return "syntax = \"proto2\";\npackage p;\nmessage M {\n" + body + "\n}\n"
	}
	cases := []struct {
		name    string
		level   string
		history []string
		next    string
		want    bool
		broke   string // what the refusal must contain
	}{
		{"field added", "BACKWARD", []string{msg(a)}, msg(a + b), true, ""},
		{"field removed", "BACKWARD", []string{msg(a + b)}, msg(a), true, ""},
		{"field removed, forward", "FORWARD", []string{msg(a + b)}, msg(a), true, ""},
		{"field renumbered", "FULL", []string{msg(a)}, msg("string a = 2;"), true, ""},
		{"field renamed", "FULL", []string{msg(a)}, msg("string z = 1;"), true, ""},
		{"int32 to int64", "FULL", []string{msg(b)}, msg("int64 b = 2;"), true, ""},
		{"int32 to bool", "BACKWARD", []string{msg(b)}, msg("bool b = 2;"), true, ""},
		{"int32 to enum", "BACKWARD", []string{msg(b)}, msg(enumE + "E b = 2;"), true, ""},
		{"string to bytes", "FULL", []string{msg(a)}, msg("bytes a = 1;"), true, ""},
		{"int32 to sint32", "BACKWARD", []string{msg(b)}, msg("sint32 b = 2;"), false, `FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path '#/M/2' in the new schema`},
		{"fixed32 to fixed64", "BACKWARD", []string{msg("fixed32 f = 3;")}, msg("fixed64 f = 3;"), false, "FIELD_SCALAR_KIND_CHANGED"},
		{"string to int32", "FORWARD", []string{msg(a)}, msg("int32 a = 1;"), false, "'#/M/1' in the old schema"},
		{"scalar to message", "BACKWARD", []string{msg(b)}, msg(nested + "N b = 2;"), false, "FIELD_KIND_CHANGED"},
		{"scalar to map", "BACKWARD", []string{msg(a)}, msg("map<string, string> a = 1;"), false, "FIELD_KIND_CHANGED"},
		{"map value type changed", "BACKWARD", []string{msg("map<string, int32> m = 1;")}, msg("map<string, string> m = 1;"), false, "FIELD_SCALAR_KIND_CHANGED"},
		{"map value widened", "BACKWARD", []string{msg("map<string, int32> m = 1;")}, msg("map<string, int64> m = 1;"), true, ""},
		{"message type renamed", "BACKWARD", []string{msg(nested + "N n = 3;")}, msg("message O { int32 x = 1; } O n = 3;"), false, "FIELD_NAMED_TYPE_CHANGED"},
		{"nested message field changed", "BACKWARD", []string{msg(nested + "N n = 3;")}, msg("message N { string x = 1; } N n = 3;"), false, "'#/M/N/1'"},
		{"nested message field added", "FULL", []string{msg(nested + "N n = 3;")}, msg("message N { int32 x = 1; string y = 2; } N n = 3;"), true, ""},
		{"message removed", "BACKWARD", []string{msg(a) + "message Other { int32 x = 1; }"}, msg(a), false, `MESSAGE_REMOVED", description:"The new schema is missing a MESSAGE type at path '#/Other' in the old schema`},
		{"message added", "BACKWARD", []string{msg(a)}, msg(a) + "message Other { int32 x = 1; }", true, ""},
		{"message added, forward", "FORWARD", []string{msg(a)}, msg(a) + "message Other { int32 x = 1; }", false, "MESSAGE_REMOVED"},
		{"package changed", "BACKWARD", []string{msg(a)}, strings.Replace(msg(a), "package p;", "package q;", 1), false, "PACKAGE_CHANGED"},
		{"syntax changed", "FULL", []string{msg(a)}, proto2("optional string a = 1;"), true, ""},
		{"enum value added", "FULL", []string{msg(enumE + "E e = 1;")}, msg("enum E { E0 = 0; E1 = 1; E2 = 2; } E e = 1;"), true, ""},
		{"enum value removed", "FULL", []string{msg(enumE + "E e = 1;")}, msg("enum E { E0 = 0; } E e = 1;"), true, ""},
		{"numeric label changed", "BACKWARD", []string{proto2("optional int32 n = 1;")}, proto2("repeated int32 n = 1;"), false, "FIELD_NUMERIC_LABEL_CHANGED"},
		{"string label changed", "BACKWARD", []string{proto2("optional string s = 1;")}, proto2("repeated string s = 1;"), true, ""},
		{"required field added", "BACKWARD", []string{proto2("optional string s = 1;")}, proto2("optional string s = 1; required int32 r = 2;"), false, "REQUIRED_FIELD_ADDED"},
		{"required field removed", "BACKWARD", []string{proto2("optional string s = 1; required int32 r = 2;")}, proto2("optional string s = 1;"), false, "REQUIRED_FIELD_REMOVED"},
		{"optional field added, proto2", "FULL", []string{proto2("optional string s = 1;")}, proto2("optional string s = 1; optional int32 o = 2;"), true, ""},
		{"new oneof of one field", "BACKWARD", []string{msg(a + b)}, msg(a + "oneof o { int32 b = 2; }"), true, ""},
		{"two fields moved into a oneof", "BACKWARD", []string{msg(a + b)}, msg("oneof o { string a = 1; int32 b = 2; }"), false, "MULTIPLE_FIELDS_MOVED_TO_ONEOF"},
		{"field moved into an existing oneof", "BACKWARD", []string{msg(a + "oneof o { int32 b = 2; }")}, msg("oneof o { string a = 1; int32 b = 2; }"), false, "FIELD_MOVED_TO_EXISTING_ONEOF"},
		{"field added to a oneof", "BACKWARD", []string{msg("oneof o { string a = 1; }")}, msg("oneof o { string a = 1; int32 b = 2; }"), true, ""},
		{"field removed from a oneof", "BACKWARD", []string{msg("oneof o { string a = 1; int32 b = 2; }")}, msg("oneof o { string a = 1; }"), false, "ONEOF_FIELD_REMOVED"},
		{"whole oneof removed", "BACKWARD", []string{msg(a + "oneof o { int32 b = 2; }")}, msg(a), true, ""},
		{"oneof renamed", "BACKWARD", []string{msg("oneof o { string a = 1; int32 b = 2; }")}, msg("oneof r { string a = 1; int32 b = 2; }"), true, ""},
		{"field moved out of a oneof", "BACKWARD", []string{msg("oneof o { string a = 1; int32 b = 2; }")}, msg("oneof o { string a = 1; } int32 b = 2;"), true, ""},
		{"proto3 optional added", "FULL", []string{msg(b)}, msg("optional int32 b = 2;"), true, ""},
		{"anything under NONE", "NONE", []string{msg(a)}, msg("int32 a = 1;"), true, ""},
		{"latest only, not transitive", "BACKWARD", []string{msg(a), msg(b)}, msg("int64 b = 2;"), true, ""},
		{"transitive finds the older break", "BACKWARD_TRANSITIVE", []string{msg(a), msg(b)}, msg("int64 b = 2; int32 a = 1;"), false, "oldSchemaVersion: 1"},
		{"full, break one way", "FULL", []string{msg(a)}, msg(a) + "message Other { int32 x = 1; }", false, "MESSAGE_REMOVED"},
	}
	r := New(Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var history []*version
			for i, s := range tc.history {
				history = append(history, &version{Version: i + 1, SchemaType: typeProtobuf, Schema: s})
			}
			p, err := r.parse(typeProtobuf, tc.next, nil)
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

// TestProtobufParse checks the forms a schema is accepted in and what is
// refused: the text and base64 descriptor of one schema are the same
// schema, comments and layout do not count, bad text is refused with
// what is wrong.
func TestProtobufParse(t *testing.T) {
	r := New(Config{})
	text := msg("string a = 1; // the a\n int32 b = 2;")
	p, err := r.parse(typeProtobuf, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	same, err := r.parse(typeProtobuf, "syntax=\"proto3\"; package p; /* layout */ message M { string a=1; int32 b=2; }", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.key != same.key {
		t.Fatal("layout and comments change the schema's identity")
	}
	// Declaration order is normalized away, as Confluent's normalize does.
	reordered, err := r.parse(typeProtobuf, msg("int32 b = 2; string a = 1;"), nil)
	if err != nil || reordered.key != p.key {
		t.Fatalf("fields in another order: %v, or another identity", err)
	}
	o1, _ := r.parse(typeProtobuf, msg("oneof x { string a = 1; } oneof y { int32 b = 2; }"), nil)
	o2, _ := r.parse(typeProtobuf, msg("oneof y { int32 b = 2; } oneof x { string a = 1; }"), nil)
	o3, _ := r.parse(typeProtobuf, msg("oneof x { string a = 1; int32 b = 2; }"), nil)
	if o1 == nil || o2 == nil || o3 == nil || o1.key != o2.key || o1.key == o3.key {
		t.Fatal("oneofs in another order are another schema, or different oneofs the same")
	}
	desc, err := r.parse(typeProtobuf, serializedProto(p.proto), nil)
	if err != nil {
		t.Fatalf("base64 descriptor: %v", err)
	}
	if desc.key != p.key {
		t.Fatal("the descriptor form is not the same schema as the text")
	}
	// Generated code's descriptors (what Python's serializer sends) carry
	// no JSON names.
	bare, _ := protoDescriptor(serializedProto(p.proto))
	for _, f := range bare.MessageType[0].Field {
		f.JsonName = nil
	}
	b, _ := proto.Marshal(bare)
	if fromBare, err := r.parse(typeProtobuf, base64.StdEncoding.EncodeToString(b), nil); err != nil || fromBare.key != p.key {
		t.Fatalf("descriptor without JSON names: %v", err)
	}
	other, _ := r.parse(typeProtobuf, msg("string a = 1;"), nil)
	if other == nil || other.key == p.key {
		t.Fatal("different schemas share an identity")
	}
	if _, err := r.parse(typeProtobuf, "syntax = \"proto3\";\nimport \"google/protobuf/timestamp.proto\";\nimport \"confluent/meta.proto\";\nmessage T { google.protobuf.Timestamp at = 1; }", nil); err != nil {
		t.Fatalf("well-known and Confluent imports: %v", err)
	}
	if _, err := r.parse(typeProtobuf, "syntax = \"proto3\";\nimport \"confluent/meta.proto\";\nimport \"confluent/type/decimal.proto\";\n"+
		"message P { confluent.type.Decimal price = 1 [(confluent.field_meta).doc = \"in EUR\"]; }", nil); err != nil {
		t.Fatalf("Confluent's field metadata and decimal: %v", err)
	}
	typeless, _ := proto.Marshal(&descriptorpb.FileDescriptorProto{Name: proto.String("x.proto"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M"),
			Field: []*descriptorpb.FieldDescriptorProto{{Name: proto.String("a"), Number: proto.Int32(1)}}}}})
	for _, bad := range []struct{ text, says string }{
		{"syntax = \"proto3\"; message M { string a = 1 }", "syntax error"},
		{"abcd", "syntax error"}, // base64, but of no descriptor
		{base64.StdEncoding.EncodeToString(typeless), "M.a"},
		{"syntax = \"proto3\"; message M { Unknown a = 1; }", "Unknown"},
		{"syntax = \"proto3\"; import \"other.proto\"; message M { string a = 1; }", "other.proto"},
		{"syntax = \"proto3\"; message M { string a = 1; int32 b = 1; }", "1"},
	} {
		_, err := r.parse(typeProtobuf, bad.text, nil)
		if err == nil || err.Code != 42201 || !strings.Contains(err.Message, bad.says) {
			t.Errorf("%q: got %v, want 42201 saying %q", bad.text, err, bad.says)
		}
	}
}

// TestProtobufRegistry registers, looks up and evolves Protobuf schemas
// with imports as references through franz-go's sr client against a
// registry on a real broker.
func TestProtobufRegistry(t *testing.T) {
	s := servertest.Start(t)
	_, cl, url := startRegistry(t, servertest.Addr(s), "_schemas")
	ctx := testContext(t)
	const (
		address = "syntax = \"proto3\";\npackage geo;\nmessage Address {\n  string city = 1;\n}\n"
		user    = "syntax = \"proto3\";\npackage app;\nimport \"geo/address.proto\";\nimport \"google/protobuf/timestamp.proto\";\n\nmessage User {\n  string name = 1;\n  geo.Address home = 2;\n  google.protobuf.Timestamp since = 3;\n}\n"
	)
	types, err := cl.SupportedTypes(ctx)
	if err != nil || !slices.Contains(types, sr.TypeProtobuf) {
		t.Fatalf("supported types %v, %v: want PROTOBUF among them", types, err)
	}
	dep, err := cl.CreateSchema(ctx, "geo-address", sr.Schema{Schema: address, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	ref := sr.SchemaReference{Name: "geo/address.proto", Subject: "geo-address", Version: dep.Version}
	userSchema := sr.Schema{Schema: user, Type: sr.TypeProtobuf, References: []sr.SchemaReference{ref}}
	v1, err := cl.CreateSchema(ctx, "users-value", userSchema)
	if err != nil {
		t.Fatal(err)
	}
	// The same schema with other comments and layout is the same id.
	relaid := sr.Schema{Schema: strings.ReplaceAll(user, "\n", " // x\n"), Type: sr.TypeProtobuf, References: userSchema.References}
	if id, err := cl.RegisterSchema(ctx, "users-value", relaid, -1, -1); err != nil || id != v1.ID {
		t.Fatalf("re-registration: id %d, %v; want %d", id, err, v1.ID)
	}
	if got, err := cl.LookupSchema(ctx, "users-value", relaid); err != nil || got.ID != v1.ID || got.Version != 1 {
		t.Fatalf("lookup: %+v, %v", got, err)
	}
	byID, err := cl.SchemaByID(ctx, v1.ID)
	if err != nil || byID.Type != sr.TypeProtobuf || byID.Schema != user || len(byID.References) != 1 || byID.References[0] != ref {
		t.Fatalf("schema by id: %+v, %v", byID, err)
	}
	if refs, err := cl.SchemaReferences(ctx, "geo-address", dep.Version); err != nil || len(refs) != 1 || refs[0].ID != v1.ID {
		t.Fatalf("referenced by: %+v, %v", refs, err)
	}
	// format=serialized gives the base64 descriptor Confluent's Protobuf
	// deserializers read; registering that form is the same schema.
	ser, err := cl.SchemaByID(sr.WithParams(ctx, sr.Format("serialized")), v1.ID)
	if err != nil || ser.Schema == user {
		t.Fatalf("serialized: %+v, %v", ser, err)
	}
	if id, err := cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: ser.Schema, Type: sr.TypeProtobuf, References: userSchema.References}, -1, -1); err != nil || id != v1.ID {
		t.Fatalf("registering the descriptor form: id %d, %v; want %d", id, err, v1.ID)
	}
	// Registered in descriptor form, a schema is kept as .proto text.
	if _, err := cl.RegisterSchema(ctx, "users-desc-value", sr.Schema{Schema: ser.Schema, Type: sr.TypeProtobuf, References: userSchema.References}, -1, -1); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.SchemaByVersion(ctx, "users-desc-value", 1); err != nil || got.ID != v1.ID || !strings.Contains(got.Schema.Schema, "message User {") {
		t.Fatalf("descriptor form stored as %+v, %v; want .proto text under id %d", got, err, v1.ID)
	}

	// Evolution under the default BACKWARD level: a field added is
	// accepted, a field's type changed to another wire type is refused
	// with what broke.
	v2 := sr.Schema{Schema: strings.Replace(user, "}\n", "  int64 age = 4;\n}\n", 1), Type: sr.TypeProtobuf, References: userSchema.References}
	if _, err := cl.CreateSchema(ctx, "users-value", v2); err != nil {
		t.Fatalf("compatible evolution: %v", err)
	}
	bad := sr.Schema{Schema: strings.Replace(v2.Schema, "int64 age", "string age", 1), Type: sr.TypeProtobuf, References: userSchema.References}
	_, err = cl.CreateSchema(ctx, "users-value", bad)
	if code(err) != 409 || !strings.Contains(err.Error(), "FIELD_SCALAR_KIND_CHANGED") || !strings.Contains(err.Error(), "#/User/4") {
		t.Fatalf("incompatible evolution: %v, want 409 naming FIELD_SCALAR_KIND_CHANGED at #/User/4", err)
	}
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "users-value", -1, bad)
	if err != nil || res.Is || len(res.Messages) == 0 || !strings.Contains(res.Messages[0], `errorType:"FIELD_SCALAR_KIND_CHANGED"`) {
		t.Fatalf("verbose compatibility: %+v, %v", res, err)
	}
	// A change in the referenced schema is seen through the import.
	dep2, err := cl.CreateSchema(ctx, "geo-address", sr.Schema{Schema: strings.Replace(address, "string city", "int32 city", 1), Type: sr.TypeProtobuf})
	if err == nil {
		t.Fatalf("geo-address accepted an incompatible version %d", dep2.Version)
	}
	if err := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "geo-address")[0].Err; err != nil {
		t.Fatal(err)
	}
	dep2, err = cl.CreateSchema(ctx, "geo-address", sr.Schema{Schema: strings.Replace(address, "string city", "int32 city", 1), Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	moved := sr.Schema{Schema: v2.Schema, Type: sr.TypeProtobuf, References: []sr.SchemaReference{{Name: ref.Name, Subject: ref.Subject, Version: dep2.Version}}}
	if _, err = cl.CreateSchema(ctx, "users-value", moved); code(err) != 409 || !strings.Contains(err.Error(), "FIELD_NAMED_TYPE_CHANGED") {
		t.Fatalf("import changed incompatibly: %v, want 409 naming FIELD_NAMED_TYPE_CHANGED", err)
	}

	// Bad input: 42201 saying what is wrong, nothing stored.
	for _, tc := range []struct {
		name, body, says string
	}{
		{"malformed", `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; message M { string a = 1 }"}`, "syntax error"},
		{"unknown import", `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"x.proto\"; message M { string a = 1; }"}`, "x.proto"},
		{"missing reference", `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\";","references":[{"name":"x.proto","subject":"nope","version":1}]}`, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := post(t, url+"/subjects/bad-value/versions", tc.body)
			if status != 422 || msg.ErrorCode != 42201 || !strings.Contains(msg.Message, tc.says) {
				t.Fatalf("got %d %+v, want 422 42201 saying %q", status, msg, tc.says)
			}
		})
	}
	// References to "latest" are pinned to the latest version's number
	// when a schema is registered, as Confluent's registry pins them: a
	// imports b (latest, then 1), a new b imports a, and c importing a
	// still sees b's first version, not a cycle. (Cycles stored by other
	// means are refused: TestBadInputStoresNothing.)
	if _, err := cl.CreateSchema(ctx, "cyc-b", sr.Schema{Schema: "syntax = \"proto3\";\nmessage B {}\n", Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	a, err := cl.CreateSchema(ctx, "cyc-a", sr.Schema{Schema: "syntax = \"proto3\";\nimport \"b.proto\";\nmessage A { B b = 1; }\n", Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "b.proto", Subject: "cyc-b", Version: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.References) != 1 || a.References[0].Version != 1 {
		t.Fatalf("stored references of cyc-a: %+v, want cyc-b version 1", a.References)
	}
	if err := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "cyc-b")[0].Err; err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateSchema(ctx, "cyc-b", sr.Schema{Schema: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage B2 { A a = 1; }\n", Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "a.proto", Subject: "cyc-a", Version: -1}}}); err != nil {
		t.Fatal(err)
	}
	status, msg := post(t, url+"/subjects/cyc-c/versions", `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\";\nimport \"a.proto\";\nmessage C { A a = 1; }\n","references":[{"name":"a.proto","subject":"cyc-a","version":-1}]}`)
	if status != 200 {
		t.Fatalf("c importing a (latest): %d %+v, want 200", status, msg)
	}
	// The same schema with the reference pinned by hand is the same one.
	found, err := cl.LookupSchema(ctx, "cyc-c", sr.Schema{Schema: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage C { A a = 1; }\n", Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "a.proto", Subject: "cyc-a", Version: 1}}})
	if err != nil || found.Version != 1 {
		t.Fatalf("lookup with the pinned reference: %+v, %v", found, err)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || slices.Contains(subjects, "bad-value") {
		t.Fatalf("subjects %v, %v: a refused schema was stored", subjects, err)
	}
}

type errorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func post(t *testing.T, url, body string) (int, errorBody) {
	t.Helper()
	resp, err := http.Post(url, "application/vnd.schemaregistry.v1+json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e errorBody
	_ = jsonDecode(resp, &e)
	return resp.StatusCode, e
}

// TestProtobufText checks that a descriptor-form schema prints back as
// .proto text that is the same schema, and that what the printer does not
// cover is left in its registered form.
func TestProtobufText(t *testing.T) {
	r := New(Config{})
	rich := "syntax = \"proto3\";\npackage a.b;\nimport \"google/protobuf/timestamp.proto\";\n" +
		"message Outer {\n  message Inner { repeated int32 xs = 1; }\n  enum Kind { K0 = 0; K1 = 1; reserved 5 to 7; }\n" +
		"  Inner inner = 1;\n  map<string, Inner> byName = 2;\n  optional Kind kind = 3;\n  oneof choice { string s = 4; bytes b = 5; }\n" +
		"  google.protobuf.Timestamp at = 6;\n  reserved 8, 10 to 12, 100 to max;\n  reserved \"old\";\n  sint64 snake_case_name = 7;\n}\n" +
		"enum Top { T0 = 0; }\n"
	proto2 := "syntax = \"proto2\";\npackage p2;\nmessage M {\n  required string r = 1;\n  optional int32 o = 2;\n  repeated fixed64 f = 3;\n  extensions 100 to 199;\n}\n"
	for _, text := range []string{rich, proto2} {
		p, err := r.parse(typeProtobuf, text, nil)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := r.parse(typeProtobuf, serializedProto(p.proto), nil)
		if err != nil {
			t.Fatal(err)
		}
		stored := r.storedSchema(defaultContext, desc, "unchanged", nil)
		if !strings.HasPrefix(stored, "syntax = ") {
			t.Fatalf("descriptor of\n%s\nstored as %q", text, stored)
		}
		if again, err := r.parse(typeProtobuf, stored, nil); err != nil || again.key != p.key {
			t.Fatalf("printed text\n%s\nis not the schema: %v", stored, err)
		}
	}
	withOption := "syntax = \"proto3\";\noption java_package = \"x\";\nmessage M { string a = 1; }\n"
	p, err := r.parse(typeProtobuf, withOption, nil)
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := r.parse(typeProtobuf, serializedProto(p.proto), nil)
	if got := r.storedSchema(defaultContext, desc, "as given", nil); got != "as given" {
		t.Fatalf("a schema with options stored as %q, want it as given", got)
	}
	if got := r.storedSchema(defaultContext, p, "as given", nil); got != "as given" {
		t.Fatalf("a text schema stored as %q, want it as given", got)
	}
}
