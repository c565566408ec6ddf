package connector

import (
	"fmt"
	"regexp"
	"strings"
)

// operand returns the key or value side of r with its schema.
func operand(r *Record, key bool) (*Schema, any) {
	if key {
		return r.KeySchema, r.Key
	}
	return r.ValueSchema, r.Value
}

func withOperand(r *Record, key bool, s *Schema, v any) *Record {
	c := r.Clone()
	if key {
		c.KeySchema, c.Key = s, v
	} else {
		c.ValueSchema, c.Value = s, v
	}
	return c
}

func sideName(key bool) string {
	if key {
		return "key"
	}
	return "value"
}

// InsertField adds the record's topic, partition, offset, timestamp or a
// static value as fields (Kafka's InsertField$Key / $Value).
type InsertField struct {
	key                                                    bool
	topicF, partitionF, offsetF, timestampF, staticF       string
	staticV                                                string
	topicOpt, partitionOpt, offsetOpt, timestampOpt, stOpt bool
}

// Config defines Kafka's keys.
func (*InsertField) Config() ConfigDef {
	f := func(n, doc string) ConfigKey {
		return ConfigKey{Name: n, Type: TypeString, Importance: Medium, Doc: doc}
	}
	return ConfigDef{
		f("topic.field", "Field name for Kafka topic. Suffix with ! to make this a required field, or ? to keep it optional (the default)."),
		f("partition.field", "Field name for Kafka partition."),
		f("offset.field", "Field name for Kafka offset - only applicable to sink connectors."),
		f("timestamp.field", "Field name for record timestamp."),
		f("static.field", "Field name for static data field."),
		f("static.value", "Static field value, if field name configured."),
	}
}

func fieldSpec(s string) (string, bool) {
	if n, ok := strings.CutSuffix(s, "!"); ok {
		return n, false
	}
	return strings.TrimSuffix(s, "?"), true
}

// Configure reads the field names.
func (t *InsertField) Configure(props map[string]string) error {
	if _, err := t.Config().Parse(props); err != nil {
		return err
	}
	t.topicF, t.topicOpt = fieldSpec(props["topic.field"])
	t.partitionF, t.partitionOpt = fieldSpec(props["partition.field"])
	t.offsetF, t.offsetOpt = fieldSpec(props["offset.field"])
	t.timestampF, t.timestampOpt = fieldSpec(props["timestamp.field"])
	t.staticF, t.stOpt = fieldSpec(props["static.field"])
	t.staticV = props["static.value"]
	if t.topicF == "" && t.partitionF == "" && t.offsetF == "" && t.timestampF == "" && t.staticF == "" {
		return fmt.Errorf("no field insertion configured")
	}
	if t.staticF != "" && t.staticV == "" {
		return fmt.Errorf("static.value is required with static.field")
	}
	return nil
}

type insertion struct {
	name string
	s    *Schema
	v    any
}

func (t *InsertField) insertions(r *Record) []insertion {
	var out []insertion
	add := func(name string, opt bool, typ Type, v any) {
		if name != "" {
			out = append(out, insertion{name, &Schema{Type: typ, Optional: opt}, v})
		}
	}
	add(t.topicF, t.topicOpt, String, r.Topic)
	add(t.partitionF, t.partitionOpt, Int32, r.Partition)
	if t.offsetF != "" && r.SourcePartition == nil {
		add(t.offsetF, t.offsetOpt, Int64, r.Offset)
	}
	if !r.Timestamp.IsZero() {
		add(t.timestampF, t.timestampOpt, Int64, r.Timestamp.UnixMilli())
	}
	add(t.staticF, t.stOpt, String, t.staticV)
	return out
}

// Apply inserts the fields; tombstones pass unchanged.
func (t *InsertField) Apply(r *Record) (*Record, error) {
	s, v := operand(r, t.key)
	if v == nil {
		return r, nil
	}
	ins := t.insertions(r)
	if s == nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("only Map objects supported in absence of schema for [field insertion], found: %T", v)
		}
		out := make(map[string]any, len(m)+len(ins))
		for k, x := range m {
			out[k] = x
		}
		for _, in := range ins {
			if i, ok := toInt64(in.v); ok {
				in.v = i
			}
			out[in.name] = in.v
		}
		return withOperand(r, t.key, nil, out), nil
	}
	st, ok := v.(*Struct)
	if !ok || s.Type != StructT {
		return nil, fmt.Errorf("only Struct objects supported for [field insertion], found: %T", v)
	}
	ns := &Schema{Type: StructT, Optional: s.Optional, Name: s.Name, Version: s.Version, Doc: s.Doc}
	ns.Fields = append(ns.Fields, s.Fields...)
	for _, in := range ins {
		ns.Fields = append(ns.Fields, Field{Name: in.name, Schema: in.s})
	}
	out := NewStruct(ns)
	for _, f := range s.Fields {
		out.values[f.Name] = st.Get(f.Name)
	}
	for _, in := range ins {
		out.values[in.name] = in.v
	}
	return withOperand(r, t.key, ns, out), nil
}

// ReplaceField drops, keeps and renames fields (Kafka's
// ReplaceField$Key / $Value: exclude, include, renames).
type ReplaceField struct {
	key              bool
	exclude, include map[string]bool
	renames          map[string]string
}

// Config defines Kafka's keys.
func (*ReplaceField) Config() ConfigDef {
	return ConfigDef{
		{Name: "exclude", Type: TypeList, Importance: Medium, Doc: "Fields to exclude. This takes precedence over the fields to include."},
		{Name: "include", Type: TypeList, Importance: Medium, Doc: "Fields to include. If specified, only these fields will be used."},
		{Name: "renames", Type: TypeList, Importance: Medium, Doc: "Field rename mappings.", Validate: validRenames},
	}
}

func validRenames(v any) error {
	for _, p := range v.([]string) {
		if from, to, ok := strings.Cut(p, ":"); !ok || from == "" || to == "" {
			return fmt.Errorf("Invalid rename mapping: %s", p)
		}
	}
	return nil
}

// Configure reads the lists (also the old names blacklist/whitelist).
func (t *ReplaceField) Configure(props map[string]string) error {
	props = maps2(props)
	for old, cur := range map[string]string{"blacklist": "exclude", "whitelist": "include"} {
		if v, ok := props[old]; ok {
			if _, set := props[cur]; !set {
				props[cur] = v
			}
		}
	}
	v, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	set := func(l any) map[string]bool {
		m := map[string]bool{}
		for _, s := range l.([]string) {
			m[s] = true
		}
		return m
	}
	t.exclude, t.include = set(v["exclude"]), set(v["include"])
	t.renames = map[string]string{}
	for _, p := range v["renames"].([]string) {
		from, to, _ := strings.Cut(p, ":")
		t.renames[from] = to
	}
	return nil
}

func maps2(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (t *ReplaceField) keep(f string) bool {
	return !t.exclude[f] && (len(t.include) == 0 || t.include[f])
}

func (t *ReplaceField) rename(f string) string {
	if to, ok := t.renames[f]; ok {
		return to
	}
	return f
}

// Apply rewrites the fields; tombstones pass unchanged.
func (t *ReplaceField) Apply(r *Record) (*Record, error) {
	s, v := operand(r, t.key)
	if v == nil {
		return r, nil
	}
	if s == nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("only Map objects supported in absence of schema for [field replacement], found: %T", v)
		}
		out := map[string]any{}
		for k, x := range m {
			if t.keep(k) {
				out[t.rename(k)] = x
			}
		}
		return withOperand(r, t.key, nil, out), nil
	}
	st, ok := v.(*Struct)
	if !ok {
		return nil, fmt.Errorf("only Struct objects supported for [field replacement], found: %T", v)
	}
	ns := &Schema{Type: StructT, Optional: s.Optional, Name: s.Name, Version: s.Version, Doc: s.Doc}
	for _, f := range s.Fields {
		if t.keep(f.Name) {
			ns.Fields = append(ns.Fields, Field{Name: t.rename(f.Name), Schema: f.Schema})
		}
	}
	out := NewStruct(ns)
	for _, f := range s.Fields {
		if t.keep(f.Name) {
			out.values[t.rename(f.Name)] = st.Get(f.Name)
		}
	}
	return withOperand(r, t.key, ns, out), nil
}

// ExtractField replaces the key or value with one of its fields (Kafka's
// ExtractField$Key / $Value, key "field").
type ExtractField struct {
	key   bool
	field string
}

// Config defines field.
func (*ExtractField) Config() ConfigDef {
	return ConfigDef{{Name: "field", Type: TypeString, Required: true, Importance: Medium, Doc: "Field name to extract.", Validate: NonEmpty}}
}

// Configure reads field.
func (t *ExtractField) Configure(props map[string]string) error {
	v, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.field = v["field"].(string)
	return nil
}

// Apply extracts the field.
func (t *ExtractField) Apply(r *Record) (*Record, error) {
	s, v := operand(r, t.key)
	if v == nil {
		return r, nil
	}
	if s == nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("only Map objects supported in absence of schema for [field extraction], found: %T", v)
		}
		return withOperand(r, t.key, nil, m[t.field]), nil
	}
	st, ok := v.(*Struct)
	if !ok {
		return nil, fmt.Errorf("only Struct objects supported for [field extraction], found: %T", v)
	}
	f := s.Field(t.field)
	if f == nil {
		return nil, fmt.Errorf("unknown field: %s", t.field)
	}
	return withOperand(r, t.key, f.Schema, st.Get(t.field)), nil
}

// ValueToKey replaces the key with fields of the value (Kafka's
// ValueToKey, key "fields").
type ValueToKey struct{ fields []string }

// Config defines fields.
func (*ValueToKey) Config() ConfigDef {
	return ConfigDef{{Name: "fields", Type: TypeList, Required: true, Importance: High, Doc: "Field names on the record value to extract as the record key.", Validate: NonEmpty}}
}

// Configure reads fields.
func (t *ValueToKey) Configure(props map[string]string) error {
	v, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.fields = v["fields"].([]string)
	return nil
}

// Apply builds the key.
func (t *ValueToKey) Apply(r *Record) (*Record, error) {
	c := r.Clone()
	if r.ValueSchema == nil {
		m, ok := r.Value.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("only Map objects supported in absence of schema for [copying fields from value to key], found: %T", r.Value)
		}
		key := map[string]any{}
		for _, f := range t.fields {
			key[f] = m[f]
		}
		c.KeySchema, c.Key = nil, key
		return c, nil
	}
	st, ok := r.Value.(*Struct)
	if !ok {
		return nil, fmt.Errorf("only Struct objects supported for [copying fields from value to key], found: %T", r.Value)
	}
	ks := &Schema{Type: StructT}
	for _, f := range t.fields {
		vf := r.ValueSchema.Field(f)
		if vf == nil {
			return nil, fmt.Errorf("field does not exist: %s", f)
		}
		ks.Fields = append(ks.Fields, *vf)
	}
	key := NewStruct(ks)
	for _, f := range t.fields {
		key.values[f] = st.Get(f)
	}
	c.KeySchema, c.Key = ks, key
	return c, nil
}

// RegexRouter renames the topic when it matches regex fully (Kafka's
// RegexRouter; Java's $1 group references work in replacement).
type RegexRouter struct {
	re          *regexp.Regexp
	replacement string
}

// Config defines regex and replacement.
func (*RegexRouter) Config() ConfigDef {
	return ConfigDef{
		{Name: "regex", Type: TypeString, Required: true, Importance: High, Doc: "Regular expression to use for matching.", Validate: validRegex},
		{Name: "replacement", Type: TypeString, Required: true, Importance: High, Doc: "Replacement string."},
	}
}

var javaGroupRef = regexp.MustCompile(`\$(\d+)`)

// Configure compiles regex.
func (t *RegexRouter) Configure(props map[string]string) error {
	v, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.re = regexp.MustCompile("^(?:" + v["regex"].(string) + ")$")
	t.replacement = javaGroupRef.ReplaceAllString(v["replacement"].(string), "$${$1}")
	return nil
}

// Apply routes the record.
func (t *RegexRouter) Apply(r *Record) (*Record, error) {
	if !t.re.MatchString(r.Topic) {
		return r, nil
	}
	c := r.Clone()
	c.Topic = t.re.ReplaceAllString(r.Topic, t.replacement)
	return c, nil
}

// Filter drops every record it is applied to; used with a predicate
// (Kafka's Filter).
type Filter struct{}

// Config is empty.
func (*Filter) Config() ConfigDef { return nil }

// Configure has nothing to configure.
func (*Filter) Configure(map[string]string) error { return nil }

// Apply drops the record.
func (*Filter) Apply(*Record) (*Record, error) { return nil, nil }
