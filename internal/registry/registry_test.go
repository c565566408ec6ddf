package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

const (
	userV1 = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"name","type":"string"}]}`
	// userV2 adds a field with a default: backward compatible.
	userV2 = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	// userBad adds a field without a default: not backward compatible.
	userBad = `{"type":"record","name":"User","namespace":"com.example","fields":[{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
)

// startRegistry serves a registry over a real HTTP socket, on the given
// broker and topic, and returns a franz-go sr client of it.
func startRegistry(t testing.TB, broker, topic string) (*Registry, *sr.Client, string) {
	t.Helper()
	reg := New(Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(broker)}, Topic: topic, Logger: servertest.Logger()})
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() { srv.Close(); reg.Close() })
	// The first request opens the topic (create, wait for its leader,
	// replay): on a loaded machine more than sr's 5 s default timeout.
	cl, err := sr.NewClient(sr.URLs(srv.URL), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return reg, cl, srv.URL
}

// code returns the Confluent error code of an sr client error.
func code(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRegistry(t *testing.T) {
	s := servertest.Start(t)
	broker := servertest.Addr(s)
	_, cl, url := startRegistry(t, broker, "_schemas")
	ctx := testContext(t)

	t.Run("register and fetch", func(t *testing.T) {
		v1, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV1})
		if err != nil {
			t.Fatal(err)
		}
		if v1.Version != 1 || v1.ID < 1 {
			t.Fatalf("first registration: %+v", v1)
		}
		// The same schema, differently spaced, is the same version.
		again, err := cl.RegisterSchema(ctx, "users-value", sr.Schema{Schema: strings.ReplaceAll(userV1, ",", ", ")}, -1, -1)
		if err != nil || again != v1.ID {
			t.Fatalf("re-registration: id %d, %v; want %d", again, err, v1.ID)
		}
		byID, err := cl.SchemaByID(ctx, v1.ID)
		if err != nil || byID.Schema != userV1 {
			t.Fatalf("by id: %+v, %v", byID, err)
		}
		v2, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: userV2})
		if err != nil || v2.Version != 2 || v2.ID == v1.ID {
			t.Fatalf("second version: %+v, %v", v2, err)
		}
		vs, err := cl.SubjectVersions(ctx, "users-value")
		if err != nil || len(vs) != 2 || vs[0] != 1 || vs[1] != 2 {
			t.Fatalf("versions: %v, %v", vs, err)
		}
		latest, err := cl.SchemaByVersion(ctx, "users-value", -1)
		if err != nil || latest.Version != 2 || latest.Schema.Schema != userV2 {
			t.Fatalf("latest: %+v, %v", latest, err)
		}
		// The same schema under another subject keeps its id.
		other, err := cl.CreateSchema(ctx, "other-value", sr.Schema{Schema: userV1})
		if err != nil || other.ID != v1.ID || other.Version != 1 {
			t.Fatalf("other subject: %+v, %v", other, err)
		}
		subs, err := cl.SubjectsByID(ctx, v1.ID)
		if err != nil || strings.Join(subs, ",") != "other-value,users-value" {
			t.Fatalf("subjects of id: %v, %v", subs, err)
		}
		found, err := cl.LookupSchema(ctx, "users-value", sr.Schema{Schema: userV2})
		if err != nil || found.Version != 2 || found.ID != v2.ID {
			t.Fatalf("lookup: %+v, %v", found, err)
		}
		if _, err := cl.LookupSchema(ctx, "users-value", sr.Schema{Schema: userBad}); code(err) != 40403 {
			t.Fatalf("lookup of an unknown schema: %v, want 40403", err)
		}
		if _, err := cl.SchemaByID(ctx, 9999); code(err) != 40403 {
			t.Fatalf("unknown id: %v, want 40403", err)
		}
		if _, err := cl.SchemaByVersion(ctx, "users-value", 7); code(err) != 40402 {
			t.Fatalf("unknown version: %v, want 40402", err)
		}
		if _, err := cl.SubjectVersions(ctx, "nobody"); code(err) != 40401 {
			t.Fatalf("unknown subject: %v, want 40401", err)
		}
	})

	t.Run("compatibility", func(t *testing.T) {
		if _, err := cl.CreateSchema(ctx, "compat-value", sr.Schema{Schema: userV1}); err != nil {
			t.Fatal(err)
		}
		_, err := cl.CreateSchema(ctx, "compat-value", sr.Schema{Schema: userBad})
		var re *sr.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusConflict || re.ErrorCode != 409 || !strings.Contains(re.Message, "'email'") {
			t.Fatalf("incompatible registration: %v, want 409 naming the field", err)
		}
		res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "compat-value", -1, sr.Schema{Schema: userBad})
		if err != nil || res.Is || len(res.Messages) == 0 || !strings.Contains(res.Messages[0], "READER_FIELD_MISSING_DEFAULT_VALUE") {
			t.Fatalf("compatibility check: %+v, %v", res, err)
		}
		// With NONE the same schema is accepted.
		set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "compat-value")
		if set[0].Err != nil || set[0].Level != sr.CompatNone {
			t.Fatalf("set compatibility: %+v", set)
		}
		if got := cl.Compatibility(ctx, "compat-value"); got[0].Err != nil || got[0].Level != sr.CompatNone {
			t.Fatalf("subject compatibility: %+v", got)
		}
		if got := cl.Compatibility(ctx); got[0].Err != nil || got[0].Level != sr.CompatBackward {
			t.Fatalf("global compatibility: %+v", got)
		}
		if _, err := cl.CreateSchema(ctx, "compat-value", sr.Schema{Schema: userBad}); err != nil {
			t.Fatalf("registration under NONE: %v", err)
		}
	})

	t.Run("deletes", func(t *testing.T) {
		v1, err := cl.CreateSchema(ctx, "del-value", sr.Schema{Schema: userV1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.CreateSchema(ctx, "del-value", sr.Schema{Schema: userV2}); err != nil {
			t.Fatal(err)
		}
		if err := cl.DeleteSchema(ctx, "del-value", 1, sr.HardDelete); code(err) != 40407 {
			t.Fatalf("hard delete before soft: %v, want 40407", err)
		}
		if err := cl.DeleteSchema(ctx, "del-value", 1, sr.SoftDelete); err != nil {
			t.Fatal(err)
		}
		if err := cl.DeleteSchema(ctx, "del-value", 1, sr.SoftDelete); code(err) != 40406 {
			t.Fatalf("second soft delete of a version: %v, want 40406", err)
		}
		vs, err := cl.SubjectVersions(ctx, "del-value")
		if err != nil || len(vs) != 1 || vs[0] != 2 {
			t.Fatalf("versions after soft delete: %v, %v", vs, err)
		}
		// A soft-deleted schema is still readable by id (the id is
		// also other-value's here, so use the version with deleted).
		if _, err := cl.SchemaByVersion(sr.WithParams(ctx, sr.ShowDeleted), "del-value", 1); err != nil {
			t.Fatalf("soft-deleted version with deleted=true: %v", err)
		}
		if _, err := cl.DeleteSubject(ctx, "del-value", sr.HardDelete); code(err) != 40405 {
			t.Fatalf("hard delete of a live subject: %v, want 40405", err)
		}
		got, err := cl.DeleteSubject(ctx, "del-value", sr.SoftDelete)
		if err != nil || len(got) != 1 || got[0] != 2 {
			t.Fatalf("soft delete subject: %v, %v", got, err)
		}
		if _, err := cl.DeleteSubject(ctx, "del-value", sr.SoftDelete); code(err) != 40404 {
			t.Fatalf("second soft delete: %v, want 40404", err)
		}
		if subs, err := cl.Subjects(ctx); err != nil || contains(subs, "del-value") {
			t.Fatalf("subjects after soft delete: %v, %v", subs, err)
		}
		got, err = cl.DeleteSubject(ctx, "del-value", sr.HardDelete)
		if err != nil || len(got) != 2 {
			t.Fatalf("hard delete subject: %v, %v", got, err)
		}
		if _, err := cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), "del-value"); code(err) != 40401 {
			t.Fatalf("versions after hard delete: %v, want 40401", err)
		}
		// A new registration gets a fresh id, never a reused one.
		fresh, err := cl.CreateSchema(ctx, "del-value", sr.Schema{Schema: `{"type":"fixed","name":"F","size":4}`})
		if err != nil || fresh.ID <= v1.ID || fresh.Version != 1 {
			t.Fatalf("registration after hard delete: %+v, %v", fresh, err)
		}
	})

	t.Run("modes", func(t *testing.T) {
		if r := cl.SetMode(ctx, sr.ModeReadOnly, "ro-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if _, err := cl.CreateSchema(ctx, "ro-value", sr.Schema{Schema: userV1}); code(err) != 42205 {
			t.Fatalf("registration in READONLY: %v, want 42205", err)
		}
		if r := cl.Mode(ctx, "ro-value"); r[0].Err != nil || r[0].Mode != sr.ModeReadOnly {
			t.Fatalf("mode: %+v", r)
		}
		if r := cl.ResetMode(ctx, "ro-value"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if _, err := cl.CreateSchema(ctx, "ro-value", sr.Schema{Schema: userV1}); err != nil {
			t.Fatalf("registration after the mode is reset: %v", err)
		}
		if r := cl.SetMode(ctx, sr.ModeImport); r[0].Err == nil || code(r[0].Err) != 42205 {
			t.Fatalf("IMPORT on a registry with subjects: %+v, want 42205", r)
		}
		// IMPORT on an empty subject keeps the given id and version.
		if _, err := cl.RegisterSchema(ctx, "imported", sr.Schema{Schema: `"long"`}, 500, 3); code(err) != 42205 {
			t.Fatalf("explicit id outside IMPORT: %v, want 42205", err)
		}
		if r := cl.SetMode(ctx, sr.ModeImport, "imported"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if id, err := cl.RegisterSchema(ctx, "imported", sr.Schema{Schema: `"long"`}, 500, 3); err != nil || id != 500 {
			t.Fatalf("import: id %d, %v; want 500", id, err)
		}
		if got, err := cl.SchemaByVersion(ctx, "imported", 3); err != nil || got.ID != 500 {
			t.Fatalf("imported version 3: %+v, %v", got, err)
		}
		if _, err := cl.RegisterSchema(ctx, "imported", sr.Schema{Schema: `"double"`}, 500, 4); code(err) != 42207 {
			t.Fatalf("import of another schema under a taken id: %v, want 42207", err)
		}
		// Ids continue after the highest imported one.
		if id, err := cl.RegisterSchema(ctx, "after-import", sr.Schema{Schema: `"float"`}, -1, -1); err != nil || id != 501 {
			t.Fatalf("id after import: %d, %v; want 501", id, err)
		}
	})

	t.Run("references", func(t *testing.T) {
		addr := `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}`
		if _, err := cl.CreateSchema(ctx, "address", sr.Schema{Schema: addr}); err != nil {
			t.Fatal(err)
		}
		person := sr.Schema{
			Schema:     `{"type":"record","name":"Person","namespace":"com.example","fields":[{"name":"home","type":"Address"}]}`,
			References: []sr.SchemaReference{{Name: "com.example.Address", Subject: "address", Version: 1}},
		}
		p, err := cl.CreateSchema(ctx, "person-value", person)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := cl.SchemaReferences(ctx, "address", 1)
		if err != nil || len(refs) != 1 || refs[0].ID != p.ID {
			t.Fatalf("referenced by: %+v, %v", refs, err)
		}
		if _, err := cl.DeleteSubject(ctx, "address", sr.SoftDelete); code(err) != 42206 {
			t.Fatalf("delete of a referenced subject: %v, want 42206", err)
		}
		person.References = nil
		if _, err := cl.CreateSchema(ctx, "person2-value", person); code(err) != 42201 {
			t.Fatalf("unresolved name: %v, want 42201", err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, body string
			status, code     int
		}{
			{"malformed schema", "/subjects/bad-value/versions", `{"schema":"{\"type\":\"record\""}`, 422, 42201},
			{"unknown field type", "/subjects/bad-value/versions", `{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"nope\"}]}"}`, 422, 42201},
			{"unknown schema type", "/subjects/bad-value/versions", `{"schema":"{}","schemaType":"XML"}`, 422, 42201},
			{"oversized schema", "/subjects/bad-value/versions", `{"schema":"` + strings.Repeat("x", 10<<20) + `"}`, 422, 42209},
			{"invalid subject", "/subjects/__GLOBAL/versions", `{"schema":"\"string\""}`, 422, 42208},
			{"invalid version", "/subjects/users-value/versions/0", "", 422, 42202},
			{"method not allowed", "/schemas/types", `{}`, 405, 405},
			{"unknown path", "/nothing/here", `{}`, 404, 404},
			{"unknown JSON fields ignored", "/subjects/extra-value/versions", `{"schema":"\"string\"","someNewField":1}`, 200, 0},
		} {
			method := http.MethodPost
			if tc.body == "" {
				method = http.MethodGet
			}
			status, code := call(t, method, url+tc.path, tc.body)
			if status != tc.status || code != tc.code {
				t.Errorf("%s: status %d code %d, want %d %d", tc.name, status, code, tc.status, tc.code)
			}
		}
		if subs, _ := cl.Subjects(ctx); contains(subs, "bad-value") {
			t.Errorf("bad input stored a subject: %v", subs)
		}
	})

	t.Run("serde through the broker", func(t *testing.T) {
		type user struct {
			Name string `avro:"name"`
			Age  int    `avro:"age"`
		}
		ss, err := cl.CreateSchema(ctx, "events-value", sr.Schema{Schema: userV2})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cl.SchemaByID(ctx, ss.ID)
		if err != nil {
			t.Fatal(err)
		}
		schema := avro.MustParse(got.Schema)
		var serde sr.Serde
		serde.Register(ss.ID, user{},
			sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
			sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
		kcl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("events"), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer kcl.Close()
		in := user{Name: "ada", Age: 36}
		if err := kcl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: serde.MustEncode(in)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for {
			fs := kcl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatal(err)
			}
			if recs := fs.Records(); len(recs) > 0 {
				var out user
				if err := serde.Decode(recs[0].Value, &out); err != nil || out != in {
					t.Fatalf("decoded %+v, %v; want %+v", out, err, in)
				}
				return
			}
		}
	})

	t.Run("topic format", func(t *testing.T) {
		// Our records are Confluent's: read _schemas raw.
		kcl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("_schemas"))
		if err != nil {
			t.Fatal(err)
		}
		defer kcl.Close()
		want := map[string]string{
			`{"keytype":"SCHEMA","subject":"users-value","version":1,"magic":1}`: `{"subject":"users-value","version":1,"id":1,"schema":` + strconv.Quote(userV1) + `,"deleted":false}`,
			`{"keytype":"CONFIG","subject":"compat-value","magic":0}`:            `{"subject":"compat-value","compatibilityLevel":"NONE"}`,
		}
		for len(want) > 0 {
			fs := kcl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("records not found: %v", want)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if v, ok := want[string(r.Key)]; ok {
					if string(r.Value) != v {
						t.Errorf("value of %s:\n got %s\nwant %s", r.Key, r.Value, v)
					}
					delete(want, string(r.Key))
				}
			})
		}
	})

	t.Run("reads Confluent's records", func(t *testing.T) {
		kcl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer kcl.Close()
		recs := [][2]string{
			{`{"keytype":"NOOP","magic":0}`, ``},
			{`{"keytype":"CONFIG","magic":0}`, `{"compatibilityLevel":"FULL","normalize":false,"alias":null}`},
			{`{"keytype":"SCHEMA","subject":"t-value","version":1,"magic":1}`, `{"subject":"t-value","version":1,"id":7,"md5":"AAAA","schema":"\"string\"","deleted":false,"somethingNew":1}`},
			{`{"keytype":"SCHEMA","subject":"t-value","version":2,"magic":1}`, `{"subject":"t-value","version":2,"id":8,"schema":"\"long\"","deleted":false}`},
			{`{"keytype":"DELETE_SUBJECT","subject":"t-value","magic":0}`, `{"subject":"t-value","version":1}`},
			{`{"keytype":"CONTEXT","tenant":"default","context":".ctx","magic":0}`, `{"tenant":"default","context":".ctx"}`},
		}
		for _, kv := range recs {
			r := &kgo.Record{Topic: "_confluent_schemas", Key: []byte(kv[0])}
			if kv[1] != "" {
				r.Value = []byte(kv[1])
			}
			if err := kcl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		_, cl3, _ := startRegistry(t, broker, "_confluent_schemas")
		vs, err := cl3.SubjectVersions(ctx, "t-value")
		if err != nil || len(vs) != 1 || vs[0] != 2 {
			t.Fatalf("versions: %v, %v", vs, err)
		}
		if got := cl3.Compatibility(ctx); got[0].Err != nil || got[0].Level != sr.CompatFull {
			t.Fatalf("global level: %+v", got)
		}
		if s, err := cl3.SchemaByID(ctx, 7); err != nil || s.Schema != `"string"` {
			t.Fatalf("id 7: %+v, %v", s, err)
		}
		// The next id follows the highest one in the topic.
		id, err := cl3.RegisterSchema(ctx, "u-value", sr.Schema{Schema: `"bytes"`}, -1, -1)
		if err != nil || id != 9 {
			t.Fatalf("new id %d, %v; want 9", id, err)
		}
		if c, err := cl3.Contexts(ctx); err != nil || strings.Join(c, ",") != ".,.ctx" {
			t.Fatalf("contexts: %v, %v", c, err)
		}
	})

	t.Run("replay", func(t *testing.T) {
		// A second registry on the same topic sees the same state.
		_, cl2, _ := startRegistry(t, broker, "_schemas")
		vs, err := cl2.SubjectVersions(ctx, "users-value")
		if err != nil || len(vs) != 2 {
			t.Fatalf("replayed versions: %v, %v", vs, err)
		}
		if r := cl2.Compatibility(ctx, "compat-value"); r[0].Err != nil || r[0].Level != sr.CompatNone {
			t.Fatalf("replayed config: %+v", r)
		}
		if _, err := cl2.SubjectVersions(ctx, "del-value"); err != nil {
			t.Fatalf("replayed re-created subject: %v", err)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// call makes a raw request and returns the status and Confluent error
// code of the answer.
func call(t *testing.T, method, url, body string) (int, int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Code int `json:"error_code"`
	}
	if resp.StatusCode != http.StatusOK {
		_ = jsonDecode(resp, &e)
	}
	if ct := resp.Header.Get("Content-Type"); ct != contentType {
		t.Errorf("%s %s: content type %q", method, url, ct)
	}
	return resp.StatusCode, e.Code
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
