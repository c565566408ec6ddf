package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// parsedProto is a compiled Protobuf schema: the .proto file the schema
// text (or base64 FileDescriptorProto) defines, linked with its imports.
type parsedProto struct {
	file protoreflect.FileDescriptor
	// refOf names the subject and version each import came from (import
	// path to "subject\x00version"); well-known imports are absent.
	refOf map[string]string
	// canonical identifies the schema: the file's descriptor, without
	// source positions, file name and JSON names, in Confluent's
	// normalized order (normalizeProto), marshalled deterministically, so
	// comments, layout, declaration order and the text or descriptor form
	// of one schema do not make two schemas.
	canonical string
	// fromDescriptor: the schema was given as a base64 descriptor.
	fromDescriptor bool
}

// protoMainFile is the name the schema being parsed gets when its text
// does not carry one (a descriptor does).
const protoMainFile = "schema.proto"

// protoBuiltins are the imports Confluent's registry resolves without a
// reference besides google/protobuf/*.proto: its own metadata and
// decimal types (the same packages, names and field numbers).
var protoBuiltins = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
}

// protoImport is one referenced schema: its text and where it came from.
type protoImport struct {
	text, ref string
}

// protoImports collects the schemas refs name, and theirs, by import
// path (the reference name). A reference cycle or a missing reference
// is an invalid schema.
func (r *Registry) protoImports(ctx string, refs []Reference, out map[string]protoImport, visiting map[string]bool) *Error {
	for _, ref := range refs {
		if ref.Name == "" || ref.Subject == "" {
			return invalidSchema("Invalid schema reference %s: name and subject are required", refString(ref))
		}
		v, err := r.version(refSubject(ctx, ref.Subject), ref.Version, false)
		if err != nil {
			return invalidSchema("Invalid schema reference %s: %s", refString(ref), err.Message)
		}
		id := v.Subject + "\x00" + strconv.Itoa(v.Version)
		if visiting[id] {
			return invalidSchema("Invalid schema reference %s: circular reference", refString(ref))
		}
		if _, done := out[ref.Name]; done {
			continue
		}
		visiting[id] = true
		err = r.protoImports(contextOf(v.Subject), v.References, out, visiting)
		delete(visiting, id)
		if err != nil {
			return err
		}
		out[ref.Name] = protoImport{text: v.Schema, ref: id}
	}
	return nil
}

// parseProtobuf checks a Protobuf schema with its references.
func (r *Registry) parseProtobuf(ctx, text string, refs []Reference) (*parsed, *Error) {
	imports := map[string]protoImport{}
	if err := r.protoImports(ctx, refs, imports, map[string]bool{}); err != nil {
		return nil, err
	}
	p, err := compileProto(text, imports)
	if err != nil {
		return nil, invalidSchema("Invalid schema of type %s, details: %v", typeProtobuf, err)
	}
	return &parsed{typ: typeProtobuf, proto: p, key: typeProtobuf + "\x00" + p.canonical + "\x00" + refsKey(refs)}, nil
}

// refsKey is the identity of a reference list: its set, in any order.
func refsKey(refs []Reference) string {
	var out []string
	for _, ref := range refs {
		out = append(out, fmt.Sprintf("%s\x00%s\x00%d", ref.Name, ref.Subject, ref.Version))
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), "\x00")
}

// protoDescriptor reads the base64 FileDescriptorProto form of a schema
// (what Confluent's serializers in Python and Go register).
func protoDescriptor(text string) (*descriptorpb.FileDescriptorProto, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(b, fd) != nil || len(fd.ProtoReflect().GetUnknown()) > 0 ||
		fd.GetName() == "" && len(fd.MessageType) == 0 && len(fd.EnumType) == 0 {
		return nil, false // base64 of something else
	}
	// Descriptors from generated code carry no JSON names; the compiler
	// reads a missing one as a clashing custom "": give each the default.
	defaultJSONNames(fd.Extension, fd.MessageType)
	return fd, true
}

func defaultJSONNames(fs []*descriptorpb.FieldDescriptorProto, ms []*descriptorpb.DescriptorProto) {
	for _, f := range fs {
		if f.GetJsonName() == "" {
			f.JsonName = proto.String(jsonCamelCase(f.GetName()))
		}
	}
	for _, m := range ms {
		defaultJSONNames(append(slices.Clip(m.Field), m.Extension...), m.NestedType)
	}
}

// jsonCamelCase is protoc's default JSON name of a field: underscores
// dropped, each letter after one upper-cased.
func jsonCamelCase(name string) string {
	var b strings.Builder
	upper := false
	for _, c := range name {
		switch {
		case c == '_':
			upper = true
		case upper && 'a' <= c && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
			upper = false
		default:
			b.WriteRune(c)
			upper = false
		}
	}
	return b.String()
}

// compileProto compiles text, the .proto source or its base64
// descriptor, resolving imports from imports and the built-in files.
func compileProto(text string, imports map[string]protoImport) (p *parsedProto, err error) {
	defer func() {
		// A descriptor is read as given: one the compiler trips over is
		// an invalid schema, not a crash.
		if v := recover(); v != nil {
			p, err = nil, fmt.Errorf("invalid descriptor: %v", v)
		}
	}()
	main := protoMainFile
	mainDesc, isDesc := protoDescriptor(text)
	if isDesc && mainDesc.GetName() != "" {
		main = mainDesc.GetName()
	}
	resolve := func(path string) (protocompile.SearchResult, error) {
		var src string
		switch imp, ok := imports[path]; {
		case path == main && isDesc:
			return protocompile.SearchResult{Proto: mainDesc}, nil
		case path == main:
			src = text
		case ok:
			src = imp.text
		case protoBuiltins[path] != "":
			src = protoBuiltins[path]
		default:
			return protocompile.SearchResult{}, fs.ErrNotExist
		}
		if fd, ok := protoDescriptor(src); ok {
			fd.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fd}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(resolve))}
	files, err := c.Compile(context.Background(), main)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (an import needs a reference whose name is its path)", err)
		}
		return nil, err
	}
	if isDesc {
		// The compiler takes a descriptor as already checked: check it.
		deps := new(protoregistry.Files)
		if err := registerImports(deps, files[0]); err != nil {
			return nil, err
		}
		if _, err := protodesc.NewFile(mainDesc, deps); err != nil {
			return nil, err
		}
	}
	p = &parsedProto{file: files[0], refOf: map[string]string{}, fromDescriptor: isDesc}
	for path, imp := range imports {
		p.refOf[path] = imp.ref
	}
	fd := protodesc.ToFileDescriptorProto(p.file)
	fd.Name, fd.SourceCodeInfo = nil, nil
	if fd.GetSyntax() == "proto2" {
		fd.Syntax = nil
	}
	clearJSONNames(fd.MessageType)
	normalizeProto(fd)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fd)
	if err != nil {
		return nil, err
	}
	p.canonical = string(b)
	return p, nil
}

// registerImports adds what f imports, directly or not, to reg.
func registerImports(reg *protoregistry.Files, f protoreflect.FileDescriptor) error {
	for i := range f.Imports().Len() {
		imp := f.Imports().Get(i).FileDescriptor
		if _, err := reg.FindFileByPath(imp.Path()); err == nil {
			continue
		}
		if err := registerImports(reg, imp); err != nil {
			return err
		}
		if err := reg.RegisterFile(imp); err != nil {
			return err
		}
	}
	return nil
}

func clearJSONNames(ms []*descriptorpb.DescriptorProto) {
	for _, m := range ms {
		for _, f := range m.Field {
			f.JsonName = nil
		}
		for _, f := range m.Extension {
			f.JsonName = nil
		}
		clearJSONNames(m.NestedType)
	}
}

// normalizeProto puts what Confluent's normalization orders in order:
// imports by name, fields by number, oneofs by their first field, enum
// values by number, reserved and extension ranges by start. Messages and
// enums keep their order (message indexes in serialized records point
// into it).
func normalizeProto(fd *descriptorpb.FileDescriptorProto) {
	type dep struct {
		name         string
		public, weak bool
	}
	deps := make([]dep, len(fd.Dependency))
	for i, d := range fd.Dependency {
		deps[i].name = d
		deps[i].public = slices.Contains(fd.PublicDependency, int32(i))
		deps[i].weak = slices.Contains(fd.WeakDependency, int32(i))
	}
	slices.SortFunc(deps, func(a, b dep) int { return strings.Compare(a.name, b.name) })
	fd.Dependency, fd.PublicDependency, fd.WeakDependency = nil, nil, nil
	for i, d := range deps {
		fd.Dependency = append(fd.Dependency, d.name)
		if d.public {
			fd.PublicDependency = append(fd.PublicDependency, int32(i))
		}
		if d.weak {
			fd.WeakDependency = append(fd.WeakDependency, int32(i))
		}
	}
	normalizeEnums(fd.EnumType)
	normalizeMessages(fd.MessageType)
}

func normalizeEnums(es []*descriptorpb.EnumDescriptorProto) {
	for _, e := range es {
		slices.SortStableFunc(e.Value, func(a, b *descriptorpb.EnumValueDescriptorProto) int {
			return int(a.GetNumber()) - int(b.GetNumber())
		})
		slices.SortFunc(e.ReservedRange, func(a, b *descriptorpb.EnumDescriptorProto_EnumReservedRange) int {
			return int(a.GetStart()) - int(b.GetStart())
		})
		slices.Sort(e.ReservedName)
	}
}

func normalizeMessages(ms []*descriptorpb.DescriptorProto) {
	for _, m := range ms {
		slices.SortFunc(m.Field, func(a, b *descriptorpb.FieldDescriptorProto) int {
			return int(a.GetNumber()) - int(b.GetNumber())
		})
		// Fields are in number order now: a oneof's first member is the
		// first field naming it.
		order := map[int32]int32{}
		for _, f := range m.Field {
			if f.OneofIndex != nil {
				if _, ok := order[*f.OneofIndex]; !ok {
					order[*f.OneofIndex] = int32(len(order))
				}
			}
		}
		if len(order) == len(m.OneofDecl) {
			oneofs := make([]*descriptorpb.OneofDescriptorProto, len(m.OneofDecl))
			for old, o := range m.OneofDecl {
				oneofs[order[int32(old)]] = o
			}
			m.OneofDecl = oneofs
			for _, f := range m.Field {
				if f.OneofIndex != nil {
					f.OneofIndex = proto.Int32(order[*f.OneofIndex])
				}
			}
		}
		slices.SortFunc(m.ReservedRange, func(a, b *descriptorpb.DescriptorProto_ReservedRange) int {
			return int(a.GetStart()) - int(b.GetStart())
		})
		slices.SortFunc(m.ExtensionRange, func(a, b *descriptorpb.DescriptorProto_ExtensionRange) int {
			return int(a.GetStart()) - int(b.GetStart())
		})
		slices.Sort(m.ReservedName)
		normalizeEnums(m.EnumType)
		normalizeMessages(m.NestedType)
	}
}

// storedSchema is the text register stores: a Protobuf schema given as
// a descriptor is stored as .proto text, as Confluent's registry does,
// when that text is the same schema again; anything else as given.
func (r *Registry) storedSchema(ctx string, p *parsed, text string, refs []Reference) string {
	if p.proto == nil || !p.proto.fromDescriptor {
		return text
	}
	printed, ok := protoText(p.proto.file)
	if !ok {
		return text
	}
	if again, err := r.parseIn(ctx, typeProtobuf, printed, refs); err != nil || again.key != p.key {
		return text
	}
	return printed
}

// serializedProto is a Protobuf schema in Confluent's "serialized" format:
// its FileDescriptorProto in base64, what ?format=serialized asks for.
func serializedProto(p *parsedProto) string {
	fd := protodesc.ToFileDescriptorProto(p.file)
	fd.SourceCodeInfo = nil
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(fd)
	return base64.StdEncoding.EncodeToString(b)
}

// formatSchema applies the format query parameter to a stored schema:
// "serialized" turns a Protobuf schema into its base64 descriptor, as
// Confluent's Protobuf deserializers ask. Other formats and types leave
// the text as registered.
func (r *Registry) formatSchema(req *http.Request, ctx, typ, text string, refs []Reference) string {
	if typ != typeProtobuf || req.URL.Query().Get("format") != "serialized" {
		return text
	}
	p, err := r.parseIn(ctx, typ, text, refs)
	if err != nil {
		return text
	}
	return serializedProto(p.proto)
}
