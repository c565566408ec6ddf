package registry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Protobuf compatibility follows Confluent's rules: the two files are
// compared message by message (by name) and field by field (by number),
// and each difference has a kind. Some kinds are wire-compatible (a
// field or message added or removed, a field renamed, string and bytes
// exchanged...); the others make the schemas incompatible. A schema is
// backward compatible with an older one when comparing older to newer
// finds no incompatible difference; forward is the comparison the other
// way round.

// protoCompatible lists the kinds of difference that do not break
// compatibility (enum changes are not compared at all: every one of them
// is compatible).
var protoCompatible = map[string]bool{
	"MESSAGE_ADDED": true, "FIELD_ADDED": true, "FIELD_REMOVED": true, "FIELD_NAME_CHANGED": true,
	"FIELD_STRING_OR_BYTES_LABEL_CHANGED": true, "ONEOF_ADDED": true, "ONEOF_REMOVED": true,
	"ONEOF_FIELD_ADDED": true, "ONEOF_FIELD_MOVED_TO_TOP_LEVEL": true,
}

// protoDescriptions are the messages of the incompatible kinds, with the
// path, then the reader's and the writer's side ("new" or "old").
var protoDescriptions = map[string]string{
	"PACKAGE_CHANGED":                "The package at '%[1]s' in the %[2]s schema does not match the package in the %[3]s schema",
	"MESSAGE_REMOVED":                "The %[2]s schema is missing a MESSAGE type at path '%[1]s' in the %[3]s schema",
	"FIELD_KIND_CHANGED":             "The type of a field at path '%[1]s' in the %[2]s schema does not match the %[3]s schema",
	"FIELD_SCALAR_KIND_CHANGED":      "The kind of a SCALAR field at path '%[1]s' in the %[2]s schema does not match its kind in the %[3]s schema",
	"FIELD_NAMED_TYPE_CHANGED":       "The type of a MESSAGE field at path '%[1]s' in the %[2]s schema does not match its type in the %[3]s schema",
	"FIELD_NUMERIC_LABEL_CHANGED":    "The label for a NUMERIC field at path '%[1]s' in the %[2]s schema does not match its label in the %[3]s schema",
	"REQUIRED_FIELD_ADDED":           "A required field  at path '%[1]s' in the %[2]s schema is missing in the %[3]s schema",
	"REQUIRED_FIELD_REMOVED":         "The %[2]s schema is missing a required field at path: '%[1]s' in the %[3]s schema",
	"ONEOF_FIELD_REMOVED":            "The %[2]s schema is missing a oneof field at path '%[1]s' in the %[3]s schema",
	"MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '%[1]s' in the %[2]s schema are outside a oneof in the %[3]s schema",
	"FIELD_MOVED_TO_EXISTING_ONEOF":  "A field in the oneof at path '%[1]s' in the %[2]s schema is outside an existing oneof in the %[3]s schema",
}

// protobufCompat checks next against the registered version v (parsed
// as old) under base (BACKWARD, FORWARD or FULL) and returns the
// messages the compatibility check reports, empty when compatible.
func protobufCompat(old, next *parsedProto, base string, v *version, level string) []string {
	var msgs []string
	if base == "FORWARD" || base == "FULL" {
		msgs = append(msgs, protoIncompatible(diffProto(next, old), "old", "new")...)
	}
	if base == "BACKWARD" || base == "FULL" {
		msgs = append(msgs, protoIncompatible(diffProto(old, next), "new", "old")...)
	}
	if len(msgs) > 0 {
		msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d}", v.Version),
			fmt.Sprintf("{oldSchema: '%s'}", v.Schema), fmt.Sprintf("{compatibility: '%s'}", level))
	}
	return msgs
}

func protoIncompatible(diffs []protoDifference, reader, writer string) []string {
	var out []string
	for _, d := range diffs {
		if !protoCompatible[d.kind] {
			out = append(out, fmt.Sprintf(`{errorType:"%s", description:"%s"}`, d.kind,
				fmt.Sprintf(protoDescriptions[d.kind], d.path, reader, writer)))
		}
	}
	return out
}

// protoDifference is one difference found: its kind and where, as
// "#/Message/Nested/fieldNumber".
type protoDifference struct {
	kind, path string
}

// diffProto lists the differences from original to update, compatible
// ones included.
func diffProto(original, update *parsedProto) []protoDifference {
	d := &protoDiffer{o: original, u: update, seen: map[[2]protoreflect.FullName]bool{}}
	if original.file.Package() != update.file.Package() {
		d.add("PACKAGE_CHANGED", nil)
	}
	d.messages(original.file.Messages(), update.file.Messages(), nil)
	return d.diffs
}

type protoDiffer struct {
	o, u  *parsedProto
	seen  map[[2]protoreflect.FullName]bool
	diffs []protoDifference
}

func (d *protoDiffer) add(kind string, path []string) {
	diff := protoDifference{kind: kind, path: "#/" + strings.Join(path, "/")}
	if !slices.Contains(d.diffs, diff) {
		d.diffs = append(d.diffs, diff)
	}
}

// protoPath is path with more appended, never sharing path's backing array.
func protoPath(path []string, more ...string) []string {
	return append(slices.Clip(path), more...)
}

// messages compares two sets of sibling messages by name.
func (d *protoDiffer) messages(om, um protoreflect.MessageDescriptors, path []string) {
	var names []protoreflect.Name
	for _, ms := range []protoreflect.MessageDescriptors{om, um} {
		for i := range ms.Len() {
			if m := ms.Get(i); !m.IsMapEntry() && !slices.Contains(names, m.Name()) {
				names = append(names, m.Name())
			}
		}
	}
	for _, name := range names {
		o, u := om.ByName(name), um.ByName(name)
		switch {
		case u == nil:
			d.add("MESSAGE_REMOVED", protoPath(path, string(name)))
		case o == nil:
			d.add("MESSAGE_ADDED", protoPath(path, string(name)))
		default:
			d.message(o, u, protoPath(path, string(name)))
		}
	}
}

// fieldsOf indexes a message's fields by number, with the (real, not
// proto3-optional) oneof each belongs to.
func fieldsOf(m protoreflect.MessageDescriptor) (map[protoreflect.FieldNumber]protoreflect.FieldDescriptor, map[protoreflect.FieldNumber]string) {
	byNum := map[protoreflect.FieldNumber]protoreflect.FieldDescriptor{}
	oneofOf := map[protoreflect.FieldNumber]string{}
	for i := range m.Fields().Len() {
		f := m.Fields().Get(i)
		byNum[f.Number()] = f
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			oneofOf[f.Number()] = string(o.Name())
		}
	}
	return byNum, oneofOf
}

func realOneofs(m protoreflect.MessageDescriptor) []protoreflect.OneofDescriptor {
	var out []protoreflect.OneofDescriptor
	for i := range m.Oneofs().Len() {
		if o := m.Oneofs().Get(i); !o.IsSynthetic() {
			out = append(out, o)
		}
	}
	return out
}

func (d *protoDiffer) message(o, u protoreflect.MessageDescriptor, path []string) {
	key := [2]protoreflect.FullName{o.FullName(), u.FullName()}
	if d.seen[key] {
		return
	}
	d.seen[key] = true
	oFields, oOneof := fieldsOf(o)
	uFields, uOneof := fieldsOf(u)

	// A oneof gone with all its members is a plain deletion.
	deleted := map[string]bool{}
	for _, oo := range realOneofs(o) {
		if u.Oneofs().ByName(oo.Name()) != nil {
			continue
		}
		survives := false
		for i := range oo.Fields().Len() {
			if _, ok := uFields[oo.Fields().Get(i).Number()]; ok {
				survives = true
			}
		}
		if !survives {
			deleted[string(oo.Name())] = true
		}
	}
	// A oneof of the update that gathers fields that were independent
	// (from different oneofs, or top-level) makes them exclusive.
	for _, uo := range realOneofs(u) {
		groups := map[string]bool{}
		movedIn := 0
		for i := range uo.Fields().Len() {
			n := uo.Fields().Get(i).Number()
			if g, ok := oOneof[n]; ok {
				groups["oneof:"+g] = true
			} else if _, ok := oFields[n]; ok {
				groups["field:"+strconv.Itoa(int(n))] = true
				movedIn++
			}
		}
		if len(groups) > 1 {
			kind := "FIELD_MOVED_TO_EXISTING_ONEOF"
			if movedIn > 1 {
				kind = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
			}
			d.add(kind, protoPath(path, string(uo.Name())))
		}
	}
	for _, oo := range realOneofs(o) {
		if u.Oneofs().ByName(oo.Name()) == nil {
			d.add("ONEOF_REMOVED", protoPath(path, string(oo.Name())))
		}
	}
	for _, uo := range realOneofs(u) {
		if o.Oneofs().ByName(uo.Name()) == nil {
			d.add("ONEOF_ADDED", protoPath(path, string(uo.Name())))
		}
	}

	var nums []protoreflect.FieldNumber
	for n := range oFields {
		nums = append(nums, n)
	}
	for n := range uFields {
		if _, ok := oFields[n]; !ok {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	for _, n := range nums {
		of, uf := oFields[n], uFields[n]
		num := strconv.Itoa(int(n))
		switch {
		case uf == nil && oOneof[n] != "":
			if !deleted[oOneof[n]] {
				d.add("ONEOF_FIELD_REMOVED", protoPath(path, oOneof[n], num))
			}
		case uf == nil && of.Cardinality() == protoreflect.Required:
			d.add("REQUIRED_FIELD_REMOVED", protoPath(path, num))
		case uf == nil:
			d.add("FIELD_REMOVED", protoPath(path, num))
		case of == nil && uOneof[n] != "":
			d.add("ONEOF_FIELD_ADDED", protoPath(path, uOneof[n], num))
		case of == nil && uf.Cardinality() == protoreflect.Required:
			d.add("REQUIRED_FIELD_ADDED", protoPath(path, num))
		case of == nil:
			d.add("FIELD_ADDED", protoPath(path, num))
		default:
			if oOneof[n] != "" && uOneof[n] == "" {
				d.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", protoPath(path, num))
			}
			fpath := protoPath(path, num)
			if uOneof[n] != "" {
				fpath = protoPath(path, uOneof[n], num)
			}
			if of.Name() != uf.Name() {
				d.add("FIELD_NAME_CHANGED", fpath)
			}
			d.field(of, uf, protoLabel(of), protoLabel(uf), fpath)
		}
	}
	d.messages(o.Messages(), u.Messages(), path)
}

// protoLabel is a field's label as written in the .proto text: "" for a
// proto3 field without one and for a oneof member.
func protoLabel(f protoreflect.FieldDescriptor) string {
	switch {
	case f.Cardinality() == protoreflect.Repeated:
		return "REPEATED"
	case f.Cardinality() == protoreflect.Required:
		return "REQUIRED"
	case f.ContainingOneof() != nil && f.ContainingOneof().IsSynthetic():
		return "OPTIONAL" // proto3 optional
	case f.ContainingOneof() != nil, f.ParentFile().Syntax() != protoreflect.Proto2:
		return ""
	}
	return "OPTIONAL"
}

func protoKind(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "MAP"
	case f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind:
		return "MESSAGE"
	}
	return "SCALAR"
}

// scalarGroup groups the scalar types whose values read as each other
// on the wire (an enum is a number).
func scalarGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind,
		protoreflect.BoolKind, protoreflect.EnumKind:
		return "GENERAL_NUMBER"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "SIGNED_NUMBER"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "STRING_OR_BYTES"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "FIXED32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "FIXED64"
	}
	return strings.ToUpper(k.String()) // FLOAT, DOUBLE
}

// field compares the types (and labels) of one field number.
func (d *protoDiffer) field(of, uf protoreflect.FieldDescriptor, ol, ul string, path []string) {
	kind := protoKind(of)
	if kind != protoKind(uf) {
		d.add("FIELD_KIND_CHANGED", path)
		return
	}
	switch kind {
	case "MAP":
		d.field(of.MapKey(), uf.MapKey(), "", "", path)
		d.field(of.MapValue(), uf.MapValue(), "", "", path)
	case "MESSAGE":
		d.messageType(of.Message(), uf.Message(), path)
	default:
		g := scalarGroup(of.Kind())
		switch {
		case g != scalarGroup(uf.Kind()):
			d.add("FIELD_SCALAR_KIND_CHANGED", path)
		case ol == "" || ul == "" || ol == ul:
		case g == "STRING_OR_BYTES":
			d.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED", path)
		default:
			d.add("FIELD_NUMERIC_LABEL_CHANGED", path)
		}
	}
}

// localName is a type's name inside its package.
func localName(m protoreflect.MessageDescriptor) string {
	pkg := string(m.ParentFile().Package())
	name := string(m.FullName())
	if pkg != "" {
		return strings.TrimPrefix(name, pkg+".")
	}
	return name
}

// messageType compares the message types of a field: the same name in
// their packages, and compatible contents unless both come from the same
// referenced subject and version.
func (d *protoDiffer) messageType(om, um protoreflect.MessageDescriptor, path []string) {
	oName, uName := localName(om), localName(um)
	if oName != uName {
		d.add("FIELD_NAMED_TYPE_CHANGED", path)
		return
	}
	oRef, uRef := d.o.refOf[om.ParentFile().Path()], d.u.refOf[um.ParentFile().Path()]
	if oRef != "" && oRef == uRef {
		return
	}
	sub := &protoDiffer{o: d.o, u: d.u, seen: d.seen}
	sub.message(om, um, strings.Split(oName, "."))
	broke := false
	for _, diff := range sub.diffs {
		d.add(diff.kind, strings.Split(strings.TrimPrefix(diff.path, "#/"), "/"))
		broke = broke || !protoCompatible[diff.kind]
	}
	if broke {
		d.add("FIELD_NAMED_TYPE_CHANGED", path)
	}
}
