package registry

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schema (schemaType JSON): drafts 4, 6, 7, 2019-09 and 2020-12,
// compiled by santhosh-tekuri/jsonschema. A schema without "$schema" is
// read as draft 7, as Confluent's provider does. A "$ref" to another
// document resolves only through the schema's references: the reference
// whose name is the URL the $ref uses (absolute, or relative to the
// schema). Nothing is ever fetched from the network or the file system.

// jsonBase is the URL the schema being parsed is compiled under; a
// relative reference name resolves against it.
const (
	jsonBaseDir = "mem://registry/"
	jsonBase    = jsonBaseDir + "schema.json"
)

// parsedJSON is a compiled JSON Schema with its references resolved.
type parsedJSON struct {
	root *jsonschema.Schema
	// canonical identifies the schema for de-duplication: the document
	// written back as JSON with sorted keys, so whitespace and key order
	// do not make two equal schemas different.
	canonical string
	// texts holds the canonical text of each subschema, so that
	// duplicates in an allOf, anyOf or oneOf count once.
	texts map[*jsonschema.Schema]string
}

// jsonRef is a referenced schema: the name its referrer's $ref uses,
// and its document.
type jsonRef struct {
	name string
	doc  any
	id   string // its own "$id", if any
}

// parseJSON checks a JSON Schema with its references.
func (r *Registry) parseJSON(ctx, text string, refs []Reference) (*parsed, *Error) {
	named, err := r.jsonReferences(ctx, refs, map[string]bool{})
	if err != nil {
		return nil, err
	}
	p, perr := parseJSONSchema(text, named)
	if perr != nil {
		return nil, invalidSchema("Invalid schema of type %s, details: %v", typeJSON, perr)
	}
	refKey, _ := json.Marshal(refs)
	return &parsed{typ: typeJSON, json: p, key: typeJSON + "\x00" + p.canonical + "\x00" + string(refKey)}, nil
}

// jsonReferences returns refs and everything they reference, each with
// its name. A reference cycle or a missing reference is an invalid
// schema.
func (r *Registry) jsonReferences(ctx string, refs []Reference, visiting map[string]bool) ([]jsonRef, *Error) {
	var out []jsonRef
	for _, ref := range refs {
		if ref.Name == "" || ref.Subject == "" {
			return nil, invalidSchema("Invalid schema reference %s: name and subject are required", refString(ref))
		}
		v, err := r.version(refSubject(ctx, ref.Subject), ref.Version, false)
		if err != nil {
			return nil, invalidSchema("Invalid schema reference %s: %s", refString(ref), err.Message)
		}
		id := v.Subject + "\x00" + strconv.Itoa(v.Version)
		if visiting[id] {
			return nil, invalidSchema("Invalid schema reference %s: circular reference", refString(ref))
		}
		if v.SchemaType != typeJSON {
			return nil, invalidSchema("Invalid schema reference %s: a JSON schema can reference only JSON schemas, not %s", refString(ref), v.SchemaType)
		}
		doc, derr := jsonschema.UnmarshalJSON(strings.NewReader(v.Schema))
		if derr != nil {
			return nil, invalidSchema("Invalid schema reference %s: %v", refString(ref), derr)
		}
		out = append(out, jsonRef{name: ref.Name, doc: doc, id: jsonID(doc)})
		visiting[id] = true
		deeper, rerr := r.jsonReferences(contextOf(v.Subject), v.References, visiting)
		delete(visiting, id)
		if rerr != nil {
			return nil, rerr
		}
		out = append(out, deeper...)
	}
	return out, nil
}

// jsonID is a document's own "$id" (or draft 4's "id"), without a
// trailing empty fragment.
func jsonID(doc any) string {
	obj, _ := doc.(map[string]any)
	id, _ := obj["$id"].(string)
	if id == "" {
		id, _ = obj["id"].(string)
	}
	return strings.TrimSuffix(id, "#")
}

// parseJSONSchema compiles text, resolving $refs to other documents
// through refs.
func parseJSONSchema(text string, refs []jsonRef) (*parsedJSON, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	loader := &refLoader{refs: refs, rootID: jsonID(doc), served: map[string]any{jsonBase: doc}}
	c.UseLoader(loader)
	if err := c.AddResource(jsonBase, doc); err != nil {
		return nil, err
	}
	root, err := c.Compile(jsonBase)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), jsonBase, ""))
	}
	all := reachable(root)
	if err := checkInPlaceCycles(all); err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	texts := map[*jsonschema.Schema]string{}
	for _, s := range all {
		if frag, ok := fragment(loader.served, s.Location); ok {
			texts[s] = frag
		}
	}
	return &parsedJSON{root: root, canonical: string(b), texts: texts}, nil
}

// fragment is the canonical text of the subschema at loc
// ("url#/json/pointer") in the documents served.
func fragment(docs map[string]any, loc string) (string, bool) {
	u, ptr, _ := strings.Cut(loc, "#")
	v, ok := docs[u]
	if !ok {
		return "", false
	}
	if ptr != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			tok, err := url.PathUnescape(tok)
			if err != nil {
				return "", false
			}
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch c := v.(type) {
			case map[string]any:
				v, ok = c[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				ok = err == nil && i >= 0 && i < len(c)
				if ok {
					v = c[i]
				}
			default:
				ok = false
			}
			if !ok {
				return "", false
			}
		}
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}

// refLoader serves the documents a schema's $refs name from its
// references, and refuses every other URL.
type refLoader struct {
	refs   []jsonRef
	rootID string
	served map[string]any // by URL, with the root
}

func (l *refLoader) Load(u string) (any, error) {
	for _, ref := range l.refs {
		if l.names(ref, u) {
			l.served[u] = ref.doc
			return ref.doc, nil
		}
	}
	return nil, fmt.Errorf("unresolvable $ref: no reference is named %q (a $ref to another schema resolves only through the schema's references, each named by the URL the $ref uses)", strings.TrimPrefix(u, jsonBaseDir))
}

// names reports whether u, the absolute URL a $ref resolved to, is
// ref: its name as is, resolved against the schema's base or $id, or
// the reference's own $id.
func (l *refLoader) names(ref jsonRef, u string) bool {
	if ref.name == u || ref.id != "" && ref.id == u {
		return true
	}
	for _, base := range []string{jsonBase, l.rootID} {
		if b, err := url.Parse(base); err == nil && base != "" {
			if n, err := url.Parse(ref.name); err == nil && b.ResolveReference(n).String() == u {
				return true
			}
		}
	}
	// A relative name used from inside another referenced document.
	name := strings.TrimPrefix(ref.name, "./")
	return !strings.Contains(name, ":") && strings.HasSuffix(u, "/"+name)
}

// reachable lists every schema root reaches, through any keyword.
func reachable(root *jsonschema.Schema) []*jsonschema.Schema {
	var all []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{}
	for queue := []*jsonschema.Schema{root}; len(queue) > 0; queue = queue[1:] {
		s := queue[0]
		if s == nil || seen[s] {
			continue
		}
		seen[s] = true
		all = append(all, s)
		queue = append(append(queue, inPlaceChildren(s)...), nestedChildren(s)...)
	}
	return all
}

// checkInPlaceCycles refuses a schema whose $refs (or allOf, anyOf,
// oneOf, not) lead back to themselves without descending into a
// property or an item: no instance could ever be validated against it.
// Recursion through properties and items is fine.
func checkInPlaceCycles(all []*jsonschema.Schema) error {
	// A depth-first walk over the in-place edges alone finds a cycle
	// when it meets a schema still on its path.
	const active, done = 1, 2
	state := map[*jsonschema.Schema]int{}
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		switch {
		case s == nil || state[s] == done:
			return nil
		case state[s] == active:
			return fmt.Errorf("reference cycle: %s refers to itself through $ref or a combining keyword without describing any value",
				strings.TrimPrefix(s.Location, jsonBase))
		}
		state[s] = active
		for _, next := range inPlaceChildren(s) {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[s] = done
		return nil
	}
	for _, s := range all {
		if err := visit(s); err != nil {
			return err
		}
	}
	return nil
}

// inPlaceChildren are the schemas that apply to the same value as s.
func inPlaceChildren(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, d := range s.Dependencies {
		if ds, ok := d.(*jsonschema.Schema); ok {
			out = append(out, ds)
		}
	}
	for _, d := range s.DependentSchemas {
		out = append(out, d)
	}
	return out
}

// nestedChildren are the schemas that apply to a property, an item or
// another part of the value.
func nestedChildren(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		out = append(out, a)
	}
	if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		out = append(out, a)
	}
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		out = append(out, it)
	case []*jsonschema.Schema:
		out = append(out, it...)
	}
	out = append(out, s.PrefixItems...)
	out = append(out, s.Items2020, s.Contains, s.PropertyNames, s.UnevaluatedItems, s.UnevaluatedProperties)
	return out
}
