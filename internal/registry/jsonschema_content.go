package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Objects and arrays in the JSON Schema diff (jsonschema_compat.go):
// what adding or removing a property or a tuple item means depends on
// the content model of the side that lacks it.

// contentModel is how an object (or array) treats properties (items)
// it does not list: open (any allowed), closed (none), or partially
// open (they must match a schema).
type contentModel struct {
	open bool
	// partial returns the schema an unlisted property must match, or
	// nil; for arrays the name is ignored.
	partial func(name string) *jsonschema.Schema
}

// additional reads additionalProperties or additionalItems: whether
// other values are allowed, and the schema they must match (nil when
// absent, true or {}).
func (d *jsonDiffer) additional(v any) (permits bool, schema *jsonschema.Schema) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case *jsonschema.Schema:
		switch d.node(v).kind {
		case kindFalse:
			return false, nil
		case kindEmpty:
			return true, nil
		}
		return true, v
	}
	return true, nil
}

// unevaluated reads unevaluatedProperties or unevaluatedItems as a
// node kind: absent (-1), true/{} (kindEmpty), false, or a schema.
func (d *jsonDiffer) unevaluated(s *jsonschema.Schema) jsonKind {
	if s == nil {
		return -1
	}
	switch k := d.node(s).kind; k {
	case kindEmpty, kindFalse:
		return k
	}
	return kindObject // any other schema
}

func (d *jsonDiffer) objectModel(s *jsonschema.Schema) contentModel {
	permits, schema := d.additional(s.AdditionalProperties)
	uneval := d.unevaluated(s.UnevaluatedProperties)
	return contentModel{
		open: permits && schema == nil && len(s.PatternProperties) == 0 && (uneval == -1 || uneval == kindEmpty),
		partial: func(name string) *jsonschema.Schema {
			patterns := slices.SortedFunc(maps.Keys(s.PatternProperties), func(a, b jsonschema.Regexp) int {
				return strings.Compare(a.String(), b.String())
			})
			for _, re := range patterns { // in a stable order when several match
				if re.MatchString(name) {
					return s.PatternProperties[re]
				}
			}
			if schema != nil {
				return schema
			}
			if permits && schema == nil && uneval == kindObject {
				return s.UnevaluatedProperties
			}
			return nil
		},
	}
}

func (d *jsonDiffer) compareObjects(o, u *jsonschema.Schema) []jsonDiff {
	var diffs []jsonDiff
	add := func(typ, path string) { diffs = append(diffs, jsonDiff{typ, path}) }
	// required
	for _, name := range slices.Sorted(maps.Keys(o.Properties)) {
		if _, ok := u.Properties[name]; !ok {
			continue
		}
		oReq, uReq := slices.Contains(o.Required, name), slices.Contains(u.Required, name)
		switch {
		case oReq && !uReq:
			add("REQUIRED_ATTRIBUTE_REMOVED", "required/"+name)
		case !oReq && uReq && u.Properties[name].Default != nil:
			add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "required/"+name)
		case !oReq && uReq:
			add("REQUIRED_ATTRIBUTE_ADDED", "required/"+name)
		}
	}
	// properties
	oModel, uModel := d.objectModel(o), d.objectModel(u)
	names := slices.Sorted(maps.Keys(o.Properties))
	for _, name := range slices.Sorted(maps.Keys(u.Properties)) {
		if _, ok := o.Properties[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		path := "properties/" + name
		os, us := o.Properties[name], u.Properties[name]
		switch {
		case us == nil:
			diffs = append(diffs, d.removed(path, d.node(os), uModel, name, "PROPERTY")...)
		case os == nil:
			diffs = append(diffs, d.added(path, d.node(us), oModel, name, "PROPERTY", slices.Contains(u.Required, name))...)
		default:
			diffs = append(diffs, at(path, d.compare(d.node(os), d.node(us)))...)
		}
	}
	// dependencies
	oArr, oSch := dependencies(o)
	uArr, uSch := dependencies(u)
	for _, name := range slices.Sorted(maps.Keys(union(oArr, uArr))) {
		path := "dependencies/" + name
		oa, oOK := oArr[name]
		ua, uOK := uArr[name]
		switch {
		case !uOK:
			add("DEPENDENCY_ARRAY_REMOVED", path)
		case !oOK:
			add("DEPENDENCY_ARRAY_ADDED", path)
		case containsAll(oa, ua) && containsAll(ua, oa):
		case containsAll(ua, oa):
			add("DEPENDENCY_ARRAY_EXTENDED", path)
		case containsAll(oa, ua):
			add("DEPENDENCY_ARRAY_NARROWED", path)
		default:
			add("DEPENDENCY_ARRAY_CHANGED", path)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(union(oSch, uSch))) {
		path := "dependencies/" + name
		switch os, us := oSch[name], uSch[name]; {
		case us == nil:
			add("DEPENDENCY_SCHEMA_REMOVED", path)
		case os == nil:
			add("DEPENDENCY_SCHEMA_ADDED", path)
		default:
			diffs = append(diffs, at(path, d.compare(d.node(os), d.node(us)))...)
		}
	}
	// additionalProperties, unevaluatedProperties
	diffs = append(diffs, d.compareAdditional("additionalProperties", "ADDITIONAL_PROPERTIES", o.AdditionalProperties, u.AdditionalProperties)...)
	diffs = append(diffs, d.compareUnevaluated("unevaluatedProperties", "UNEVALUATED_PROPERTIES", o.UnevaluatedProperties, u.UnevaluatedProperties)...)
	bounds(&diffs, "MAX_PROPERTIES", "maxProperties", [2]*int{o.MaxProperties, u.MaxProperties},
		"MIN_PROPERTIES", "minProperties", [2]*int{o.MinProperties, u.MinProperties})
	return diffs
}

// removed classifies a property or item of the original that the
// update does not list.
func (d *jsonDiffer) removed(path string, os *jsonNode, uModel contentModel, name, what string) []jsonDiff {
	if uModel.open {
		return []jsonDiff{{what + "_REMOVED_FROM_OPEN_CONTENT_MODEL", path}}
	}
	if partial := uModel.partial(name); partial != nil {
		sub := at(path, d.compare(os, d.node(partial)))
		if compatible(sub) {
			return append(sub, jsonDiff{what + "_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path})
		}
		return append(sub, jsonDiff{what + "_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path})
	}
	if os.kind == kindFalse {
		return []jsonDiff{{what + "_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", path}}
	}
	return []jsonDiff{{what + "_REMOVED_FROM_CLOSED_CONTENT_MODEL", path}}
}

// added classifies a property (or item) the update lists and the
// original does not.
func (d *jsonDiffer) added(path string, us *jsonNode, oModel contentModel, name, what string, required bool) []jsonDiff {
	hasDefault := us.s != nil && us.s.Default != nil
	if oModel.open {
		switch {
		case us.kind == kindEmpty:
			return []jsonDiff{{what + "_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", path}}
		case what == "ITEM":
			return []jsonDiff{{"ITEM_ADDED_TO_OPEN_CONTENT_MODEL", path}}
		case required && hasDefault:
			return []jsonDiff{{"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", path}}
		case required:
			return []jsonDiff{{"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", path}}
		}
		return []jsonDiff{{"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", path}}
	}
	var diffs []jsonDiff
	if partial := oModel.partial(name); partial != nil {
		sub := at(path, d.compare(d.node(partial), us))
		diffs = append(diffs, sub...)
		if compatible(sub) {
			diffs = append(diffs, jsonDiff{what + "_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path})
		} else {
			diffs = append(diffs, jsonDiff{what + "_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path})
		}
		if what == "ITEM" {
			return diffs
		}
	}
	switch {
	case what == "ITEM":
		return append(diffs, jsonDiff{"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", path})
	case required && hasDefault:
		return append(diffs, jsonDiff{"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", path})
	case required:
		return append(diffs, jsonDiff{"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", path})
	}
	return append(diffs, jsonDiff{"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", path})
}

// dependencies merges draft 4-7's dependencies with 2019-09's
// dependentRequired and dependentSchemas.
func dependencies(s *jsonschema.Schema) (map[string][]string, map[string]*jsonschema.Schema) {
	arr, sch := map[string][]string{}, map[string]*jsonschema.Schema{}
	for k, v := range s.Dependencies {
		switch v := v.(type) {
		case []string:
			arr[k] = v
		case *jsonschema.Schema:
			sch[k] = v
		}
	}
	maps.Copy(arr, s.DependentRequired)
	maps.Copy(sch, s.DependentSchemas)
	return arr, sch
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func containsAll(all, vs []string) bool {
	for _, v := range vs {
		if !slices.Contains(all, v) {
			return false
		}
	}
	return true
}

func (d *jsonDiffer) compareAdditional(path, name string, o, u any) []jsonDiff {
	oPermits, oSchema := d.additional(o)
	uPermits, uSchema := d.additional(u)
	switch {
	case oPermits != uPermits && uPermits:
		return []jsonDiff{{name + "_ADDED", path}}
	case oPermits != uPermits:
		return []jsonDiff{{name + "_REMOVED", path}}
	case oSchema == nil && uSchema != nil:
		return []jsonDiff{{name + "_NARROWED", path}}
	case oSchema != nil && uSchema == nil:
		return []jsonDiff{{name + "_EXTENDED", path}}
	}
	return at(path, d.compare(d.node(oSchema), d.node(uSchema)))
}

func (d *jsonDiffer) compareUnevaluated(path, name string, o, u *jsonschema.Schema) []jsonDiff {
	ok, uk := d.unevaluated(o), d.unevaluated(u)
	var typ string
	switch {
	case ok == -1 && uk == -1:
		return nil
	case ok == -1 && uk == kindFalse, ok != kindFalse && uk == kindFalse:
		typ = "_REMOVED"
	case ok == -1:
		typ = "_NARROWED"
	case ok == kindFalse && uk != kindFalse:
		typ = "_ADDED"
	case uk == -1:
		typ = "_EXTENDED"
	case ok == kindEmpty && uk != kindEmpty:
		typ = "_NARROWED"
	case ok != kindEmpty && uk == kindEmpty:
		typ = "_EXTENDED"
	default:
		return at(path, d.compare(d.node(o), d.node(u)))
	}
	return []jsonDiff{{name + typ, path}}
}

// array keywords across drafts: allItems is the one schema all items
// match ("items" as a schema); itemList the per-position schemas
// ("items" as an array before 2020-12, "prefixItems" since); additional
// what items after those may be ("additionalItems", or "items" after
// "prefixItems").
func arrayParts(s *jsonschema.Schema) (allItems *jsonschema.Schema, itemList []*jsonschema.Schema, additional any) {
	if s.DraftVersion >= 2020 {
		if len(s.PrefixItems) > 0 {
			if s.Items2020 != nil {
				return nil, s.PrefixItems, s.Items2020
			}
			return nil, s.PrefixItems, nil
		}
		return s.Items2020, nil, nil
	}
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		return it, nil, nil
	case []*jsonschema.Schema:
		return nil, it, s.AdditionalItems
	}
	return nil, nil, s.AdditionalItems
}

func (d *jsonDiffer) arrayModel(s *jsonschema.Schema) contentModel {
	_, _, add := arrayParts(s)
	permits, schema := d.additional(add)
	uneval := d.unevaluated(s.UnevaluatedItems)
	return contentModel{
		open: permits && schema == nil && (uneval == -1 || uneval == kindEmpty),
		partial: func(string) *jsonschema.Schema {
			if schema != nil {
				return schema
			}
			if permits && schema == nil && uneval == kindObject {
				return s.UnevaluatedItems
			}
			return nil
		},
	}
}

func (d *jsonDiffer) compareArrays(o, u *jsonschema.Schema) []jsonDiff {
	oAll, oList, oAdd := arrayParts(o)
	uAll, uList, uAdd := arrayParts(u)
	diffs := at("items", d.compare(d.node(oAll), d.node(uAll)))
	oModel, uModel := d.arrayModel(o), d.arrayModel(u)
	for i := 0; i < max(len(oList), len(uList)); i++ {
		path := fmt.Sprintf("items/%d", i)
		switch {
		case i >= len(uList):
			diffs = append(diffs, d.removed(path, d.node(oList[i]), uModel, "", "ITEM")...)
		case i >= len(oList):
			diffs = append(diffs, d.added(path, d.node(uList[i]), oModel, "", "ITEM", false)...)
		default:
			diffs = append(diffs, at(path, d.compare(d.node(oList[i]), d.node(uList[i])))...)
		}
	}
	// additionalItems: dropping it is ADDITIONAL_ITEMS_ADDED (more
	// allowed), Confluent's naming.
	oPermits, oSchema := d.additional(oAdd)
	uPermits, uSchema := d.additional(uAdd)
	switch {
	case oPermits != uPermits && oPermits:
		diffs = append(diffs, jsonDiff{"ADDITIONAL_ITEMS_REMOVED", "additionalItems"})
	case oPermits != uPermits:
		diffs = append(diffs, jsonDiff{"ADDITIONAL_ITEMS_ADDED", "additionalItems"})
	case oSchema == nil && uSchema != nil:
		diffs = append(diffs, jsonDiff{"ADDITIONAL_ITEMS_NARROWED", "additionalItems"})
	case oSchema != nil && uSchema == nil:
		diffs = append(diffs, jsonDiff{"ADDITIONAL_ITEMS_EXTENDED", "additionalItems"})
	default:
		diffs = append(diffs, at("additionalItems", d.compare(d.node(oSchema), d.node(uSchema)))...)
	}
	diffs = append(diffs, d.compareUnevaluated("unevaluatedItems", "UNEVALUATED_ITEMS", o.UnevaluatedItems, u.UnevaluatedItems)...)
	bounds(&diffs, "MAX_ITEMS", "maxItems", [2]*int{o.MaxItems, u.MaxItems},
		"MIN_ITEMS", "minItems", [2]*int{o.MinItems, u.MinItems})
	if o.UniqueItems != u.UniqueItems {
		if o.UniqueItems {
			diffs = append(diffs, jsonDiff{"UNIQUE_ITEMS_REMOVED", "uniqueItems"})
		} else {
			diffs = append(diffs, jsonDiff{"UNIQUE_ITEMS_ADDED", "uniqueItems"})
		}
	}
	bounds(&diffs, "MAX_CONTAINS", "maxContains", [2]*int{o.MaxContains, u.MaxContains},
		"MIN_CONTAINS", "minContains", [2]*int{o.MinContains, u.MinContains})
	return diffs
}
