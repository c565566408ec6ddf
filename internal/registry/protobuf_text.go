package registry

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoText writes a compiled file back as .proto text, as Confluent's
// registry stores a schema registered in descriptor form. It covers
// proto2 and proto3 files of messages, enums, oneofs, maps and reserved
// ranges; for anything else (options, extensions, services, groups,
// defaults, editions) it reports false and the schema keeps its
// registered form.
func protoText(f protoreflect.FileDescriptor) (string, bool) {
	w := &protoWriter{ok: true}
	if f.Syntax() == protoreflect.Editions || f.Services().Len() > 0 || f.Extensions().Len() > 0 || hasOptions(f.Options()) {
		return "", false
	}
	w.line(0, "syntax = %q;", f.Syntax().String())
	if f.Package() != "" {
		w.line(0, "package %s;", f.Package())
	}
	for i := range f.Imports().Len() {
		imp := f.Imports().Get(i)
		switch {
		case imp.IsWeak:
			w.ok = false
		case imp.IsPublic:
			w.line(0, "import public %q;", imp.Path())
		default:
			w.line(0, "import %q;", imp.Path())
		}
	}
	for i := range f.Messages().Len() {
		w.message(0, f.Messages().Get(i))
	}
	for i := range f.Enums().Len() {
		w.enum(0, f.Enums().Get(i))
	}
	return w.b.String(), w.ok
}

type protoWriter struct {
	b  strings.Builder
	ok bool
}

func (w *protoWriter) line(depth int, format string, args ...any) {
	w.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// hasOptions reports whether a descriptor's options message sets
// anything (unknown fields included: custom options not linked in).
func hasOptions(opts protoreflect.ProtoMessage) bool {
	if opts == nil {
		return false
	}
	m := opts.ProtoReflect()
	if !m.IsValid() {
		return false
	}
	set := len(m.GetUnknown()) > 0
	m.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { set = true; return false })
	return set
}

func (w *protoWriter) message(depth int, m protoreflect.MessageDescriptor) {
	if hasOptions(m.Options()) || m.Extensions().Len() > 0 {
		w.ok = false
		return
	}
	w.line(depth, "message %s {", m.Name())
	// Nested messages keep their order (message indexes point into it),
	// and a map field's entry type takes its place among them where the
	// field stands: print both lists merged so that both orders hold.
	done := map[protoreflect.Name]bool{}
	fields, nested := m.Fields(), m.Messages()
	for i, j := 0, 0; i < fields.Len() || j < nested.Len(); {
		if j < nested.Len() && !nested.Get(j).IsMapEntry() {
			w.message(depth+1, nested.Get(j))
			j++
			continue
		}
		if i == fields.Len() {
			w.ok = false
			break
		}
		f := fields.Get(i)
		i++
		if f.IsMap() {
			if j == nested.Len() || nested.Get(j) != f.Message() {
				w.ok = false
			}
			j++
		}
		o := f.ContainingOneof()
		if o == nil || o.IsSynthetic() {
			w.field(depth+1, f, true)
			continue
		}
		if done[o.Name()] {
			continue
		}
		done[o.Name()] = true
		if hasOptions(o.Options()) {
			w.ok = false
		}
		w.line(depth+1, "oneof %s {", o.Name())
		for k := range o.Fields().Len() {
			w.field(depth+2, o.Fields().Get(k), false)
		}
		w.line(depth+1, "}")
	}
	for i := range m.Enums().Len() {
		w.enum(depth+1, m.Enums().Get(i))
	}
	for i := range m.ReservedRanges().Len() {
		r := m.ReservedRanges().Get(i)
		w.line(depth+1, "reserved %s;", rangeText(int(r[0]), int(r[1])-1, 536870911))
	}
	w.reservedNames(depth+1, m.ReservedNames())
	for i := range m.ExtensionRanges().Len() {
		r := m.ExtensionRanges().Get(i)
		w.line(depth+1, "extensions %s;", rangeText(int(r[0]), int(r[1])-1, 536870911))
	}
	w.line(depth, "}")
}

func rangeText(start, end, max int) string {
	switch {
	case start == end:
		return strconv.Itoa(start)
	case end == max:
		return fmt.Sprintf("%d to max", start)
	}
	return fmt.Sprintf("%d to %d", start, end)
}

func (w *protoWriter) reservedNames(depth int, names protoreflect.Names) {
	for i := range names.Len() {
		w.line(depth, "reserved %q;", names.Get(i))
	}
}

func (w *protoWriter) field(depth int, f protoreflect.FieldDescriptor, withLabel bool) {
	if hasOptions(f.Options()) || f.HasDefault() || f.Kind() == protoreflect.GroupKind ||
		f.HasJSONName() && f.JSONName() != jsonCamelCase(string(f.Name())) {
		w.ok = false
		return
	}
	label := ""
	if withLabel {
		switch {
		case f.IsMap():
		case f.Cardinality() == protoreflect.Repeated:
			label = "repeated "
		case f.Cardinality() == protoreflect.Required:
			label = "required "
		case f.HasOptionalKeyword():
			label = "optional "
		}
	}
	w.line(depth, "%s%s %s = %d;", label, fieldType(f), f.Name(), f.Number())
}

func fieldType(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return fmt.Sprintf("map<%s, %s>", fieldType(f.MapKey()), fieldType(f.MapValue()))
	case f.Kind() == protoreflect.MessageKind:
		return "." + string(f.Message().FullName())
	case f.Kind() == protoreflect.EnumKind:
		return "." + string(f.Enum().FullName())
	}
	return f.Kind().String()
}

func (w *protoWriter) enum(depth int, e protoreflect.EnumDescriptor) {
	if hasOptions(e.Options()) {
		w.ok = false
		return
	}
	w.line(depth, "enum %s {", e.Name())
	for i := range e.Values().Len() {
		v := e.Values().Get(i)
		if hasOptions(v.Options()) {
			w.ok = false
		}
		w.line(depth+1, "%s = %d;", v.Name(), v.Number())
	}
	for i := range e.ReservedRanges().Len() {
		r := e.ReservedRanges().Get(i)
		w.line(depth+1, "reserved %s;", rangeText(int(r[0]), int(r[1]), 2147483647))
	}
	w.reservedNames(depth+1, e.ReservedNames())
	w.line(depth, "}")
}
