package registry

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

// aliasesOf returns the aliases of a schema text's top-level record.
func aliasesOf(t *testing.T, text string) []string {
	t.Helper()
	var v struct {
		Aliases []string `json:"aliases"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return v.Aliases
}

// TestNormalize checks normalize=true on register and lookup, and the
// normalize setting of /config, through franz-go's sr client: schemas
// that differ only in alias order and reference order are one schema
// when normalized, two otherwise.
func TestNormalize(t *testing.T) {
	s := servertest.Start(t)
	_, cl, url := startRegistry(t, servertest.Addr(s), "_schemas")
	ctx := testContext(t)
	norm := sr.WithParams(ctx, sr.Normalize)
	const (
		za = `{"type":"record","name":"User","namespace":"com.example","aliases":["Zed","Alpha"],"fields":[{"name":"name","type":"string"}]}`
		az = `{"type": "record", "name": "User", "namespace": "com.example", "aliases": ["Alpha", "Zed"], "fields": [{"name": "name", "type": "string"}]}`
	)

	plain, err := cl.CreateSchema(ctx, "plain-value", sr.Schema{Schema: za})
	if err != nil {
		t.Fatal(err)
	}
	if other, err := cl.CreateSchema(ctx, "plain-value", sr.Schema{Schema: az}); err != nil || other.ID == plain.ID {
		t.Fatalf("without normalize, aliases in another order: %+v, %v (first id %d)", other, err, plain.ID)
	}

	n1, err := cl.CreateSchema(norm, "norm-value", sr.Schema{Schema: za})
	if err != nil {
		t.Fatal(err)
	}
	if got := aliasesOf(t, n1.Schema.Schema); !slices.Equal(got, []string{"com.example.Alpha", "com.example.Zed"}) {
		t.Errorf("stored normalized schema %s: aliases %v", n1.Schema.Schema, got)
	}
	n2, err := cl.CreateSchema(norm, "norm-value", sr.Schema{Schema: az})
	if err != nil || n2.ID != n1.ID || n2.Version != 1 {
		t.Errorf("normalized, aliases in another order: %+v, %v; want id %d version 1", n2, err, n1.ID)
	}
	// Lookup: the original text is found only when normalized.
	if got, err := cl.LookupSchema(norm, "norm-value", sr.Schema{Schema: za}); err != nil || got.ID != n1.ID {
		t.Errorf("lookup normalized: %+v, %v", got, err)
	}
	if _, err := cl.LookupSchema(ctx, "norm-value", sr.Schema{Schema: za}); code(err) != 40403 {
		t.Errorf("lookup of the unnormalized text without normalize: %v, want 40403", err)
	}

	// References: sorted, duplicates dropped.
	for _, ref := range []struct{ subject, schema string }{
		{"phone", `{"type":"record","name":"Phone","namespace":"com.example","fields":[{"name":"n","type":"string"}]}`},
		{"address", `{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"s","type":"string"}]}`},
	} {
		if _, err := cl.CreateSchema(ctx, ref.subject, sr.Schema{Schema: ref.schema}); err != nil {
			t.Fatal(err)
		}
	}
	const contact = `{"type":"record","name":"Contact","namespace":"com.example","fields":[{"name":"p","type":"Phone"},{"name":"a","type":"Address"}]}`
	phone := sr.SchemaReference{Name: "com.example.Phone", Subject: "phone", Version: 1}
	address := sr.SchemaReference{Name: "com.example.Address", Subject: "address", Version: 1}
	c1, err := cl.CreateSchema(norm, "contact-value", sr.Schema{Schema: contact, References: []sr.SchemaReference{phone, address, phone}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c1.References, []sr.SchemaReference{address, phone}) {
		t.Errorf("normalized references: %+v", c1.References)
	}
	if c2, err := cl.CreateSchema(norm, "contact-value", sr.Schema{Schema: contact, References: []sr.SchemaReference{address, phone}}); err != nil || c2.ID != c1.ID {
		t.Errorf("references in order: %+v, %v; want id %d", c2, err, c1.ID)
	}

	// The normalize setting of a subject's config applies without the
	// query parameter, and setting the level keeps it.
	// (Only normalize, as sr cannot send without a level.)
	if status, code := call(t, http.MethodPut, url+"/config/cfg-value", `{"normalize":true}`); status != http.StatusOK {
		t.Fatalf("PUT /config/cfg-value normalize: %d %d", status, code)
	}
	if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "cfg-value"); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if res := cl.Compatibility(ctx, "cfg-value"); res[0].Err != nil || !res[0].Normalize || res[0].Level != sr.CompatFull {
		t.Errorf("config of cfg-value: %+v", res[0])
	}
	if res := cl.Compatibility(ctx); res[0].Err != nil || res[0].Normalize || res[0].Level != sr.CompatBackward {
		t.Errorf("global config: %+v", res[0])
	}
	g1, err := cl.CreateSchema(ctx, "cfg-value", sr.Schema{Schema: za})
	if err != nil {
		t.Fatal(err)
	}
	if g1.ID != n1.ID {
		t.Errorf("cfg-value registered id %d, want the normalized schema's %d", g1.ID, n1.ID)
	}
	if got, err := cl.LookupSchema(ctx, "cfg-value", sr.Schema{Schema: az}); err != nil || got.Version != 1 {
		t.Errorf("lookup under a normalizing config: %+v, %v", got, err)
	}
	// Removing the config removes both.
	if res := cl.ResetCompatibility(ctx, "cfg-value"); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if _, err := cl.LookupSchema(ctx, "cfg-value", sr.Schema{Schema: za}); code(err) != 40403 {
		t.Errorf("lookup after the config is reset: %v, want 40403", err)
	}
}
