package registry

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

func TestSplitSubject(t *testing.T) {
	for _, c := range []struct{ in, ctx, name, canonical string }{
		{"orders", ".", "orders", "orders"},
		{":.a:orders", ".a", "orders", ":.a:orders"},
		{":.:orders", ".", "orders", "orders"},
		{":.a:", ".a", "", ":.a:"},
		{":.a", ".a", "", ":.a:"},
		{":.a.b:x:y", ".a.b", "x:y", ":.a.b:x:y"},
		{":a:orders", ".", ":a:orders", ":a:orders"},
	} {
		ctx, name := splitSubject(c.in)
		if ctx != c.ctx || name != c.name || canonicalSubject(c.in) != c.canonical {
			t.Errorf("%q: (%q, %q, %q), want (%q, %q, %q)", c.in, ctx, name, canonicalSubject(c.in), c.ctx, c.name, c.canonical)
		}
	}
}

func TestRewriteContextPath(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"/contexts/.a/subjects/s/versions", "/subjects/:.a:s/versions"},
		{"/contexts/a/subjects/s/versions/1", "/subjects/:.a:s/versions/1"},
		{"/contexts/.a/subjects/:.b:s/versions", "/subjects/:.b:s/versions"},
		{"/contexts/.a/subjects", "/subjects?subjectPrefix=%3A.a%3A"},
		{"/contexts/.a/subjects?subjectPrefix=x", "/subjects?subjectPrefix=%3A.a%3Ax"},
		{"/contexts/.a/schemas/ids/3", "/schemas/ids/3?subject=%3A.a%3A"},
		{"/contexts/.a/schemas/ids/3?subject=s", "/schemas/ids/3?subject=%3A.a%3As"},
		{"/contexts/.a/config", "/config/:.a:"},
		{"/contexts/.a/config/s", "/config/:.a:s"},
		{"/contexts/.a/mode", "/mode/:.a:"},
		{"/contexts/./config", "/config"},
		{"/contexts/.a/compatibility/subjects/s/versions/latest", "/compatibility/subjects/:.a:s/versions/latest"},
		{"/contexts/.a", "/contexts/.a"},
		{"/contexts", "/contexts"},
	} {
		u, err := url.Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if !rewriteContextPath(u) {
			t.Fatalf("%s: refused", c.in)
		}
		if u.RequestURI() != c.out {
			t.Errorf("%s: %s, want %s", c.in, u.RequestURI(), c.out)
		}
	}
	u, _ := url.Parse("/contexts/a:b/subjects")
	if rewriteContextPath(u) {
		t.Errorf("a context name with a colon was accepted")
	}
}

// do makes a raw request and returns the status and the body.
func do(t *testing.T, method, u, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// doJSON is do with the answer decoded into v; it fails the test unless
// the status is want.
func doJSON(t *testing.T, method, u, body string, want int, v any) {
	t.Helper()
	status, b := do(t, method, u, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, u, status, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, u, err, b)
		}
	}
}

func schemaBody(schema string) string {
	b, _ := json.Marshal(map[string]string{"schema": schema})
	return string(b)
}

func TestContexts(t *testing.T) {
	s := servertest.Start(t)
	broker := servertest.Addr(s)
	_, cl, base := startRegistry(t, broker, "_schemas_ctx")
	ctx := testContext(t)

	// The default context has ids 1 and 2.
	d1, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV1})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV2})
	if err != nil || d1.ID != 1 || d2.ID != 2 {
		t.Fatalf("default context ids: %+v %+v %v", d1, d2, err)
	}

	// Context .a allocates its own ids from 1, for another schema.
	// franz-go's sr.InContext sends its requests under /contexts/.a/.
	actx := sr.InContext(ctx, ".a")
	other := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	a1, err := cl.CreateSchema(actx, "orders-value", sr.Schema{Schema: other})
	if err != nil || a1.ID != 1 || a1.Version != 1 || a1.Subject != ":.a:orders-value" {
		t.Fatalf("first schema of .a: %+v %v", a1, err)
	}
	// userV1 in .a is new there: id 2 of .a, not id 1 of the default context.
	a2, err := cl.CreateSchema(actx, "users-value", sr.Schema{Schema: userV1})
	if err != nil || a2.ID != 2 {
		t.Fatalf("userV1 in .a: %+v %v", a2, err)
	}
	// The same schema in the same context keeps its id.
	a3, err := cl.CreateSchema(actx, ":.a:more-value", sr.Schema{Schema: other})
	if err != nil || a3.ID != 1 {
		t.Fatalf("same schema in .a: %+v %v", a3, err)
	}
	// The default context goes on from its own highest id.
	d3, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: other})
	if err != nil || d3.ID != 3 {
		t.Fatalf("default context after .a: %+v %v", d3, err)
	}

	t.Run("ids resolve in the subject's context", func(t *testing.T) {
		var got schemaResponse
		doJSON(t, "GET", base+"/schemas/ids/1", "", 200, &got)
		if got.Schema != userV1 {
			t.Fatalf("id 1 of the default context: %s", got.Schema)
		}
		doJSON(t, "GET", base+"/schemas/ids/1?subject=:.a:orders-value", "", 200, &got)
		if got.Schema != other {
			t.Fatalf("id 1 with subject :.a:orders-value: %s", got.Schema)
		}
		// An unqualified subject not in the default context is looked
		// for in each context.
		doJSON(t, "GET", base+"/schemas/ids/1?subject=more-value", "", 200, &got)
		if got.Schema != other {
			t.Fatalf("id 1 with subject more-value: %s", got.Schema)
		}
		// A qualified subject that does not use the id: not found.
		var e errorBody
		doJSON(t, "GET", base+"/schemas/ids/2?subject=:.a:orders-value", "", 404, &e)
		if e.ErrorCode != 40403 {
			t.Fatalf("id 2 of :.a:orders-value: %+v", e)
		}
		doJSON(t, "GET", base+"/contexts/.a/schemas/ids/2", "", 200, &got)
		if got.Schema != userV1 {
			t.Fatalf("/contexts/.a/schemas/ids/2: %s", got.Schema)
		}
		doJSON(t, "GET", base+"/schemas/ids/3?subject=:.a:", "", 404, &e)
		var subjects []string
		doJSON(t, "GET", base+"/schemas/ids/1/subjects?subject=:.a:", "", 200, &subjects)
		if strings.Join(subjects, ",") != ":.a:more-value,:.a:orders-value" {
			t.Fatalf("subjects of id 1 in .a: %v", subjects)
		}
		// franz-go's sr client, which passes the subject as a query parameter.
		byID, err := cl.SchemaByID(sr.WithParams(ctx, sr.Subject(":.a:users-value")), 2)
		if err != nil || byID.Schema != userV1 {
			t.Fatalf("sr SchemaByID in .a: %+v %v", byID, err)
		}
		byID, err = cl.SchemaByID(ctx, 2)
		if err != nil || byID.Schema != userV2 {
			t.Fatalf("sr SchemaByID in the default context: %+v %v", byID, err)
		}
	})

	t.Run("subjects and contexts", func(t *testing.T) {
		var contexts []string
		doJSON(t, "GET", base+"/contexts", "", 200, &contexts)
		if strings.Join(contexts, ",") != ".,.a" {
			t.Fatalf("contexts: %v", contexts)
		}
		doJSON(t, "GET", base+"/contexts?contextPrefix=.a", "", 200, &contexts)
		if strings.Join(contexts, ",") != ".a" {
			t.Fatalf("contexts with prefix .a: %v", contexts)
		}
		inA, err := cl.Subjects(actx)
		if err != nil || strings.Join(inA, ",") != ":.a:more-value,:.a:orders-value,:.a:users-value" {
			t.Fatalf("sr Subjects in .a: %v %v", inA, err)
		}
		all, err := cl.Subjects(ctx)
		if err != nil || strings.Join(all, ",") != ":.a:more-value,:.a:orders-value,:.a:users-value,orders-value,users-value" {
			t.Fatalf("all subjects: %v %v", all, err)
		}
		var subjects []string
		doJSON(t, "GET", base+"/contexts/.a/subjects", "", 200, &subjects)
		if strings.Join(subjects, ",") != ":.a:more-value,:.a:orders-value,:.a:users-value" {
			t.Fatalf("subjects of .a: %v", subjects)
		}
		doJSON(t, "GET", base+"/subjects?subjectPrefix=users", "", 200, &subjects)
		if strings.Join(subjects, ",") != "users-value" {
			t.Fatalf("prefix users: %v", subjects)
		}
		doJSON(t, "GET", base+"/subjects?subjectPrefix=:*:users", "", 200, &subjects)
		if strings.Join(subjects, ",") != ":.a:users-value,users-value" {
			t.Fatalf("prefix :*:users: %v", subjects)
		}
		var v schemaResponse
		doJSON(t, "GET", base+"/contexts/.a/subjects/users-value/versions/latest", "", 200, &v)
		if v.Subject != ":.a:users-value" || v.ID != 2 || v.Version != 1 {
			t.Fatalf("latest of :.a:users-value: %+v", v)
		}
		// ":.:s" is the subject s of the default context.
		doJSON(t, "GET", base+"/subjects/:.:users-value/versions/latest", "", 200, &v)
		if v.Subject != "users-value" || v.Version != 2 {
			t.Fatalf(":.:users-value: %+v", v)
		}
		var e errorBody
		doJSON(t, "GET", base+"/subjects/:.__GLOBAL:x/versions", "", 422, &e)
		if e.ErrorCode != 42208 {
			t.Fatalf("a subject in the global context: %+v", e)
		}
	})

	t.Run("config per context", func(t *testing.T) {
		// The context's level applies to its subjects, not to the
		// default context's, and the global level not to the context's.
		doJSON(t, "PUT", base+"/contexts/.a/config", `{"compatibility":"NONE"}`, 200, nil)
		var cfg map[string]any
		doJSON(t, "GET", base+"/config/:.a:", "", 200, &cfg)
		if cfg["compatibilityLevel"] != "NONE" {
			t.Fatalf("config of .a: %v", cfg)
		}
		if _, err := cl.RegisterSchema(ctx, ":.a:users-value", sr.Schema{Schema: userBad}, -1, -1); err != nil {
			t.Fatalf("incompatible schema under NONE in .a: %v", err)
		}
		if _, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userBad}); code(err) != 409 {
			t.Fatalf("incompatible schema in the default context: %v, want 409", err)
		}
		doJSON(t, "PUT", base+"/config", `{"compatibility":"FULL"}`, 200, nil)
		doJSON(t, "GET", base+"/config/:.a:users-value?defaultToGlobal=true", "", 200, &cfg)
		if cfg["compatibilityLevel"] != "NONE" {
			t.Fatalf("a subject of .a falls back to its context's level: %v", cfg)
		}
		doJSON(t, "DELETE", base+"/config", "", 200, nil)
		// READONLY on the context refuses registrations in it only.
		doJSON(t, "PUT", base+"/contexts/.a/mode", `{"mode":"READONLY"}`, 200, nil)
		if _, err := cl.CreateSchema(actx, "new-value", sr.Schema{Schema: userV1}); code(err) != 42205 {
			t.Fatalf("register in a READONLY context: %v, want 42205", err)
		}
		if _, err := cl.CreateSchema(ctx, "new-value", sr.Schema{Schema: userV1}); err != nil {
			t.Fatalf("register in the default context: %v", err)
		}
		doJSON(t, "DELETE", base+"/mode/:.a:", "", 200, nil)
	})

	t.Run("CONTEXT record in _schemas", func(t *testing.T) {
		rc, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("_schemas_ctx"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var key, value string
		for key == "" {
			fs := rc.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if strings.Contains(string(r.Key), `"CONTEXT"`) && key == "" {
					key, value = string(r.Key), string(r.Value)
				}
			})
		}
		if key != `{"keytype":"CONTEXT","tenant":"default","context":".a","magic":0}` ||
			value != `{"tenant":"default","context":".a"}` {
			t.Fatalf("CONTEXT record: %s = %s", key, value)
		}
	})

	t.Run("a restarted registry has the same contexts and ids", func(t *testing.T) {
		_, cl2, base2 := startRegistry(t, broker, "_schemas_ctx")
		var contexts []string
		doJSON(t, "GET", base2+"/contexts", "", 200, &contexts)
		if strings.Join(contexts, ",") != ".,.a" {
			t.Fatalf("contexts after restart: %v", contexts)
		}
		byID, err := cl2.SchemaByID(sr.WithParams(ctx, sr.Subject(":.a:orders-value")), 1)
		if err != nil || byID.Schema != other {
			t.Fatalf("id 1 of .a after restart: %+v %v", byID, err)
		}
		next, err := cl2.CreateSchema(sr.InContext(ctx, ".a"), "fresh-value", sr.Schema{Schema: `"string"`})
		if err != nil || next.ID != 4 {
			t.Fatalf("next id of .a after restart: %+v %v, want 4", next, err)
		}
	})

	t.Run("delete a context", func(t *testing.T) {
		var e errorBody
		doJSON(t, "DELETE", base+"/contexts/.a", "", 422, &e)
		if e.ErrorCode != 42211 {
			t.Fatalf("delete a context with subjects: %+v", e)
		}
		var subjects []string
		doJSON(t, "GET", base+"/contexts/.a/subjects", "", 200, &subjects)
		for _, s := range subjects {
			doJSON(t, "DELETE", base+"/subjects/"+s, "", 200, nil)
			doJSON(t, "DELETE", base+"/subjects/"+s+"?permanent=true", "", 200, nil)
		}
		if status, b := do(t, "DELETE", base+"/contexts/.a", ""); status != 204 {
			t.Fatalf("delete an empty context: %d %s", status, b)
		}
		var contexts []string
		doJSON(t, "GET", base+"/contexts", "", 200, &contexts)
		if strings.Join(contexts, ",") != "." {
			t.Fatalf("contexts after delete: %v", contexts)
		}
		doJSON(t, "GET", base+"/contexts/a:b/subjects", "", 400, &e)
	})

	t.Run("references resolve in the referrer's context", func(t *testing.T) {
		bctx := sr.InContext(ctx, ".b")
		addr := `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}`
		if _, err := cl.CreateSchema(bctx, "address", sr.Schema{Schema: addr}); err != nil {
			t.Fatal(err)
		}
		// "address" names :.b:address here; the default context has no
		// such subject.
		person, err := cl.CreateSchema(bctx, "person-value", sr.Schema{
			Schema:     `{"type":"record","name":"Person","namespace":"com.example","fields":[{"name":"home","type":"Address"}]}`,
			References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "address", Version: 1}},
		})
		if err != nil {
			t.Fatalf("person in .b: %v", err)
		}
		var ids []int
		doJSON(t, "GET", base+"/subjects/:.b:address/versions/1/referencedby", "", 200, &ids)
		if len(ids) != 1 || ids[0] != person.ID {
			t.Fatalf("referenced by: %v, want [%d]", ids, person.ID)
		}
		if _, err := cl.DeleteSubject(bctx, "address", sr.SoftDelete); code(err) != 42206 {
			t.Fatalf("delete a referenced subject of .b: %v, want 42206", err)
		}
		// A Protobuf import, as Confluent's serializers register them.
		if _, err := cl.CreateSchema(bctx, "geo.proto", sr.Schema{Type: sr.TypeProtobuf,
			Schema: "syntax = \"proto3\";\npackage geo;\nmessage Point { double lat = 1; }\n"}); err != nil {
			t.Fatal(err)
		}
		user, err := cl.CreateSchema(bctx, "user-value", sr.Schema{Type: sr.TypeProtobuf,
			Schema:     "syntax = \"proto3\";\nimport \"geo.proto\";\nmessage User { geo.Point at = 1; }\n",
			References: []sr.SchemaReference{{Name: "geo.proto", Subject: "geo.proto", Version: 1}}})
		if err != nil {
			t.Fatalf("Protobuf with an import in .b: %v", err)
		}
		// Registered again, the same schema is the same version.
		again, err := cl.RegisterSchema(bctx, "user-value", user.Schema, -1, -1)
		if err != nil || again != user.ID {
			t.Fatalf("again: %d %v, want %d", again, err, user.ID)
		}
		// In the default context the same reference is unresolved.
		if _, err := cl.CreateSchema(ctx, "user-value", user.Schema); code(err) != 42201 {
			t.Fatalf("the reference from the default context: %v, want 42201", err)
		}
	})
}
