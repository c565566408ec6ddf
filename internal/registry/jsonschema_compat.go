package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schema compatibility follows Confluent's provider (its "STRICT"
// policy, the default): the two schemas are walked side by side, every
// difference found gets one of Confluent's difference type names and a
// JSON path, and the change is compatible when every difference is in
// jsonCompatible. A BACKWARD check diffs old (original) against new
// (update): data written with the old schema must validate against the
// new one. FORWARD diffs new against old.
//
// The content model decides what adding or removing a property means:
// an object is open when any other property is allowed
// (additionalProperties absent or true, no patternProperties, and
// unevaluatedProperties absent or true), closed when none is
// (additionalProperties false), and partially open when other
// properties must match a schema (patternProperties, or a schema for
// additionalProperties or unevaluatedProperties). Arrays have the same
// three models through additionalItems (items after prefixItems in
// 2020-12) and unevaluatedItems.
//
// Schemas are first read into the shape Confluent's provider works on:
// "type": [a, b] is an anyOf of one schema per type; a schema whose
// keywords make several schemas (a type and an enum, a type and a oneOf)
// is their allOf; a schema that only refers ($ref) is the schema it
// refers to.
//
// Where we part from Confluent's provider (all but two of the 263 cases
// of its diff-*-examples.json test files give the same verdict): before
// 2019-09 the keywords beside a $ref and an "additionalItems" without
// an "items" array are ignored, as the drafts say, where Confluent
// still compares them; the "connect.type": "bytes" exception for Kafka
// Connect's JSON converter and the LENIENT policy are not implemented.

// jsonCompatible are the difference types that do not break
// compatibility.
var jsonCompatible = setOf(
	"ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED",
	"SCHEMA_REMOVED", "TYPE_EXTENDED",
	"MAX_LENGTH_INCREASED", "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED", "MIN_LENGTH_REMOVED", "PATTERN_REMOVED",
	"MAXIMUM_INCREASED", "MAXIMUM_REMOVED", "MINIMUM_DECREASED", "MINIMUM_REMOVED",
	"EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MINIMUM_DECREASED", "EXCLUSIVE_MINIMUM_REMOVED",
	"MULTIPLE_OF_REDUCED", "MULTIPLE_OF_REMOVED",
	"REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "REQUIRED_ATTRIBUTE_REMOVED",
	"DEPENDENCY_ARRAY_NARROWED", "DEPENDENCY_ARRAY_REMOVED", "DEPENDENCY_SCHEMA_REMOVED",
	"MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED", "MIN_PROPERTIES_DECREASED", "MIN_PROPERTIES_REMOVED",
	"ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED",
	"UNEVALUATED_PROPERTIES_ADDED", "UNEVALUATED_PROPERTIES_EXTENDED",
	"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
	"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
	"PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
	"PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
	"MAX_ITEMS_INCREASED", "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED",
	"MAX_CONTAINS_INCREASED", "MAX_CONTAINS_REMOVED", "MIN_CONTAINS_DECREASED", "MIN_CONTAINS_REMOVED",
	"UNIQUE_ITEMS_REMOVED", "ADDITIONAL_ITEMS_ADDED", "ADDITIONAL_ITEMS_EXTENDED",
	"UNEVALUATED_ITEMS_ADDED", "UNEVALUATED_ITEMS_EXTENDED",
	"ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
	"ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
	"ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
	"ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED", "SUM_TYPE_EXTENDED", "NOT_TYPE_NARROWED",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// jsonCompatMessages checks p against the registered version v (parsed
// as old) at base level BACKWARD, FORWARD or FULL, and returns what
// broke followed by which version and level, or nothing.
func jsonCompatMessages(old, p *parsedJSON, base string, v *version, level string) []string {
	var msgs []string
	if base == "BACKWARD" || base == "FULL" {
		msgs = append(msgs, jsonIncompatible(old, p, "old", "new")...)
	}
	if base == "FORWARD" || base == "FULL" {
		msgs = append(msgs, jsonIncompatible(p, old, "new", "old")...)
	}
	if len(msgs) == 0 {
		return nil
	}
	return append(msgs, fmt.Sprintf("{oldSchemaVersion: %d}", v.Version),
		fmt.Sprintf("{oldSchema: '%s'}", v.Schema), fmt.Sprintf("{compatibility: '%s'}", level))
}

// jsonIncompatible diffs original against update and describes the
// differences that break compatibility; the names say which side is
// the old and which the new schema.
func jsonIncompatible(original, update *parsedJSON, originalName, updateName string) []string {
	d := newJSONDiffer(original, update)
	var msgs []string
	for _, diff := range d.compare(d.node(original.root), d.node(update.root)) {
		if !jsonCompatible[diff.typ] {
			msgs = append(msgs, fmt.Sprintf("{errorType:'%s', description:'%s'}", diff.typ, diff.describe(originalName, updateName)))
		}
	}
	return msgs
}

// jsonDiff is one difference: its Confluent type name and where
// ("#/properties/a").
type jsonDiff struct {
	typ, path string
}

func (d jsonDiff) describe(original, update string) string {
	at, t := "#/"+d.path, d.typ
	switch {
	case t == "TYPE_CHANGED", t == "TYPE_NARROWED", t == "ENUM_ARRAY_CHANGED", strings.HasPrefix(t, "COMBINED_TYPE"):
		return fmt.Sprintf("The type at path '%s' differs between the %s and the %s schema", at, original, update)
	case strings.HasSuffix(t, "_ADDED_TO_OPEN_CONTENT_MODEL"):
		return fmt.Sprintf("The %s schema has an open content model, so its data may hold the property or item at path '%s' of the %s schema with any value", original, at, update)
	case strings.HasSuffix(t, "_ADDED_TO_UNOPEN_CONTENT_MODEL"):
		return fmt.Sprintf("The %s schema requires the property at path '%s', which the %s schema's data need not have", update, at, original)
	case strings.HasSuffix(t, "_REMOVED_FROM_CLOSED_CONTENT_MODEL"):
		return fmt.Sprintf("The %s schema has a closed content model and lacks the property or item at path '%s' of the %s schema", update, at, original)
	case strings.HasSuffix(t, "_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
		return fmt.Sprintf("The property or item at path '%s' of the %s schema is not covered by the partially open content model of the %s schema", at, update, original)
	case strings.HasSuffix(t, "_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
		return fmt.Sprintf("The property or item at path '%s' of the %s schema is missing in the %s schema and not covered by its partially open content model", at, original, update)
	case strings.HasSuffix(t, "_NARROWED"):
		return fmt.Sprintf("The enum, array or combined type at path '%s' has fewer elements in the %s schema than in the %s schema", at, update, original)
	case strings.HasSuffix(t, "_EXTENDED"):
		return fmt.Sprintf("The array or combined type at path '%s' has more elements in the %s schema than in the %s schema", at, update, original)
	case t == "SCHEMA_ADDED":
		return fmt.Sprintf("The %s schema adds a schema at path '%s'", update, at)
	default: // keywords added, removed or changed in value
		return fmt.Sprintf("The keyword at path '%s' makes the %s schema accept less than the %s schema", at, update, original)
	}
}

// jsonKind is the shape of a schema node.
type jsonKind int

const (
	kindEmpty jsonKind = iota // {} or true: anything
	kindFalse                 // false: nothing
	kindObject
	kindArray
	kindString
	kindNumber
	kindBoolean
	kindNull
	kindEnum
	kindConst
	kindCombined
	kindNot
	kindConditional
)

// jsonNode is a schema in the shape the diff works on.
type jsonNode struct {
	kind    jsonKind
	s       *jsonschema.Schema // where its keywords are; nil for true/false
	integer bool               // a number node of type integer
	crit    string             // allOf, anyOf or oneOf, for kindCombined
	subs    []*jsonNode        // for kindCombined
}

type jsonDiffer struct {
	nodes map[*jsonschema.Schema]*jsonNode
	// onPath are the pairs being compared: a recursive schema meeting
	// one again is assumed compatible there (the comparison in progress
	// decides). truncated counts such assumptions, so that only results
	// that made none are memoized.
	onPath    map[[2]*jsonNode]bool
	truncated int
	memo      map[[2]*jsonNode][]jsonDiff
	texts     map[*jsonschema.Schema]string // canonical texts of both sides' subschemas
}

func newJSONDiffer(sides ...*parsedJSON) *jsonDiffer {
	d := &jsonDiffer{nodes: map[*jsonschema.Schema]*jsonNode{}, onPath: map[[2]*jsonNode]bool{},
		memo: map[[2]*jsonNode][]jsonDiff{}, texts: map[*jsonschema.Schema]string{}}
	for _, p := range sides {
		maps.Copy(d.texts, p.texts)
	}
	return d
}

// node reads s into its diff shape (nil for an absent schema).
func (d *jsonDiffer) node(s *jsonschema.Schema) *jsonNode {
	if s == nil {
		return nil
	}
	if n, ok := d.nodes[s]; ok {
		return n
	}
	var n *jsonNode
	switch {
	case s.Bool != nil && *s.Bool:
		n = &jsonNode{kind: kindEmpty}
	case s.Bool != nil:
		n = &jsonNode{kind: kindFalse}
	case refOf(s) != nil:
		rest := *s
		rest.Ref, rest.RecursiveRef, rest.DynamicRef = nil, nil, nil
		parts := d.parts(&rest)
		if len(parts) == 0 {
			n = d.node(refOf(s)) // a schema that only refers (parse refused $ref cycles)
		} else {
			n = &jsonNode{kind: kindCombined, s: s, crit: "allOf", subs: append([]*jsonNode{d.node(refOf(s))}, parts...)}
		}
	default:
		parts := d.parts(s)
		switch len(parts) {
		case 0:
			n = &jsonNode{kind: kindEmpty, s: s}
		case 1:
			n = parts[0]
		default:
			n = &jsonNode{kind: kindCombined, s: s, crit: "allOf", subs: parts}
		}
	}
	d.nodes[s] = n
	return n
}

// refOf is the schema s refers to: $ref, or 2019-09's $recursiveRef or
// 2020-12's $dynamicRef taken as the static reference they start from.
func refOf(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case s.Ref != nil:
		return s.Ref
	case s.RecursiveRef != nil:
		return s.RecursiveRef
	case s.DynamicRef != nil:
		return s.DynamicRef.Ref
	}
	return nil
}

// parts are the schemas s's keywords make, besides $ref.
func (d *jsonDiffer) parts(s *jsonschema.Schema) []*jsonNode {
	var out []*jsonNode
	if s.Enum != nil {
		out = append(out, &jsonNode{kind: kindEnum, s: s})
	}
	if s.Const != nil {
		out = append(out, &jsonNode{kind: kindConst, s: s})
	}
	for _, c := range []struct {
		crit string
		subs []*jsonschema.Schema
	}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}} {
		if c.subs != nil {
			n := &jsonNode{kind: kindCombined, s: s, crit: c.crit}
			seen := map[string]bool{}
			for _, sub := range c.subs {
				if text, ok := d.texts[sub]; ok {
					if seen[text] {
						continue // a duplicate counts once
					}
					seen[text] = true
				}
				n.subs = append(n.subs, d.node(sub))
			}
			out = append(out, n)
		}
	}
	if s.Not != nil {
		out = append(out, &jsonNode{kind: kindNot, s: s})
	}
	if s.If != nil {
		out = append(out, &jsonNode{kind: kindConditional, s: s})
	}
	if s.Types != nil {
		var typed []*jsonNode
		for _, t := range s.Types.ToStrings() {
			typed = append(typed, typedNode(s, t))
		}
		if len(typed) == 1 {
			return append(out, typed[0])
		}
		return append(out, &jsonNode{kind: kindCombined, s: s, crit: "anyOf", subs: typed})
	}
	// No type: the keywords present tell which kinds of value are
	// constrained.
	if s.Properties != nil || s.Required != nil || s.PatternProperties != nil || s.AdditionalProperties != nil ||
		s.Dependencies != nil || s.DependentRequired != nil || s.DependentSchemas != nil || s.MinProperties != nil ||
		s.MaxProperties != nil || s.PropertyNames != nil || s.UnevaluatedProperties != nil {
		out = append(out, &jsonNode{kind: kindObject, s: s})
	}
	if s.Items != nil || s.AdditionalItems != nil || s.PrefixItems != nil || s.Items2020 != nil || s.MinItems != nil ||
		s.MaxItems != nil || s.UniqueItems || s.Contains != nil || s.UnevaluatedItems != nil {
		out = append(out, &jsonNode{kind: kindArray, s: s})
	}
	if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil {
		out = append(out, &jsonNode{kind: kindNumber, s: s})
	}
	if s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil {
		out = append(out, &jsonNode{kind: kindString, s: s})
	}
	return out
}

func typedNode(s *jsonschema.Schema, t string) *jsonNode {
	switch t {
	case "object":
		return &jsonNode{kind: kindObject, s: s}
	case "array":
		return &jsonNode{kind: kindArray, s: s}
	case "string":
		return &jsonNode{kind: kindString, s: s}
	case "number":
		return &jsonNode{kind: kindNumber, s: s}
	case "integer":
		return &jsonNode{kind: kindNumber, s: s, integer: true}
	case "boolean":
		return &jsonNode{kind: kindBoolean, s: s}
	default:
		return &jsonNode{kind: kindNull, s: s}
	}
}

// compatible reports whether diffs break nothing.
func compatible(diffs []jsonDiff) bool {
	for _, d := range diffs {
		if !jsonCompatible[d.typ] {
			return false
		}
	}
	return true
}

// at prefixes the paths of diffs, relative to a nested pair, with
// where that pair is.
func at(prefix string, diffs []jsonDiff) []jsonDiff {
	out := make([]jsonDiff, len(diffs))
	for i, d := range diffs {
		out[i] = jsonDiff{d.typ, strings.TrimSuffix(prefix+"/"+d.path, "/")}
	}
	return out
}

// compare diffs original against update; paths are relative to them.
func (d *jsonDiffer) compare(o, u *jsonNode) []jsonDiff {
	switch {
	case o == nil && u == nil:
		return nil
	case o == nil:
		return []jsonDiff{{"SCHEMA_ADDED", ""}}
	case u == nil:
		return []jsonDiff{{"SCHEMA_REMOVED", ""}}
	}
	pair := [2]*jsonNode{o, u}
	if diffs, ok := d.memo[pair]; ok {
		return diffs
	}
	if d.onPath[pair] {
		d.truncated++
		return nil
	}
	d.onPath[pair] = true
	before := d.truncated
	diffs := slices.Clip(d.compareTypes(o, u)) // callers append: never into the memo's array
	delete(d.onPath, pair)
	if d.truncated == before {
		d.memo[pair] = diffs
	}
	return diffs
}

func (d *jsonDiffer) compareTypes(o, u *jsonNode) []jsonDiff {
	if o.kind != kindCombined && u.kind == kindCombined {
		if len(u.subs) == 1 {
			if diffs := d.compare(o, u.subs[0]); compatible(diffs) {
				return diffs
			}
		} else if u.crit != "allOf" {
			for _, sub := range u.subs {
				if diffs := d.compare(o, sub); compatible(diffs) {
					return append(diffs, jsonDiff{"SUM_TYPE_EXTENDED", ""})
				}
			}
		}
	} else if o.kind == kindCombined && u.kind != kindCombined {
		if len(o.subs) == 1 {
			if diffs := d.compare(o.subs[0], u); compatible(diffs) {
				return diffs
			}
		} else if o.crit == "allOf" {
			for _, sub := range o.subs {
				if diffs := d.compare(sub, u); compatible(diffs) {
					return append(diffs, jsonDiff{"PRODUCT_TYPE_NARROWED", ""})
				}
			}
		}
	}
	if o.kind != u.kind {
		if o.kind == kindFalse || u.kind == kindEmpty {
			return nil
		}
		return []jsonDiff{{"TYPE_CHANGED", ""}}
	}
	var diffs []jsonDiff
	add := func(typ, path string) { diffs = append(diffs, jsonDiff{typ, path}) }
	if o.s != nil && u.s != nil {
		if o.s.ID != u.s.ID {
			add("ID_CHANGED", "")
		}
		if o.s.Title != u.s.Title {
			add("TITLE_CHANGED", "")
		}
		if o.s.Description != u.s.Description {
			add("DESCRIPTION_CHANGED", "")
		}
		if (o.s.Default == nil) != (u.s.Default == nil) || o.s.Default != nil && !jsonEqual(*o.s.Default, *u.s.Default) {
			add("DEFAULT_CHANGED", "")
		}
	}
	switch o.kind {
	case kindString:
		diffs = append(diffs, compareStrings(o.s, u.s)...)
	case kindNumber:
		diffs = append(diffs, compareNumbers(o, u)...)
	case kindEnum:
		diffs = append(diffs, compareEnums(o.s.Enum.Values, u.s.Enum.Values)...)
	case kindConst:
		if !jsonEqual(*o.s.Const, *u.s.Const) {
			add("ENUM_ARRAY_CHANGED", "const")
		}
	case kindCombined:
		diffs = append(diffs, d.compareCombined(o, u)...)
	case kindNot:
		// The values excluded may shrink: compare the other way round.
		if compatible(d.compare(d.node(u.s.Not), d.node(o.s.Not))) {
			add("NOT_TYPE_NARROWED", "not")
		} else {
			add("NOT_TYPE_EXTENDED", "not")
		}
	case kindObject:
		diffs = append(diffs, d.compareObjects(o.s, u.s)...)
	case kindArray:
		diffs = append(diffs, d.compareArrays(o.s, u.s)...)
	}
	return diffs
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// limit classifies the change of a bound: added, removed, increased or
// decreased, or "" if unchanged.
func limit(o, u *big.Rat) string {
	switch {
	case o == nil && u == nil:
		return ""
	case o == nil:
		return "_ADDED"
	case u == nil:
		return "_REMOVED"
	}
	switch o.Cmp(u) {
	case -1:
		return "_INCREASED"
	case 1:
		return "_DECREASED"
	}
	return ""
}

func ratOf(i *int) *big.Rat {
	if i == nil {
		return nil
	}
	return big.NewRat(int64(*i), 1)
}

// bounds adds a difference for each changed bound.
func bounds(diffs *[]jsonDiff, checks ...any) {
	for i := 0; i < len(checks); i += 3 {
		name, keyword := checks[i].(string), checks[i+1].(string)
		var o, u *big.Rat
		switch v := checks[i+2].(type) {
		case [2]*int:
			o, u = ratOf(v[0]), ratOf(v[1])
		case [2]*big.Rat:
			o, u = v[0], v[1]
		}
		if c := limit(o, u); c != "" {
			*diffs = append(*diffs, jsonDiff{name + c, keyword})
		}
	}
}

func compareStrings(o, u *jsonschema.Schema) []jsonDiff {
	var diffs []jsonDiff
	bounds(&diffs, "MAX_LENGTH", "maxLength", [2]*int{o.MaxLength, u.MaxLength},
		"MIN_LENGTH", "minLength", [2]*int{o.MinLength, u.MinLength})
	switch {
	case o.Pattern == nil && u.Pattern != nil:
		diffs = append(diffs, jsonDiff{"PATTERN_ADDED", "pattern"})
	case o.Pattern != nil && u.Pattern == nil:
		diffs = append(diffs, jsonDiff{"PATTERN_REMOVED", "pattern"})
	case o.Pattern != nil && o.Pattern.String() != u.Pattern.String():
		diffs = append(diffs, jsonDiff{"PATTERN_CHANGED", "pattern"})
	}
	return diffs
}

func compareNumbers(on, un *jsonNode) []jsonDiff {
	o, u := on.s, un.s
	var diffs []jsonDiff
	bounds(&diffs, "MAXIMUM", "maximum", [2]*big.Rat{o.Maximum, u.Maximum},
		"MINIMUM", "minimum", [2]*big.Rat{o.Minimum, u.Minimum},
		"EXCLUSIVE_MAXIMUM", "exclusiveMaximum", [2]*big.Rat{o.ExclusiveMaximum, u.ExclusiveMaximum},
		"EXCLUSIVE_MINIMUM", "exclusiveMinimum", [2]*big.Rat{o.ExclusiveMinimum, u.ExclusiveMinimum})
	om, um := o.MultipleOf, u.MultipleOf
	isMultiple := func(a, b *big.Rat) bool { return b.Sign() != 0 && new(big.Rat).Quo(a, b).IsInt() }
	switch {
	case om == nil && um == nil, om != nil && um != nil && om.Cmp(um) == 0:
	case om == nil:
		diffs = append(diffs, jsonDiff{"MULTIPLE_OF_ADDED", "multipleOf"})
	case um == nil:
		diffs = append(diffs, jsonDiff{"MULTIPLE_OF_REMOVED", "multipleOf"})
	case isMultiple(um, om):
		diffs = append(diffs, jsonDiff{"MULTIPLE_OF_EXPANDED", "multipleOf"})
	case isMultiple(om, um):
		diffs = append(diffs, jsonDiff{"MULTIPLE_OF_REDUCED", "multipleOf"})
	default:
		diffs = append(diffs, jsonDiff{"MULTIPLE_OF_CHANGED", "multipleOf"})
	}
	if on.integer && !un.integer {
		diffs = append(diffs, jsonDiff{"TYPE_EXTENDED", ""})
	} else if !on.integer && un.integer {
		diffs = append(diffs, jsonDiff{"TYPE_NARROWED", ""})
	}
	return diffs
}

func compareEnums(o, u []any) []jsonDiff {
	contains := func(all []any, vs []any) bool {
		for _, v := range vs {
			if !slices.ContainsFunc(all, func(a any) bool { return jsonEqual(a, v) }) {
				return false
			}
		}
		return true
	}
	oInU, uInO := contains(u, o), contains(o, u)
	switch {
	case oInU && uInO:
		return nil
	case oInU:
		return []jsonDiff{{"ENUM_ARRAY_EXTENDED", "enum"}}
	case uInO:
		return []jsonDiff{{"ENUM_ARRAY_NARROWED", "enum"}}
	}
	return []jsonDiff{{"ENUM_ARRAY_CHANGED", "enum"}}
}

// compareCombined matches the subschemas of two allOf, anyOf or oneOf
// schemas: each original subschema must pair with a compatible update
// subschema (a maximum bipartite matching covering the smaller side).
func (d *jsonDiffer) compareCombined(o, u *jsonNode) []jsonDiff {
	var diffs []jsonDiff
	if o.crit != u.crit {
		single := func(n *jsonNode) bool { return len(n.subs) == 1 }
		if u.crit == "anyOf" || single(o) && single(u) || single(o) && u.crit == "oneOf" || single(u) && o.crit == "allOf" {
			diffs = append(diffs, jsonDiff{"COMBINED_TYPE_EXTENDED", ""})
		} else {
			return []jsonDiff{{"COMBINED_TYPE_CHANGED", ""}}
		}
	}
	switch {
	case len(o.subs) < len(u.subs) && u.crit == "allOf":
		diffs = append(diffs, jsonDiff{"PRODUCT_TYPE_EXTENDED", ""})
	case len(o.subs) < len(u.subs):
		diffs = append(diffs, jsonDiff{"SUM_TYPE_EXTENDED", ""})
	case len(o.subs) > len(u.subs) && o.crit != "allOf":
		diffs = append(diffs, jsonDiff{"SUM_TYPE_NARROWED", ""})
	case len(o.subs) > len(u.subs):
		diffs = append(diffs, jsonDiff{"PRODUCT_TYPE_NARROWED", ""})
	}
	edges := make([][][]jsonDiff, len(o.subs)) // the differences of each compatible pair
	ok := make([][]bool, len(o.subs))
	for i, os := range o.subs {
		edges[i], ok[i] = make([][]jsonDiff, len(u.subs)), make([]bool, len(u.subs))
		for j, us := range u.subs {
			if sub := d.compare(os, us); compatible(sub) {
				edges[i][j], ok[i][j] = at(fmt.Sprintf("%s/%d", o.crit, i), sub), true
			}
		}
	}
	matched := 0
	for j, i := range maxMatching(len(o.subs), len(u.subs), func(i, j int) bool { return ok[i][j] }) {
		if i >= 0 {
			diffs = append(diffs, edges[i][j]...)
			matched++
		}
	}
	if matched < min(len(o.subs), len(u.subs)) {
		diffs = append(diffs, jsonDiff{"COMBINED_TYPE_SUBSCHEMAS_CHANGED", ""})
	}
	return diffs
}

// maxMatching finds a maximum matching between n left and m right
// vertices (augmenting paths); it returns, per right vertex, its left
// partner or -1.
func maxMatching(n, m int, edge func(i, j int) bool) []int {
	match := make([]int, m)
	for j := range match {
		match[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := 0; j < m; j++ {
			if edge(i, j) && !seen[j] {
				seen[j] = true
				if match[j] < 0 || try(match[j], seen) {
					match[j] = i
					return true
				}
			}
		}
		return false
	}
	for i := 0; i < n; i++ {
		try(i, make([]bool, m))
	}
	return match
}
