package restproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The jsonschema and protobuf embedded formats. Both are written in
// Confluent's wire format: magic byte 0, the schema id as 4 bytes
// big-endian, then for jsonschema the JSON text (checked against the
// schema), for protobuf the message indexes (a zigzag varint count then
// each index as a zigzag varint; the first message as the single byte 0)
// and the message's binary encoding. A produced protobuf value is the
// schema's first message, in protobuf's JSON mapping.

// schemaKind is what a registry schema type needs to encode and decode.
type schemaKind struct {
	typ sr.SchemaType
	// parse compiles text; refs holds the text of every schema it
	// references, directly or not, by reference name.
	parse func(text string, refs map[string]string) (any, error)
	// encode returns what follows the schema id.
	encode func(parsed any, v json.RawMessage) ([]byte, error)
	// decode reads what follows the schema id.
	decode func(parsed any, b []byte) (json.RawMessage, error)
}

var (
	jsonSchemaKind = &schemaKind{typ: sr.TypeJSON, parse: parseJSONSchema, encode: encodeJSONSchema, decode: decodeJSONSchema}
	protobufKind   = &schemaKind{typ: sr.TypeProtobuf, parse: parseProtobuf, encode: encodeProtobuf, decode: decodeProtobuf}
)

// parsedByID returns the schema id parsed as kind, caching it.
func (s *schemas) parsedByID(ctx context.Context, k *schemaKind, id int) (any, error) {
	s.mu.Lock()
	p, ok := s.parsed[id]
	s.mu.Unlock()
	if ok {
		return p, nil
	}
	got, err := s.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, registryError(err)
	}
	if got.Type != k.typ {
		return nil, errInvalidSchema(fmt.Errorf("schema %d is %s, not %s", id, got.Type, k.typ))
	}
	refs := map[string]string{}
	if err := s.references(ctx, k, got.References, refs, map[string]bool{}); err != nil {
		return nil, err
	}
	if p, err = k.parse(got.Schema, refs); err != nil {
		return nil, errInvalidSchema(err)
	}
	s.mu.Lock()
	s.parsed[id] = p
	s.mu.Unlock()
	return p, nil
}

// typeOf returns the type of schema id (ids never change, so it is
// cached).
func (s *schemas) typeOf(ctx context.Context, id int) (sr.SchemaType, error) {
	s.mu.Lock()
	t, ok := s.types[id]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	got, err := s.cl.SchemaByID(ctx, id)
	if err != nil {
		return 0, registryError(err)
	}
	s.mu.Lock()
	s.types[id] = got.Type
	s.mu.Unlock()
	return got.Type, nil
}

// references adds the text of refs, and of what they reference, to out
// by reference name.
func (s *schemas) references(ctx context.Context, k *schemaKind, refs []sr.SchemaReference, out map[string]string, visiting map[string]bool) error {
	for _, ref := range refs {
		key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
		if visiting[key] {
			return errInvalidSchema(fmt.Errorf("circular reference %s", ref.Name))
		}
		got, err := s.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return registryError(err)
		}
		if got.Type != k.typ {
			return errInvalidSchema(fmt.Errorf("reference %s is %s, not %s", ref.Name, got.Type, k.typ))
		}
		out[ref.Name] = got.Schema.Schema
		visiting[key] = true
		err = s.references(ctx, k, got.References, out, visiting)
		delete(visiting, key)
		if err != nil {
			return err
		}
	}
	return nil
}

// registerKind registers text as kind under subject and returns its id
// and parsed schema.
func (s *schemas) registerKind(ctx context.Context, k *schemaKind, subject, text string) (int, any, error) {
	key := [2]string{subject, k.typ.String() + "\x00" + text}
	s.mu.Lock()
	id, ok := s.registered[key]
	p := s.parsed[id]
	s.mu.Unlock()
	if ok && p != nil {
		return id, p, nil
	}
	p, err := k.parse(text, nil)
	if err != nil {
		return 0, nil, errInvalidSchema(err)
	}
	ss, err := s.cl.CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: k.typ})
	if err != nil {
		return 0, nil, registryError(err)
	}
	s.mu.Lock()
	s.parsed[ss.ID] = p
	s.registered[key] = ss.ID
	s.mu.Unlock()
	return ss.ID, p, nil
}

// kindCodec is the codec of a jsonschema or protobuf key or value.
func kindCodec(k *schemaKind) func(context.Context, *Proxy, string, bool, *string, *int) (codec, error) {
	return func(ctx context.Context, p *Proxy, subject string, isKey bool, schema *string, id *int) (codec, error) {
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
		var parsed any
		var sid int
		var err error
		if id != nil {
			sid = *id
			parsed, err = p.schemas.parsedByID(ctx, k, sid)
		} else {
			sid, parsed, err = p.schemas.registerKind(ctx, k, subject, *schema)
		}
		if err != nil {
			return codec{}, err
		}
		return codec{schemaID: &sid, encode: func(v json.RawMessage) ([]byte, error) {
			if isNull(v) {
				return nil, nil
			}
			body, err := k.encode(parsed, v)
			if err != nil {
				return nil, errf(422, 42203, "Conversion of JSON to Object failed: %v", err)
			}
			out := make([]byte, 5, 5+len(body))
			binary.BigEndian.PutUint32(out[1:], uint32(sid))
			return append(out, body...), nil
		}}, nil
	}
}

// kindDecode answers record bytes written in kind's wire format as JSON.
func kindDecode(k *schemaKind) func(context.Context, *Proxy, []byte) (json.RawMessage, error) {
	return func(ctx context.Context, p *Proxy, b []byte) (json.RawMessage, error) {
		if b == nil {
			return json.RawMessage("null"), nil
		}
		if len(b) < 5 || b[0] != 0 {
			return nil, errf(500, 50002, "record data is not in the Schema Registry's wire format; consume it with the binary format")
		}
		if p.schemas == nil {
			return nil, errf(500, 50002, "the REST Proxy has no schema.registry.url to read %s with", k.typ)
		}
		parsed, err := p.schemas.parsedByID(ctx, k, int(binary.BigEndian.Uint32(b[1:5])))
		if err != nil {
			return nil, err
		}
		j, err := k.decode(parsed, b[5:])
		if err != nil {
			return nil, errf(500, 50002, "decoding %s: %v", k.typ, err)
		}
		return j, nil
	}
}

const (
	schemaDir = "mem://schemas/"
	schemaURL = schemaDir + "schema.json"
)

func parseJSONSchema(text string, refs map[string]string) (any, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(refLoader{refs: refs, rootID: jsonID(doc)})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), schemaURL, ""))
	}
	return sch, nil
}

// refLoader loads a $ref to another document from the schema's
// references, each named by the URL the $ref uses: as is, relative to the
// schema's base or its $id, or by the referenced document's own $id.
type refLoader struct {
	refs   map[string]string
	rootID string
}

func (l refLoader) Load(u string) (any, error) {
	for name, text := range l.refs {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("reference %s: %v", name, err)
		}
		if l.names(name, jsonID(doc), u) {
			return doc, nil
		}
	}
	return nil, fmt.Errorf("unresolvable $ref %q: no reference has that name", strings.TrimPrefix(u, schemaDir))
}

func (l refLoader) names(name, id, u string) bool {
	if name == u || id != "" && id == u {
		return true
	}
	for _, base := range []string{schemaURL, l.rootID} {
		b, err := url.Parse(base)
		n, err2 := url.Parse(name)
		if base != "" && err == nil && err2 == nil && b.ResolveReference(n).String() == u {
			return true
		}
	}
	name = strings.TrimPrefix(name, "./")
	return !strings.Contains(name, ":") && strings.HasSuffix(u, "/"+name)
}

// jsonID is a document's "$id" (draft 4: "id") without an empty fragment.
func jsonID(doc any) string {
	obj, _ := doc.(map[string]any)
	id, _ := obj["$id"].(string)
	if id == "" {
		id, _ = obj["id"].(string)
	}
	return strings.TrimSuffix(id, "#")
}

func encodeJSONSchema(parsed any, v json.RawMessage) ([]byte, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		return nil, err
	}
	if err := parsed.(*jsonschema.Schema).Validate(inst); err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), schemaURL, ""))
	}
	var out bytes.Buffer
	if err := json.Compact(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func decodeJSONSchema(_ any, b []byte) (json.RawMessage, error) {
	if !json.Valid(b) {
		return nil, fmt.Errorf("record data is not JSON")
	}
	return json.RawMessage(b), nil
}

const protoFile = "schema.proto"

// parseProtobuf compiles text, resolving each import from the reference
// named by its path.
func parseProtobuf(text string, refs map[string]string) (any, error) {
	resolve := func(path string) (protocompile.SearchResult, error) {
		if path == protoFile {
			return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
		}
		if src, ok := refs[path]; ok {
			return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
		}
		return protocompile.SearchResult{}, fs.ErrNotExist
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(resolve))}
	files, err := c.Compile(context.Background(), protoFile)
	if err != nil {
		return nil, err
	}
	if files[0].Messages().Len() == 0 {
		return nil, fmt.Errorf("the schema has no message")
	}
	return files[0], nil
}

// encodeProtobuf writes v, in protobuf's JSON mapping, as the schema's
// first message.
func encodeProtobuf(parsed any, v json.RawMessage) ([]byte, error) {
	md := parsed.(protoreflect.FileDescriptor).Messages().Get(0)
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal(v, m); err != nil {
		return nil, err
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	// Message indexes [0], written as the single byte 0.
	return append([]byte{0}, body...), nil
}

// decodeProtobuf reads the message indexes, then the message they name.
func decodeProtobuf(parsed any, b []byte) (json.RawMessage, error) {
	n, l := protowire.ConsumeVarint(b)
	if l < 0 {
		return nil, fmt.Errorf("bad message indexes")
	}
	b = b[l:]
	count := protowire.DecodeZigZag(n)
	indexes := []int64{0}
	if count != 0 {
		if count < 0 || count > int64(len(b)) {
			return nil, fmt.Errorf("bad message index count %d", count)
		}
		indexes = indexes[:0]
		for range count {
			x, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return nil, fmt.Errorf("bad message indexes")
			}
			b = b[l:]
			indexes = append(indexes, protowire.DecodeZigZag(x))
		}
	}
	msgs := parsed.(protoreflect.FileDescriptor).Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range indexes {
		if i < 0 || i >= int64(msgs.Len()) {
			return nil, fmt.Errorf("message index %v not in the schema", indexes)
		}
		md = msgs.Get(int(i))
		msgs = md.Messages()
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
}
