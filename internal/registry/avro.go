package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
)

// parsedAvro is a parsed Avro schema with the named types of its
// references resolved.
type parsedAvro struct {
	schema avro.Schema
	// canonical identifies the schema for de-duplication: the parsed
	// schema written back as JSON, so whitespace and key order do not
	// make two equal schemas different.
	canonical string
}

// parseAvro parses text after the texts of its references (deepest
// first, in the order given), so names defined there resolve.
func parseAvro(text string, refs []string) (*parsedAvro, error) {
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r, "", cache); err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return &parsedAvro{schema: s, canonical: string(b)}, nil
}

// avroCompat checks that data written with writer can be read with
// reader under Avro's schema-resolution rules. newIsReader names the
// sides in messages: the schema being checked is "new", the registered
// one "old". It returns one message per incompatibility found.
func avroCompat(reader, writer avro.Schema, newIsReader bool) []string {
	c := &avroChecker{seen: map[[2]string]bool{}, readerName: "new", writerName: "old"}
	if !newIsReader {
		c.readerName, c.writerName = "old", "new"
	}
	c.check(reader, writer, "")
	return c.msgs
}

type avroChecker struct {
	seen                   map[[2]string]bool
	readerName, writerName string
	msgs                   []string
}

func (c *avroChecker) fail(kind, info, format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf("{errorType:'%s', description:'%s', additionalInfo:'%s'}",
		kind, fmt.Sprintf(format, args...), info))
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// compatible reports whether check would find nothing, without
// recording messages.
func (c *avroChecker) compatible(reader, writer avro.Schema) bool {
	sub := &avroChecker{seen: c.seen, readerName: c.readerName, writerName: c.writerName}
	sub.check(reader, writer, "")
	return len(sub.msgs) == 0
}

func (c *avroChecker) check(reader, writer avro.Schema, path string) {
	reader, writer = deref(reader), deref(writer)
	if rn, ok := reader.(avro.NamedSchema); ok {
		if wn, ok := writer.(avro.NamedSchema); ok {
			key := [2]string{rn.FullName() + "|" + c.readerName, wn.FullName()}
			if c.seen[key] {
				return // a recursive type: already being checked
			}
			c.seen[key] = true
			defer delete(c.seen, key)
		}
	}
	if w, ok := writer.(*avro.UnionSchema); ok {
		for i, t := range w.Types() {
			c.check(reader, t, path+"/"+strconv.Itoa(i))
		}
		return
	}
	if r, ok := reader.(*avro.UnionSchema); ok {
		for _, t := range r.Types() {
			if c.compatible(t, writer) {
				return
			}
		}
		c.fail("MISSING_UNION_BRANCH", "reader union lacking writer type: "+strings.ToUpper(string(writer.Type())),
			"The %s schema is missing a type inside a union field at path '%s' in the %s schema", c.readerName, orRoot(path), c.writerName)
		return
	}
	if reader.Type() != writer.Type() {
		if !promotable(writer.Type(), reader.Type()) {
			c.fail("TYPE_MISMATCH", fmt.Sprintf("reader type: %s not compatible with writer type: %s", strings.ToUpper(string(reader.Type())), strings.ToUpper(string(writer.Type()))),
				"The type (path '%s') of a field in the %s schema does not match with the %s schema", orRoot(path), c.readerName, c.writerName)
		}
		return
	}
	switch r := reader.(type) {
	case *avro.RecordSchema:
		w := writer.(*avro.RecordSchema)
		if !c.names(r, w, path) {
			return
		}
		for i, f := range r.Fields() {
			wf := findField(w, f)
			if wf == nil {
				if !f.HasDefault() {
					c.fail("READER_FIELD_MISSING_DEFAULT_VALUE", f.Name(),
						"The field '%s' at path '%s' in the %s schema has no default value and is missing in the %s schema",
						f.Name(), path+"/fields/"+strconv.Itoa(i), c.readerName, c.writerName)
				}
				continue
			}
			c.check(f.Type(), wf.Type(), path+"/fields/"+strconv.Itoa(i)+"/type")
		}
	case *avro.EnumSchema:
		w := writer.(*avro.EnumSchema)
		if !c.names(r, w, path) {
			return
		}
		var missing []string
		for _, s := range w.Symbols() {
			if !slices.Contains(r.Symbols(), s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 && !r.HasDefault() {
			c.fail("MISSING_ENUM_SYMBOLS", "["+strings.Join(missing, ", ")+"]",
				"The %s schema is missing enum symbols '[%s]' at path '%s' in the %s schema",
				c.readerName, strings.Join(missing, ", "), path+"/symbols", c.writerName)
		}
	case *avro.FixedSchema:
		w := writer.(*avro.FixedSchema)
		if !c.names(r, w, path) {
			return
		}
		if r.Size() != w.Size() {
			c.fail("FIXED_SIZE_MISMATCH", fmt.Sprintf("expected: %d, found: %d", w.Size(), r.Size()),
				"The size of FIXED type field at path '%s' in the %s schema does not match with the %s schema",
				path+"/size", c.readerName, c.writerName)
		}
	case *avro.ArraySchema:
		c.check(r.Items(), writer.(*avro.ArraySchema).Items(), path+"/items")
	case *avro.MapSchema:
		c.check(r.Values(), writer.(*avro.MapSchema).Values(), path+"/values")
	}
}

// names checks that a named type may be read as another: same
// unqualified name, or the writer's full name is one of the reader's
// aliases (Avro's resolution matches unqualified names).
func (c *avroChecker) names(r, w avro.NamedSchema, path string) bool {
	if r.Name() == w.Name() || slices.Contains(r.Aliases(), w.FullName()) {
		return true
	}
	c.fail("NAME_MISMATCH", fmt.Sprintf("expected: %s", w.FullName()),
		"The name of the schema has changed (path '%s')", path+"/name")
	return false
}

// findField finds the writer's field that fills reader field f: same
// name, or a name among f's aliases.
func findField(w *avro.RecordSchema, f *avro.Field) *avro.Field {
	for _, wf := range w.Fields() {
		if wf.Name() == f.Name() {
			return wf
		}
	}
	for _, wf := range w.Fields() {
		if slices.Contains(f.Aliases(), wf.Name()) {
			return wf
		}
	}
	return nil
}

// promotable reports the promotions of Avro's schema resolution.
func promotable(writer, reader avro.Type) bool {
	switch writer {
	case avro.Int:
		return reader == avro.Long || reader == avro.Float || reader == avro.Double
	case avro.Long:
		return reader == avro.Float || reader == avro.Double
	case avro.Float:
		return reader == avro.Double
	case avro.String:
		return reader == avro.Bytes
	case avro.Bytes:
		return reader == avro.String
	}
	return false
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
