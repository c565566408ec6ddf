package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a key's value type. The numbers are Kafka's DescribeConfigs
// ConfigType numbers (kmsg.ConfigType), so an Entry needs no mapping table.
type Type int8

// Kafka's config types, numbered as in the DescribeConfigs protocol.
const (
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

var typeNames = map[Type]string{
	Boolean: "a boolean (true or false)", String: "a string", Int: "an int",
	Short: "a short", Long: "a long", Double: "a double", List: "a list",
	Class: "a class name", Password: "a password",
}

func (t Type) String() string { return typeNames[t] }

// Importance is Kafka's ConfigDef importance of a key.
type Importance int8

// Kafka's ConfigDef importance levels.
const (
	Low Importance = iota
	Medium
	High
)

func (i Importance) String() string { return [...]string{"low", "medium", "high"}[i] }

// Dynamic says whether and how a broker key may change without a restart,
// following Kafka's DynamicBrokerConfig. Topic keys are always dynamic.
type Dynamic int8

// Dynamic update modes, as Kafka's documentation names them.
const (
	ReadOnly    Dynamic = iota // changes need a restart
	PerBroker                  // may be changed for one broker
	ClusterWide                // may be changed for one broker or as the cluster default
)

func (d Dynamic) String() string { return [...]string{"read-only", "per-broker", "cluster-wide"}[d] }

// Key describes one configuration key.
type Key struct {
	Name       string
	Type       Type
	Default    string // Kafka's default, as text; meaningful only when HasDefault
	HasDefault bool   // false: Kafka's default is null (the key has no value unless set)
	Validator  Validator
	Importance Importance
	Dynamic    Dynamic
	Internal   bool // Kafka defines it internally: accepted, but not described
	Doc        string
}

// ReadOnly reports whether the key cannot change without a restart.
func (k *Key) ReadOnly() bool { return k.Dynamic == ReadOnly }

// Sensitive reports whether values of the key must never be shown.
func (k *Key) Sensitive() bool { return k.Type == Password }

// Validator checks a parsed value beyond its type.
type Validator interface {
	valid(v any) bool
	want() string // completes "want ...", e.g. "an int at least 1"
}

type numRange struct {
	min, max       float64
	hasMin, hasMax bool
}

func atLeast(n float64) Validator    { return numRange{min: n, hasMin: true} }
func between(a, b float64) Validator { return numRange{min: a, max: b, hasMin: true, hasMax: true} }
func (r numRange) valid(v any) bool {
	f := toFloat(v)
	return (!r.hasMin || f >= r.min) && (!r.hasMax || f <= r.max)
}

func (r numRange) want() string {
	if r.hasMax {
		return fmt.Sprintf("between %s and %s", fmtNum(r.min), fmtNum(r.max))
	}
	return "at least " + fmtNum(r.min)
}

// oneOf accepts a string from a fixed set; Kafka's ValidString is
// case-sensitive and so is this.
type oneOf []string

func (o oneOf) valid(v any) bool {
	s, _ := v.(string)
	for _, x := range o {
		if s == x {
			return true
		}
	}
	return false
}
func (o oneOf) want() string { return "one of " + strings.Join(o, ", ") }

// listOf accepts a list whose every element is in a fixed set (ValidList.in).
type listOf []string

func (l listOf) valid(v any) bool {
	for _, e := range v.([]string) {
		if !oneOf(l).valid(e) {
			return false
		}
	}
	return true
}
func (l listOf) want() string { return "a comma-separated list of " + strings.Join(l, ", ") }

// gzipLevel is Kafka's GZIP level validator: -1 (zlib's default) or 1..9.
type gzipLevel struct{}

func (gzipLevel) valid(v any) bool { n := v.(int32); return n == -1 || (n >= 1 && n <= 9) }
func (gzipLevel) want() string     { return "-1 or an int between 1 and 9" }

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int16:
		return float64(n)
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return math.NaN()
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ValueError is an invalid value for a key. Its message names the key, the
// value and what is wanted.
type ValueError struct {
	Key   string
	Value string
	Want  string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid value %q for %s: want %s", e.Value, e.Key, e.Want)
}

// parse converts text to the key's Go value: bool, string, int32, int16,
// int64, float64 or []string. Like Kafka's ConfigDef, it trims surrounding
// whitespace first and splits lists on commas, trimming each element.
func (k *Key) parse(raw string) (any, error) {
	s := strings.TrimSpace(raw)
	bad := func() error { return &ValueError{Key: k.Name, Value: raw, Want: k.Type.String()} }
	var v any
	switch k.Type {
	case Boolean:
		switch strings.ToLower(s) {
		case "true":
			v = true
		case "false":
			v = false
		default:
			return nil, bad()
		}
	case String, Class, Password:
		v = s
	case Int:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, bad()
		}
		v = int32(n)
	case Short:
		n, err := strconv.ParseInt(s, 10, 16)
		if err != nil {
			return nil, bad()
		}
		v = int16(n)
	case Long:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, bad()
		}
		v = n
	case Double:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return nil, bad()
		}
		v = f
	case List:
		v = splitList(s)
	}
	if k.Validator != nil && !k.Validator.valid(v) {
		want := k.Validator.want()
		if _, ok := k.Validator.(numRange); ok {
			want = k.Type.String() + " " + want
		}
		return nil, &ValueError{Key: k.Name, Value: raw, Want: want}
	}
	return v, nil
}

// splitList splits a comma-separated list; the empty string is the empty list.
func splitList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// format renders a value the way Kafka's ConfigDef.convertToString does, so
// DescribeConfigs shows what a Kafka broker would show.
func format(t Type, v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return javaDouble(x)
	case []string:
		return strings.Join(x, ",")
	}
	return fmt.Sprint(v)
}

// javaDouble formats like Java's Double.toString: plain notation with at
// least one decimal between 1e-3 and 1e7, otherwise "1.7976931348623157E308".
func javaDouble(f float64) string {
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	if strings.HasPrefix(exp, "-") {
		exp = "-" + strings.TrimLeft(exp[1:], "0")
	} else {
		exp = strings.TrimLeft(exp, "0")
	}
	return mant + "E" + exp
}
