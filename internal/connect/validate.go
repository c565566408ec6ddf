package connect

import (
	"fmt"
	"strings"

	"github.com/samsa-io/samsa/connector"
)

// Groups of the common connector keys, Kafka's names.
const (
	groupCommon     = "Common"
	groupTransforms = "Transforms"
	groupPredicates = "Predicates"
	groupErrors     = "Error Handling"
)

// commonConfig is the keys every connector config has (Kafka's
// ConnectorConfig, and SinkConnectorConfig's for sinks).
func commonConfig(sink bool) connector.ConfigDef {
	d := connector.ConfigDef{
		{Name: "name", Type: connector.TypeString, Required: true, Importance: connector.High, Group: groupCommon, Doc: "Globally unique name to use for this connector.", Validate: nonEmptyName},
		{Name: "connector.class", Type: connector.TypeString, Required: true, Importance: connector.High, Group: groupCommon, Doc: "Name or alias of the class for this connector."},
		{Name: "tasks.max", Type: connector.TypeInt, Default: "1", Importance: connector.High, Group: groupCommon, Doc: "Maximum number of tasks to use for this connector.", Validate: connector.AtLeast(1)},
		{Name: "key.converter", Type: connector.TypeClass, Importance: connector.Low, Group: groupCommon, Doc: "Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka."},
		{Name: "value.converter", Type: connector.TypeClass, Importance: connector.Low, Group: groupCommon, Doc: "Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka."},
		{Name: "transforms", Type: connector.TypeList, Importance: connector.Low, Group: groupTransforms, Doc: "Aliases for the transformations to be applied to records."},
		{Name: "predicates", Type: connector.TypeList, Importance: connector.Low, Group: groupPredicates, Doc: "Aliases for the predicates used by transformations."},
		{Name: "errors.tolerance", Type: connector.TypeString, Default: "none", Importance: connector.Medium, Group: groupErrors, Doc: "Behavior for tolerating errors during connector operation. 'none' is the default value and signals that any error will result in an immediate connector task failure; 'all' changes the behavior to skip over problematic records.", Validate: connector.OneOf("none", "all")},
		{Name: "errors.log.enable", Type: connector.TypeBoolean, Default: "false", Importance: connector.Medium, Group: groupErrors, Doc: "If true, write each error and the details of the failed operation and problematic record to the Connect application log."},
	}
	if sink {
		d = append(d,
			connector.ConfigKey{Name: "topics", Type: connector.TypeList, Importance: connector.High, Group: groupCommon, Doc: "List of topics to consume, separated by commas"},
			connector.ConfigKey{Name: "topics.regex", Type: connector.TypeString, Importance: connector.High, Group: groupCommon, Doc: "Regular expression giving topics to consume.", Validate: func(v any) error { return checkRegex(v.(string)) }},
			connector.ConfigKey{Name: "errors.deadletterqueue.topic.name", Type: connector.TypeString, Importance: connector.Medium, Group: groupErrors, Doc: "The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an error when processed by this sink connector, or its transformations or converters."},
			connector.ConfigKey{Name: "errors.deadletterqueue.context.headers.enable", Type: connector.TypeBoolean, Default: "false", Importance: connector.Medium, Group: groupErrors, Doc: "If true, add headers containing error context to the messages written to the dead letter queue."},
		)
	}
	return d
}

func nonEmptyName(v any) error {
	if strings.TrimSpace(v.(string)) == "" {
		return fmt.Errorf("String may not be empty")
	}
	return nil
}

// validation is the answer of the validate endpoint (Kafka's ConfigInfos).
type validation struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []configInfo `json:"configs"`
}

type configInfo struct {
	Definition keyInfo   `json:"definition"`
	Value      valueInfo `json:"value"`
}

type keyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"`
	OrderInGroup  int      `json:"order"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
}

type valueInfo struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

func keyInfoOf(k connector.ConfigKey, order int) keyInfo {
	ki := keyInfo{Name: k.Name, Type: string(k.Type), Required: k.Required, Importance: string(k.Importance),
		Documentation: k.Doc, OrderInGroup: order, Width: "NONE", DisplayName: k.Name, Dependents: []string{}}
	if !k.Required {
		def := k.Default
		ki.DefaultValue = &def
	}
	if k.Group != "" {
		g := k.Group
		ki.Group = &g
	}
	return ki
}

// validateConfig checks a connector config as Kafka's validate endpoint:
// the common keys, the connector's own and those of its transforms and
// predicates. It fails (with the plugin nil) only when connector.class is
// missing or unknown.
func validateConfig(props map[string]string) (*validation, *plugin, error) {
	class := props["connector.class"]
	if class == "" {
		return nil, nil, fmt.Errorf("Connector config %s contains no connector type", formatProps(props))
	}
	p, err := findPlugin(class)
	if err != nil {
		return nil, nil, err
	}
	v := &validation{Name: p.class, Groups: []string{}}
	seenGroup := map[string]bool{}
	order := map[string]int{}
	addDef := func(def connector.ConfigDef, prefix, group string, props map[string]string) {
		values, _ := def.Validate(props)
		for i, k := range def {
			k.Name = prefix + k.Name
			if group != "" {
				k.Group = group
			}
			if k.Group != "" && !seenGroup[k.Group] {
				seenGroup[k.Group] = true
				v.Groups = append(v.Groups, k.Group)
			}
			order[k.Group]++
			cv := values[i]
			val := cv.Value
			vi := valueInfo{Name: k.Name, Value: &val, RecommendedValues: []string{}, Errors: cv.Errors, Visible: true}
			if _, set := props[strings.TrimPrefix(k.Name, prefix)]; !set && k.Required {
				vi.Value = nil
			}
			if vi.Errors == nil {
				vi.Errors = []string{}
			}
			v.ErrorCount += len(vi.Errors)
			v.Configs = append(v.Configs, configInfo{Definition: keyInfoOf(k, order[k.Group]), Value: vi})
		}
	}
	common := commonConfig(!p.source)
	addDef(common, "", "", props)
	if !p.source {
		t, re := strings.TrimSpace(props["topics"]), strings.TrimSpace(props["topics.regex"])
		if (t == "") == (re == "") {
			msg := "Must configure one of topics or topics.regex"
			if t != "" {
				msg = "topics and topics.regex are mutually exclusive options, but both are set."
			}
			for i := range v.Configs {
				if n := v.Configs[i].Definition.Name; n == "topics" || n == "topics.regex" {
					v.Configs[i].Value.Errors = append(v.Configs[i].Value.Errors, msg)
					v.ErrorCount++
				}
			}
		}
	}
	addDef(p.new().Config(), "", "", props)
	for _, kind := range []string{"transforms", "predicates"} {
		for _, alias := range splitCSV(props[kind]) {
			prefix := kind + "." + alias + "."
			sub := connector.SubConfig(props, prefix)
			group := strings.ToUpper(kind[:1]) + kind[1:len(kind)-1] + ": " + alias
			var def connector.ConfigDef
			var err error
			if kind == "transforms" {
				var t connector.Transformation
				if t, err = connector.NewTransformation(sub["type"]); err == nil {
					def = t.Config()
				}
			} else {
				var pr connector.Predicate
				if pr, err = connector.NewPredicate(sub["type"]); err == nil {
					def = pr.Config()
				}
			}
			typeKey := connector.ConfigKey{Name: "type", Type: connector.TypeClass, Required: true, Importance: connector.High, Doc: "Class for the '" + alias + "' " + kind[:len(kind)-1] + "."}
			if err != nil {
				typeKey.Validate = func(any) error { return fmt.Errorf("Class %s could not be found.", sub["type"]) }
			}
			addDef(append(connector.ConfigDef{typeKey}, def...), prefix, group, sub)
		}
	}
	return v, p, nil
}

// errorSummary is Kafka's message for an invalid config on create.
func (v *validation) errorSummary() string {
	var lines []string
	for _, c := range v.Configs {
		for _, e := range c.Value.Errors {
			lines = append(lines, c.Definition.Name+": "+e)
		}
	}
	return fmt.Sprintf("Connector configuration is invalid and contains the following %d error(s):\n%s\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`",
		v.ErrorCount, strings.Join(lines, "\n"))
}

func formatProps(m map[string]string) string {
	var parts []string
	for _, k := range connector.SortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
