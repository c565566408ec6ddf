package connector

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// JsonConverter is Kafka's org.apache.kafka.connect.json.JsonConverter.
// With schemas.enable (the default) each value is the envelope
// {"schema":...,"payload":...} with the schema in Kafka's JSON form;
// without, the payload alone. Logical types (Decimal, Date, Time,
// Timestamp) are carried as their base types.
type JsonConverter struct {
	SchemasEnable bool
}

// Configure reads schemas.enable.
func (c *JsonConverter) Configure(props map[string]string, _ bool) error {
	c.SchemasEnable = true
	if v, ok := props["schemas.enable"]; ok {
		b, err := ParseConfigValue(TypeBoolean, v)
		if err != nil {
			return fmt.Errorf("schemas.enable: %w", err)
		}
		c.SchemasEnable = b.(bool)
	}
	return nil
}

// FromConnect encodes v; a nil schema and value give a null (tombstone).
func (c *JsonConverter) FromConnect(_ string, s *Schema, v any) ([]byte, error) {
	if s == nil && v == nil {
		return nil, nil
	}
	var b bytes.Buffer
	if c.SchemasEnable {
		b.WriteString(`{"schema":`)
		writeJSONSchema(&b, s)
		b.WriteString(`,"payload":`)
	}
	if err := writeJSONValue(&b, s, v); err != nil {
		return nil, fmt.Errorf("converting Kafka Connect data to JSON: %w", err)
	}
	if c.SchemasEnable {
		b.WriteByte('}')
	}
	return b.Bytes(), nil
}

// ToConnect decodes b.
func (c *JsonConverter) ToConnect(_ string, b []byte) (*Schema, any, error) {
	if b == nil {
		return nil, nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var j any
	if err := d.Decode(&j); err != nil {
		return nil, nil, fmt.Errorf("converting byte[] to Kafka Connect data failed due to serialization error: %w", err)
	}
	if !c.SchemasEnable {
		return nil, schemalessFromJSON(j), nil
	}
	env, ok := j.(map[string]any)
	_, hasSchema := env["schema"]
	_, hasPayload := env["payload"]
	if !ok || len(env) != 2 || !hasSchema || !hasPayload {
		return nil, nil, fmt.Errorf(`JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.`)
	}
	s, err := schemaFromJSON(env["schema"])
	if err != nil {
		return nil, nil, err
	}
	v, err := valueFromJSON(s, env["payload"])
	return s, v, err
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

// writeJSONSchema writes s with Kafka's field order: type, its nested
// schemas, optional, name, version, doc, parameters, default.
func writeJSONSchema(b *bytes.Buffer, s *Schema) {
	if s == nil {
		b.WriteString("null")
		return
	}
	b.WriteString(`{"type":`)
	writeJSONString(b, string(s.Type))
	switch s.Type {
	case Array:
		b.WriteString(`,"items":`)
		writeJSONSchema(b, s.Value)
	case Map:
		b.WriteString(`,"keys":`)
		writeJSONSchema(b, s.Key)
		b.WriteString(`,"values":`)
		writeJSONSchema(b, s.Value)
	case StructT:
		b.WriteString(`,"fields":[`)
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			var fb bytes.Buffer
			writeJSONSchema(&fb, f.Schema)
			fs := fb.Bytes()
			b.Write(fs[:len(fs)-1])
			b.WriteString(`,"field":`)
			writeJSONString(b, f.Name)
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	b.WriteString(`,"optional":`)
	b.WriteString(strconv.FormatBool(s.Optional))
	if s.Name != "" {
		b.WriteString(`,"name":`)
		writeJSONString(b, s.Name)
	}
	if s.Version != 0 {
		b.WriteString(`,"version":` + strconv.Itoa(s.Version))
	}
	if s.Doc != "" {
		b.WriteString(`,"doc":`)
		writeJSONString(b, s.Doc)
	}
	if len(s.Parameters) > 0 {
		b.WriteString(`,"parameters":{`)
		for i, k := range SortedKeys(s.Parameters) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSONString(b, s.Parameters[k])
		}
		b.WriteByte('}')
	}
	if s.Default != nil {
		b.WriteString(`,"default":`)
		_ = writeJSONValue(b, s, s.Default)
	}
	b.WriteByte('}')
}

func writeJSONValue(b *bytes.Buffer, s *Schema, v any) error {
	if v == nil && s != nil && s.Default != nil {
		v = s.Default
	}
	if v == nil {
		if s != nil && !s.Optional {
			return fmt.Errorf("conversion error: null value for field that is required and has no default value")
		}
		b.WriteString("null")
		return nil
	}
	if s != nil {
		if err := ValidateValue(s, v); err != nil && s.Type != StructT {
			return err
		}
	}
	switch x := v.(type) {
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeJSONString(b, x)
	case []byte:
		writeJSONString(b, base64.StdEncoding.EncodeToString(x))
	case float32:
		b.WriteString(formatFloat(float64(x), 32))
	case float64:
		b.WriteString(formatFloat(x, 64))
	case int, int8, int16, int32, int64:
		n, _ := toInt64(x)
		b.WriteString(strconv.FormatInt(n, 10))
	case []any:
		var items *Schema
		if s != nil {
			items = s.Value
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSONValue(b, items, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		var vs *Schema
		if s != nil {
			vs = s.Value
		}
		b.WriteByte('{')
		for i, k := range SortedKeys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			if err := writeJSONValue(b, vs, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case map[any]any:
		// Kafka writes a map with non-string keys as an array of [key, value] pairs.
		var ks, vs *Schema
		if s != nil {
			ks, vs = s.Key, s.Value
		}
		keys := make([]any, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		b.WriteByte('[')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			if err := writeJSONValue(b, ks, k); err != nil {
				return err
			}
			b.WriteByte(',')
			if err := writeJSONValue(b, vs, x[k]); err != nil {
				return err
			}
			b.WriteByte(']')
		}
		b.WriteByte(']')
	case *Struct:
		if s == nil {
			return fmt.Errorf("a Struct without a schema")
		}
		b.WriteByte('{')
		for i, f := range x.Schema.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, f.Name)
			b.WriteByte(':')
			if err := writeJSONValue(b, f.Schema, x.Get(f.Name)); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("couldn't convert %T to JSON", v)
	}
	return nil
}

// formatFloat writes a float as Jackson does for whole numbers ("1.0").
func formatFloat(f float64, bits int) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.Quote(strconv.FormatFloat(f, 'g', -1, bits))
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if f == math.Trunc(f) && math.Abs(f) < 1e7 {
		s = strconv.FormatFloat(f, 'f', 1, bits)
	}
	return s
}

func schemaFromJSON(j any) (*Schema, error) {
	if j == nil {
		return nil, nil
	}
	m, ok := j.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema must be an object, got %v", j)
	}
	t, _ := m["type"].(string)
	s := &Schema{Type: Type(t)}
	switch s.Type {
	case Int8, Int16, Int32, Int64, Float32, Float64, Boolean, String, Bytes:
	case Array:
		items, err := schemaFromJSON(m["items"])
		if err != nil || items == nil {
			return nil, fmt.Errorf("array schema did not specify the element type")
		}
		s.Value = items
	case Map:
		var err error
		if s.Key, err = schemaFromJSON(m["keys"]); err != nil || s.Key == nil {
			return nil, fmt.Errorf("map schema did not specify the key type")
		}
		if s.Value, err = schemaFromJSON(m["values"]); err != nil || s.Value == nil {
			return nil, fmt.Errorf("map schema did not specify the value type")
		}
	case StructT:
		fields, ok := m["fields"].([]any)
		if !ok {
			return nil, fmt.Errorf("struct schema's \"fields\" argument is not an array")
		}
		for _, f := range fields {
			fm, _ := f.(map[string]any)
			name, ok := fm["field"].(string)
			if !ok {
				return nil, fmt.Errorf("struct schema's field name not specified properly")
			}
			fs, err := schemaFromJSON(f)
			if err != nil {
				return nil, err
			}
			s.Fields = append(s.Fields, Field{Name: name, Schema: fs})
		}
	default:
		return nil, fmt.Errorf("unknown schema type: %v", m["type"])
	}
	s.Optional, _ = m["optional"].(bool)
	s.Name, _ = m["name"].(string)
	if v, ok := m["version"].(json.Number); ok {
		n, _ := v.Int64()
		s.Version = int(n)
	}
	s.Doc, _ = m["doc"].(string)
	if p, ok := m["parameters"].(map[string]any); ok {
		s.Parameters = map[string]string{}
		for k, v := range p {
			s.Parameters[k], _ = v.(string)
		}
	}
	if d, ok := m["default"]; ok && d != nil {
		v, err := valueFromJSON(s, d)
		if err != nil {
			return nil, fmt.Errorf("default: %w", err)
		}
		s.Default = v
	}
	return s, nil
}

func valueFromJSON(s *Schema, j any) (any, error) {
	if s == nil {
		return schemalessFromJSON(j), nil
	}
	if j == nil {
		if s.Default != nil {
			return s.Default, nil
		}
		if s.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("invalid null value for required %s field", s.Type)
	}
	mismatch := fmt.Errorf("invalid JSON for %s schema: %v", s.Type, j)
	switch s.Type {
	case Int8, Int16, Int32, Int64:
		n, ok := j.(json.Number)
		if !ok {
			return nil, mismatch
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil, mismatch
		}
		switch s.Type {
		case Int8:
			return int8(i), nil
		case Int16:
			return int16(i), nil
		case Int32:
			return int32(i), nil
		}
		return i, nil
	case Float32, Float64:
		n, ok := j.(json.Number)
		if !ok {
			return nil, mismatch
		}
		f, err := n.Float64()
		if err != nil {
			return nil, mismatch
		}
		if s.Type == Float32 {
			return float32(f), nil
		}
		return f, nil
	case Boolean:
		b, ok := j.(bool)
		if !ok {
			return nil, mismatch
		}
		return b, nil
	case String:
		str, ok := j.(string)
		if !ok {
			return nil, mismatch
		}
		return str, nil
	case Bytes:
		str, ok := j.(string)
		if !ok {
			return nil, mismatch
		}
		return base64.StdEncoding.DecodeString(str)
	case Array:
		a, ok := j.([]any)
		if !ok {
			return nil, mismatch
		}
		out := make([]any, len(a))
		for i, e := range a {
			v, err := valueFromJSON(s.Value, e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case Map:
		if s.Key.Type == String {
			m, ok := j.(map[string]any)
			if !ok {
				return nil, mismatch
			}
			out := map[string]any{}
			for k, e := range m {
				v, err := valueFromJSON(s.Value, e)
				if err != nil {
					return nil, err
				}
				out[k] = v
			}
			return out, nil
		}
		a, ok := j.([]any)
		if !ok {
			return nil, mismatch
		}
		out := map[any]any{}
		for _, e := range a {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return nil, fmt.Errorf("found invalid map entry instead of array tuple: %v", e)
			}
			k, err := valueFromJSON(s.Key, pair[0])
			if err != nil {
				return nil, err
			}
			v, err := valueFromJSON(s.Value, pair[1])
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case StructT:
		m, ok := j.(map[string]any)
		if !ok {
			return nil, mismatch
		}
		st := NewStruct(s)
		for _, f := range s.Fields {
			v, err := valueFromJSON(f.Schema, m[f.Name])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			st.values[f.Name] = v
		}
		return st, nil
	}
	return nil, mismatch
}

// schemalessFromJSON maps JSON to Go values: integers become int64 and
// other numbers float64, as Kafka's JsonConverter does without a schema.
func schemalessFromJSON(j any) any {
	switch x := j.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = schemalessFromJSON(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = schemalessFromJSON(x[k])
		}
		return x
	}
	return j
}
