package connector

import (
	"fmt"
	"math"
)

// Type is a Connect schema type; the names are the ones Kafka's
// JsonConverter writes ("float" is float32, "double" float64).
type Type string

// The schema types.
const (
	Int8    Type = "int8"
	Int16   Type = "int16"
	Int32   Type = "int32"
	Int64   Type = "int64"
	Float32 Type = "float"
	Float64 Type = "double"
	Boolean Type = "boolean"
	String  Type = "string"
	Bytes   Type = "bytes"
	Array   Type = "array"
	Map     Type = "map"
	StructT Type = "struct"
)

// Schema describes a key or value. A nil *Schema means schemaless: the
// value is then a plain Go value (nil, bool, int64, float64, string,
// []byte, []any, map[string]any).
//
// Values of a schema are Go values of the matching type: int8..int64,
// float32, float64, bool, string, []byte, []any (array), map[any]any or
// map[string]any (map), *Struct (struct).
type Schema struct {
	Type       Type
	Optional   bool
	Name       string
	Version    int
	Doc        string
	Parameters map[string]string
	Default    any
	Fields     []Field // struct
	Key        *Schema // map keys
	Value      *Schema // map values and array items
}

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Common primitive schemas.
var (
	StringSchema         = &Schema{Type: String}
	OptionalStringSchema = &Schema{Type: String, Optional: true}
	Int64Schema          = &Schema{Type: Int64}
	OptionalInt64Schema  = &Schema{Type: Int64, Optional: true}
	Int32Schema          = &Schema{Type: Int32}
	OptionalInt32Schema  = &Schema{Type: Int32, Optional: true}
	BytesSchema          = &Schema{Type: Bytes}
	OptionalBytesSchema  = &Schema{Type: Bytes, Optional: true}
	BooleanSchema        = &Schema{Type: Boolean}
)

// Field returns the field named name, or nil.
func (s *Schema) Field(name string) *Field {
	if s == nil {
		return nil
	}
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Struct is a value of a struct schema.
type Struct struct {
	Schema *Schema
	values map[string]any
}

// NewStruct returns an empty struct of schema s.
func NewStruct(s *Schema) *Struct { return &Struct{Schema: s, values: map[string]any{}} }

// Put sets field name; it returns the struct for chaining and panics on a
// field the schema does not have (a programming error, as in Kafka).
func (st *Struct) Put(name string, v any) *Struct {
	if st.Schema.Field(name) == nil {
		panic(fmt.Sprintf("connector: %q is not a field of the struct schema", name))
	}
	st.values[name] = v
	return st
}

// Get returns field name's value (its schema default when unset).
func (st *Struct) Get(name string) any {
	if v, ok := st.values[name]; ok {
		return v
	}
	if f := st.Schema.Field(name); f != nil && f.Schema != nil {
		return f.Schema.Default
	}
	return nil
}

// Validate checks that every required field is set and each value
// matches its schema.
func (st *Struct) Validate() error {
	for _, f := range st.Schema.Fields {
		if err := ValidateValue(f.Schema, st.Get(f.Name)); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// ValidateValue reports whether v is a valid value of s.
func ValidateValue(s *Schema, v any) error {
	if s == nil {
		return nil
	}
	if v == nil {
		if s.Optional || s.Default != nil {
			return nil
		}
		return fmt.Errorf("a null value for a required %s schema", s.Type)
	}
	ok := false
	switch s.Type {
	case Int8:
		_, ok = v.(int8)
	case Int16:
		_, ok = v.(int16)
	case Int32:
		_, ok = v.(int32)
	case Int64:
		_, ok = v.(int64)
	case Float32:
		_, ok = v.(float32)
	case Float64:
		_, ok = v.(float64)
	case Boolean:
		_, ok = v.(bool)
	case String:
		_, ok = v.(string)
	case Bytes:
		_, ok = v.([]byte)
	case Array:
		_, ok = v.([]any)
	case Map:
		switch v.(type) {
		case map[string]any, map[any]any:
			ok = true
		}
	case StructT:
		var st *Struct
		st, ok = v.(*Struct)
		if ok {
			return st.Validate()
		}
	}
	if !ok {
		return fmt.Errorf("a %T value for a %s schema", v, s.Type)
	}
	return nil
}

// toInt64 converts any Go integer or whole float to int64.
func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) {
			return int64(n), true
		}
	}
	return 0, false
}
