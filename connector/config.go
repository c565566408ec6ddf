package connector

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ConfigType is a config key's type, with Kafka's ConfigDef names.
type ConfigType string

// The config types.
const (
	TypeString   ConfigType = "STRING"
	TypeInt      ConfigType = "INT"
	TypeLong     ConfigType = "LONG"
	TypeDouble   ConfigType = "DOUBLE"
	TypeBoolean  ConfigType = "BOOLEAN"
	TypeList     ConfigType = "LIST"
	TypeClass    ConfigType = "CLASS"
	TypePassword ConfigType = "PASSWORD"
)

// Importance is a config key's importance (HIGH, MEDIUM, LOW).
type Importance string

// The importances.
const (
	High   Importance = "HIGH"
	Medium Importance = "MEDIUM"
	Low    Importance = "LOW"
)

// ConfigKey defines one config key. A key with Required set has no
// default; otherwise Default (a string, as in a properties file) applies.
type ConfigKey struct {
	Name       string
	Type       ConfigType
	Required   bool
	Default    string
	Importance Importance
	Doc        string
	Group      string
	// Validate checks a parsed value (string, int64, float64, bool or
	// []string by Type); nil accepts any.
	Validate func(v any) error
}

// ConfigDef is a connector's or transform's list of config keys.
type ConfigDef []ConfigKey

// ConfigValue is the outcome of validating one key: its value and the
// errors found, as Kafka's validate endpoint reports them.
type ConfigValue struct {
	Name   string
	Value  string
	Errors []string
}

// Validate checks props against the definition and returns one value per
// key, in definition order, plus the parsed values of the valid keys.
func (d ConfigDef) Validate(props map[string]string) ([]ConfigValue, map[string]any) {
	out := make([]ConfigValue, 0, len(d))
	parsed := map[string]any{}
	for _, k := range d {
		raw, set := props[k.Name]
		cv := ConfigValue{Name: k.Name, Value: raw}
		if !set {
			if k.Required {
				cv.Errors = append(cv.Errors, fmt.Sprintf("Missing required configuration %q which has no default value.", k.Name))
				out = append(out, cv)
				continue
			}
			raw = k.Default
			cv.Value = raw
		}
		v, err := ParseConfigValue(k.Type, raw)
		if err == nil && k.Validate != nil && (set || raw != "") {
			err = k.Validate(v)
		}
		if err != nil {
			cv.Errors = append(cv.Errors, fmt.Sprintf("Invalid value %s for configuration %s: %v", raw, k.Name, err))
		} else {
			parsed[k.Name] = v
		}
		out = append(out, cv)
	}
	return out, parsed
}

// Parse validates props and returns the parsed values, or an error that
// lists every invalid key.
func (d ConfigDef) Parse(props map[string]string) (map[string]any, error) {
	values, parsed := d.Validate(props)
	var errs []string
	for _, v := range values {
		errs = append(errs, v.Errors...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return parsed, nil
}

// ParseConfigValue parses raw as a value of type t.
func ParseConfigValue(t ConfigType, raw string) (any, error) {
	raw = strings.TrimSpace(raw)
	switch t {
	case TypeInt, TypeLong:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || (t == TypeInt && int64(int32(n)) != n) {
			return nil, fmt.Errorf("not a number of type %s", t)
		}
		return n, nil
	case TypeDouble:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number of type DOUBLE")
		}
		return f, nil
	case TypeBoolean:
		switch strings.ToLower(raw) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("expected value to be either true or false")
	case TypeList:
		var l []string
		for p := range strings.SplitSeq(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				l = append(l, p)
			}
		}
		return l, nil
	}
	return raw, nil
}

// AtLeast returns a validator of numbers >= min.
func AtLeast(min int64) func(any) error {
	return func(v any) error {
		if n, _ := v.(int64); n < min {
			return fmt.Errorf("Value must be at least %d", min)
		}
		return nil
	}
}

// NonEmpty is a validator of non-empty strings and lists.
func NonEmpty(v any) error {
	switch x := v.(type) {
	case string:
		if x == "" {
			return fmt.Errorf("String must be non-empty")
		}
	case []string:
		if len(x) == 0 {
			return fmt.Errorf("List must be non-empty")
		}
	}
	return nil
}

// OneOf returns a validator of strings from a fixed set (case-insensitive).
func OneOf(allowed ...string) func(any) error {
	return func(v any) error {
		s, _ := v.(string)
		for _, a := range allowed {
			if strings.EqualFold(s, a) {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
	}
}

// SubConfig returns the keys of props under prefix, with the prefix cut.
func SubConfig(props map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// SortedKeys returns m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
