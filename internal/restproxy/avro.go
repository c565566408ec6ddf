package restproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// The avro embedded format: keys and values in Avro's JSON encoding (a
// union as {"type": value}, bytes as a string of code points 0-255),
// written as Confluent's wire format: magic byte 0, the schema id as 4
// bytes big-endian, the Avro binary encoding.

var (
	errInvalidSchema = func(err error) error { return errf(422, 42205, "Invalid schema: %v", err) }
	errNoRegistry    = &apiError{422, 42205, "Invalid schema: the REST Proxy has no schema.registry.url"}
)

// schemas resolves schema ids through the registry, caching parsed
// schemas by id.
type schemas struct {
	cl *sr.Client
	mu sync.Mutex
	by map[int]avro.Schema
	// registered caches the id of a schema text under a subject, so a
	// stream of records with the same schema registers it once.
	registered map[[2]string]int
	// parsed holds jsonschema and protobuf schemas by id
	// (schemaformats.go).
	parsed map[int]any
	types  map[int]sr.SchemaType
}

func newSchemas(url string, opts ...sr.ClientOpt) (*schemas, error) {
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(url)}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &schemas{cl: cl, by: map[int]avro.Schema{}, registered: map[[2]string]int{}, parsed: map[int]any{}, types: map[int]sr.SchemaType{}}, nil
}

func (s *schemas) byID(ctx context.Context, id int) (avro.Schema, error) {
	s.mu.Lock()
	sch, ok := s.by[id]
	s.mu.Unlock()
	if ok {
		return sch, nil
	}
	got, err := s.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, registryError(err)
	}
	if got.Type != sr.TypeAvro {
		return nil, errInvalidSchema(fmt.Errorf("schema %d is %s, not AVRO", id, got.Type))
	}
	if sch, err = s.parseAvro(ctx, got.Schema, got.References); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.by[id] = sch
	s.mu.Unlock()
	return sch, nil
}

// register registers text under subject and returns its id and parsed
// schema.
func (s *schemas) register(ctx context.Context, subject, text string) (int, avro.Schema, error) {
	s.mu.Lock()
	id, ok := s.registered[[2]string{subject, text}]
	sch := s.by[id]
	s.mu.Unlock()
	if ok && sch != nil {
		return id, sch, nil
	}
	sch, err := s.parseAvro(ctx, text, nil)
	if err != nil {
		return 0, nil, err
	}
	ss, err := s.cl.CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
	if err != nil {
		return 0, nil, registryError(err)
	}
	s.mu.Lock()
	s.by[ss.ID] = sch
	s.registered[[2]string{subject, text}] = ss.ID
	s.mu.Unlock()
	return ss.ID, sch, nil
}

// parseAvro parses an Avro schema whose named types may be defined by its
// references (registered subject versions, each parsed before what
// refers to it). Each schema has a cache of named types of its own, so
// that two subjects may define the same name differently.
func (s *schemas) parseAvro(ctx context.Context, text string, refs []sr.SchemaReference) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	if err := s.avroReferences(ctx, refs, cache, map[string]int{}); err != nil {
		return nil, err
	}
	sch, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, errInvalidSchema(err)
	}
	return sch, nil
}

// avroReferences parses refs, depth first, into cache; state marks a
// reference being parsed (1) or parsed (2).
func (s *schemas) avroReferences(ctx context.Context, refs []sr.SchemaReference, cache *avro.SchemaCache, state map[string]int) error {
	for _, ref := range refs {
		key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
		switch state[key] {
		case 1:
			return errInvalidSchema(fmt.Errorf("circular reference %s", ref.Name))
		case 2:
			continue
		}
		got, err := s.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return registryError(err)
		}
		if got.Type != sr.TypeAvro {
			return errInvalidSchema(fmt.Errorf("reference %s is %s, not AVRO", ref.Name, got.Type))
		}
		state[key] = 1
		if err := s.avroReferences(ctx, got.References, cache, state); err != nil {
			return err
		}
		if _, err := avro.ParseWithCache(got.Schema.Schema, "", cache); err != nil {
			return errInvalidSchema(fmt.Errorf("reference %s: %w", ref.Name, err))
		}
		state[key] = 2
	}
	return nil
}

// registryError answers a registry refusal as an invalid schema and
// anything else as a server error.
func registryError(err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && re.StatusCode >= 400 && re.StatusCode < 500 {
		return errInvalidSchema(err)
	}
	return errf(500, 50002, "Schema Registry: %v", err)
}

func avroCodec(ctx context.Context, p *Proxy, subject string, isKey bool, schema *string, id *int) (codec, error) {
	missing := errValSchemaMissing
	if isKey {
		missing = errKeySchemaMissing
	}
	if schema == nil && id == nil {
		return codec{encode: func(v json.RawMessage) ([]byte, error) {
			if isNull(v) {
				return nil, nil
			}
			return nil, missing
		}}, nil
	}
	if p.schemas == nil {
		return codec{encode: func(json.RawMessage) ([]byte, error) { return nil, errNoRegistry }}, nil
	}
	var sch avro.Schema
	var sid int
	var err error
	if id != nil {
		sid = *id
		sch, err = p.schemas.byID(ctx, sid)
	} else {
		sid, sch, err = p.schemas.register(ctx, subject, *schema)
	}
	if err != nil {
		return codec{}, err
	}
	return codec{schemaID: &sid, encode: func(v json.RawMessage) ([]byte, error) {
		if isNull(v) {
			return nil, nil
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var j any
		if err := dec.Decode(&j); err != nil {
			return nil, errf(422, 42203, "Conversion of JSON to Avro failed: %v", err)
		}
		native, err := fromAvroJSON(sch, j)
		if err != nil {
			return nil, errf(422, 42203, "Conversion of JSON to Avro failed: %v", err)
		}
		body, err := avro.Marshal(sch, native)
		if err != nil {
			return nil, errf(422, 42203, "Conversion of JSON to Avro failed: %v", err)
		}
		out := make([]byte, 5, 5+len(body))
		binary.BigEndian.PutUint32(out[1:], uint32(sid))
		return append(out, body...), nil
	}}, nil
}

func decodeAvro(ctx context.Context, p *Proxy, b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	if len(b) < 5 || b[0] != 0 {
		return nil, errf(500, 50002, "record data is not in the Schema Registry's wire format; consume it with the binary format")
	}
	if p.schemas == nil {
		return nil, errf(500, 50002, "the REST Proxy has no schema.registry.url to read Avro with")
	}
	sch, err := p.schemas.byID(ctx, int(binary.BigEndian.Uint32(b[1:5])))
	if err != nil {
		return nil, err
	}
	var native any
	if err := avro.Unmarshal(sch, b[5:], &native); err != nil {
		return nil, errf(500, 50002, "decoding Avro: %v", err)
	}
	j, err := toAvroJSON(sch, native)
	if err != nil {
		return nil, errf(500, 50002, "decoding Avro: %v", err)
	}
	return json.Marshal(j)
}

// fromAvroJSON turns a value decoded from Avro's JSON encoding (numbers as
// json.Number) into the generic form hamba/avro encodes.
func fromAvroJSON(s avro.Schema, v any) (any, error) {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	bad := func() (any, error) { return nil, fmt.Errorf("%s: want %s", jsonText(v), s.Type()) }
	switch s := s.(type) {
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Null:
			if v != nil {
				return bad()
			}
			return nil, nil
		case avro.Boolean:
			if b, ok := v.(bool); ok {
				return b, nil
			}
		case avro.Int, avro.Long:
			n, ok := v.(json.Number)
			if !ok {
				return bad()
			}
			i, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return bad()
			}
			if s.Type() == avro.Int {
				if i < math.MinInt32 || i > math.MaxInt32 {
					return bad()
				}
				if s.Logical() != nil && s.Logical().Type() == avro.Date {
					return time.UnixMilli(i * 86400000).UTC(), nil
				}
				return int(i), nil
			}
			if l := s.Logical(); l != nil {
				switch l.Type() {
				case avro.TimestampMillis, avro.LocalTimestampMillis:
					return time.UnixMilli(i).UTC(), nil
				case avro.TimestampMicros, avro.LocalTimestampMicros:
					return time.UnixMicro(i).UTC(), nil
				case avro.TimeMicros:
					return time.Duration(i) * time.Microsecond, nil
				}
			}
			return i, nil
		case avro.Float, avro.Double:
			n, ok := v.(json.Number)
			if !ok {
				return bad()
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return bad()
			}
			if s.Type() == avro.Float {
				return float32(f), nil
			}
			return f, nil
		case avro.String:
			if str, ok := v.(string); ok {
				return str, nil
			}
		case avro.Bytes:
			if str, ok := v.(string); ok {
				return codePoints(str)
			}
		}
		return bad()
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, ok := m[f.Name()]
			if !ok {
				if f.HasDefault() {
					continue
				}
				return nil, fmt.Errorf("record %s: field %s is missing", s.FullName(), f.Name())
			}
			nv, err := fromAvroJSON(f.Type(), fv)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			out[f.Name()] = nv
		}
		return out, nil
	case *avro.EnumSchema:
		if str, ok := v.(string); ok {
			return str, nil
		}
		return bad()
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(a))
		for i, e := range a {
			var err error
			if out[i], err = fromAvroJSON(s.Items(), e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			var err error
			if out[k], err = fromAvroJSON(s.Values(), e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			if !s.Nullable() {
				return bad()
			}
			return map[string]any{}, nil
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("%s: a union value is {\"type\": value}", jsonText(v))
		}
		for name, e := range m {
			branch := unionBranch(s, name)
			if branch == nil {
				return nil, fmt.Errorf("union has no branch %s", name)
			}
			nv, err := fromAvroJSON(branch, e)
			if err != nil {
				return nil, err
			}
			return map[string]any{hambaName(branch): nv}, nil
		}
	case *avro.FixedSchema:
		str, ok := v.(string)
		if !ok {
			return bad()
		}
		b, err := codePoints(str)
		if err != nil {
			return nil, err
		}
		if len(b) != s.Size() {
			return nil, fmt.Errorf("fixed %s has %d bytes, not %d", s.FullName(), s.Size(), len(b))
		}
		arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf(b))
		return arr.Interface(), nil
	}
	return nil, fmt.Errorf("schema type %s is not served", s.Type())
}

// codePoints is Avro's JSON encoding of bytes: each character one byte.
func codePoints(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 255 {
			return nil, fmt.Errorf("bytes as a JSON string take characters up to \\u00ff, not %q", r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

func fromCodePoints(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		b = append(b[:40], "..."...)
	}
	return string(b)
}

// toAvroJSON turns what hamba/avro decoded generically into Avro's JSON
// encoding.
func toAvroJSON(s avro.Schema, v any) (any, error) {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	switch s := s.(type) {
	case *avro.PrimitiveSchema:
		switch x := v.(type) {
		case []byte:
			return fromCodePoints(x), nil
		case time.Time:
			switch {
			case s.Type() == avro.Int:
				return x.UnixMilli() / 86400000, nil
			case s.Logical() != nil && (s.Logical().Type() == avro.TimestampMicros || s.Logical().Type() == avro.LocalTimestampMicros):
				return x.UnixMicro(), nil
			default:
				return x.UnixMilli(), nil
			}
		case time.Duration:
			if s.Type() == avro.Int {
				return x.Milliseconds(), nil
			}
			return x.Microseconds(), nil
		}
		return v, nil
	case *avro.RecordSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for _, f := range s.Fields() {
			var err error
			if out[f.Name()], err = toAvroJSON(f.Type(), m[f.Name()]); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.ArraySchema:
		a, _ := v.([]any)
		out := make([]any, len(a))
		for i, e := range a {
			var err error
			if out[i], err = toAvroJSON(s.Items(), e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.MapSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, e := range m {
			var err error
			if out[k], err = toAvroJSON(s.Values(), e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			return nil, nil
		}
		// hamba/avro answers a null-or-X union as the bare X.
		if types := s.Types(); s.Nullable() && len(types) == 2 {
			branch := types[0]
			if branch.Type() == avro.Null {
				branch = types[1]
			}
			j, err := toAvroJSON(branch, v)
			if err != nil {
				return nil, err
			}
			return map[string]any{unionName(branch): j}, nil
		}
		m, _ := v.(map[string]any)
		for name, e := range m {
			branch, _ := s.Types().Get(name)
			if branch == nil {
				return nil, fmt.Errorf("union has no branch %s", name)
			}
			j, err := toAvroJSON(branch, e)
			if err != nil {
				return nil, err
			}
			return map[string]any{unionName(branch): j}, nil
		}
		return nil, nil
	case *avro.FixedSchema:
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Array {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return fromCodePoints(b), nil
		}
		return v, nil
	}
	return v, nil
}

// unionName is how Avro's JSON encoding names a union branch: a named
// type's full name, else the type (a logical type by its underlying one).
func unionName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

// unionBranch finds a union's branch by its Avro JSON name.
func unionBranch(u *avro.UnionSchema, name string) avro.Schema {
	for _, t := range u.Types() {
		if unionName(t) == name {
			return t
		}
	}
	return nil
}

// hambaName is how hamba/avro keys a union branch in its generic map: a
// logical type with its logical name appended.
func hambaName(s avro.Schema) string {
	if _, ok := s.(avro.NamedSchema); !ok {
		if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
			return string(s.Type()) + "." + string(l.Logical().Type())
		}
	}
	return unionName(s)
}
