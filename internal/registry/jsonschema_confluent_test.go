package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestConfluentJSONDiffExamples runs the JSON Schema evolution cases of
// Confluent's own provider tests through our diff when a checkout of
// confluentinc/schema-registry is named by
// SAMSA_CONFLUENT_SCHEMA_REGISTRY (their files are not copied here):
//
//	SAMSA_CONFLUENT_SCHEMA_REGISTRY=~/src/schema-registry go test -run TestConfluentJSONDiffExamples ./internal/registry
//
// Each case's "compatible" verdict (strict policy) must be ours, except
// where jsonschema_compat.go says we follow the drafts instead.
func TestConfluentJSONDiffExamples(t *testing.T) {
	root := os.Getenv("SAMSA_CONFLUENT_SCHEMA_REGISTRY")
	if root == "" {
		t.Skip("SAMSA_CONFLUENT_SCHEMA_REGISTRY not set")
	}
	deviations := map[string]bool{
		"Detect removed boolean additional items":   true, // additionalItems without an items array
		"Detect changes to additional items schema": true,
	}
	files, _ := filepath.Glob(filepath.Join(root, "json-schema-provider/src/test/resources/diff-*examples*.json"))
	if len(files) == 0 {
		t.Fatalf("no diff-*examples*.json under %s", root)
	}
	trailingComma := regexp.MustCompile(`,(\s*[}\]])`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []struct {
			Description string          `json:"description"`
			Original    json.RawMessage `json:"original_schema"`
			Update      json.RawMessage `json:"update_schema"`
			Compatible  bool            `json:"compatible"`
		}
		if err := json.Unmarshal(trailingComma.ReplaceAll(b, []byte("$1")), &cases); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cases {
			o, err := parseJSONSchema(string(c.Original), nil)
			if err != nil {
				t.Errorf("%s: %s: original: %v", filepath.Base(f), c.Description, err)
				continue
			}
			u, err := parseJSONSchema(string(c.Update), nil)
			if err != nil {
				t.Errorf("%s: %s: update: %v", filepath.Base(f), c.Description, err)
				continue
			}
			d := newJSONDiffer(o, u)
			diffs := d.compare(d.node(o.root), d.node(u.root))
			if got := compatible(diffs); got != c.Compatible && !deviations[c.Description] {
				t.Errorf("%s: %s: compatible %v, want %v: %v", filepath.Base(f), c.Description, got, c.Compatible, diffs)
			}
		}
	}
}
