package connector

import (
	"fmt"
	"regexp"
	"strings"
)

// Transformation is a single message transform (SMT). Apply returns the
// changed record, or nil to drop it; it must not modify its argument.
type Transformation interface {
	Config() ConfigDef
	Configure(props map[string]string) error
	Apply(r *Record) (*Record, error)
}

// Predicate decides whether a transform applies to a record.
type Predicate interface {
	Config() ConfigDef
	Configure(props map[string]string) error
	Test(r *Record) bool
}

const (
	transformsPkg = "org.apache.kafka.connect.transforms."
	predicatesPkg = "org.apache.kafka.connect.transforms.predicates."
)

// NewTransformation returns the transform a Kafka class name names (the
// package prefix may be left out): InsertField$Key/$Value,
// ReplaceField$Key/$Value, ExtractField$Key/$Value, ValueToKey,
// RegexRouter, Filter.
func NewTransformation(class string) (Transformation, error) {
	name := strings.TrimPrefix(class, transformsPkg)
	base, side, _ := strings.Cut(name, "$")
	key := side == "Key"
	if side != "" && side != "Key" && side != "Value" {
		base = ""
	}
	switch base {
	case "InsertField":
		if side != "" {
			return &InsertField{key: key}, nil
		}
	case "ReplaceField":
		if side != "" {
			return &ReplaceField{key: key}, nil
		}
	case "ExtractField":
		if side != "" {
			return &ExtractField{key: key}, nil
		}
	case "ValueToKey":
		if side == "" {
			return &ValueToKey{}, nil
		}
	case "RegexRouter":
		if side == "" {
			return &RegexRouter{}, nil
		}
	case "Filter":
		if side == "" {
			return &Filter{}, nil
		}
	}
	return nil, fmt.Errorf("class %s could not be found", class)
}

// NewPredicate returns the predicate a Kafka class name names:
// TopicNameMatches, RecordIsTombstone, HasHeaderKey.
func NewPredicate(class string) (Predicate, error) {
	switch strings.TrimPrefix(class, predicatesPkg) {
	case "TopicNameMatches":
		return &TopicNameMatches{}, nil
	case "RecordIsTombstone":
		return &RecordIsTombstone{}, nil
	case "HasHeaderKey":
		return &HasHeaderKey{}, nil
	}
	return nil, fmt.Errorf("class %s could not be found", class)
}

// Chain is a connector's configured transforms, applied in order.
type Chain struct {
	steps []chainStep
}

type chainStep struct {
	t         Transformation
	predicate Predicate
	negate    bool
}

// NewChain builds the chain a connector config describes with Kafka's
// keys: transforms=a,b; transforms.a.type=<class>; transforms.a.<key>;
// transforms.a.predicate=p; transforms.a.negate; predicates=p;
// predicates.p.type=<class>; predicates.p.<key>.
func NewChain(props map[string]string) (*Chain, error) {
	preds := map[string]Predicate{}
	for _, alias := range splitList(props["predicates"]) {
		sub := SubConfig(props, "predicates."+alias+".")
		p, err := NewPredicate(sub["type"])
		if err != nil {
			return nil, fmt.Errorf("predicates.%s.type: %w", alias, err)
		}
		if err := p.Configure(sub); err != nil {
			return nil, fmt.Errorf("predicate %s: %w", alias, err)
		}
		preds[alias] = p
	}
	c := &Chain{}
	for _, alias := range splitList(props["transforms"]) {
		sub := SubConfig(props, "transforms."+alias+".")
		t, err := NewTransformation(sub["type"])
		if err != nil {
			return nil, fmt.Errorf("transforms.%s.type: %w", alias, err)
		}
		if err := t.Configure(sub); err != nil {
			return nil, fmt.Errorf("transform %s: %w", alias, err)
		}
		step := chainStep{t: t, negate: strings.EqualFold(sub["negate"], "true")}
		if pa := sub["predicate"]; pa != "" {
			if step.predicate = preds[pa]; step.predicate == nil {
				return nil, fmt.Errorf("transforms.%s.predicate: predicate %q is not in predicates", alias, pa)
			}
		}
		c.steps = append(c.steps, step)
	}
	return c, nil
}

// Apply runs r through the chain; nil means a transform dropped it.
func (c *Chain) Apply(r *Record) (*Record, error) {
	for _, s := range c.steps {
		if r == nil {
			return nil, nil
		}
		if s.predicate != nil && s.predicate.Test(r) == s.negate {
			continue
		}
		var err error
		if r, err = s.t.Apply(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func splitList(s string) []string {
	l, _ := ParseConfigValue(TypeList, s)
	return l.([]string)
}

// TopicNameMatches is true for records whose topic matches pattern fully.
type TopicNameMatches struct{ re *regexp.Regexp }

// Config defines pattern.
func (*TopicNameMatches) Config() ConfigDef {
	return ConfigDef{{Name: "pattern", Type: TypeString, Required: true, Importance: Medium, Doc: "A Java regular expression for matching against the name of a record's topic.", Validate: validRegex}}
}

// Configure compiles pattern.
func (p *TopicNameMatches) Configure(props map[string]string) error {
	v, err := p.Config().Parse(props)
	if err != nil {
		return err
	}
	p.re = regexp.MustCompile("^(?:" + v["pattern"].(string) + ")$")
	return nil
}

// Test matches the topic.
func (p *TopicNameMatches) Test(r *Record) bool { return p.re.MatchString(r.Topic) }

// RecordIsTombstone is true for records with a null value.
type RecordIsTombstone struct{}

// Config is empty.
func (*RecordIsTombstone) Config() ConfigDef { return nil }

// Configure has nothing to configure.
func (*RecordIsTombstone) Configure(map[string]string) error { return nil }

// Test checks the value.
func (*RecordIsTombstone) Test(r *Record) bool { return r.Value == nil }

// HasHeaderKey is true for records with a header named name.
type HasHeaderKey struct{ name string }

// Config defines name.
func (*HasHeaderKey) Config() ConfigDef {
	return ConfigDef{{Name: "name", Type: TypeString, Required: true, Importance: Medium, Doc: "The header name.", Validate: NonEmpty}}
}

// Configure reads name.
func (p *HasHeaderKey) Configure(props map[string]string) error {
	v, err := p.Config().Parse(props)
	if err != nil {
		return err
	}
	p.name = v["name"].(string)
	return nil
}

// Test looks for the header.
func (p *HasHeaderKey) Test(r *Record) bool {
	for _, h := range r.Headers {
		if h.Key == p.name {
			return true
		}
	}
	return false
}

func validRegex(v any) error {
	_, err := regexp.Compile(v.(string))
	return err
}
