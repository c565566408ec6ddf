package connect

import (
	"fmt"
	"sort"
	"strings"

	"github.com/samsa-io/samsa/connector"
)

// plugin is one built-in connector class.
type plugin struct {
	class   string // the class name the REST API reports
	aliases []string
	source  bool
	new     func() connector.Connector
}

const version = "0.1.0"

// plugins lists the built-in connectors; Kafka's class names of the
// FileStream connectors are theirs, so configs written for Kafka work.
var plugins = []plugin{
	{class: "org.apache.kafka.connect.file.FileStreamSourceConnector", aliases: []string{"FileStreamSource", "FileStreamSourceConnector"}, source: true,
		new: func() connector.Connector { return &FileStreamSource{} }},
	{class: "org.apache.kafka.connect.file.FileStreamSinkConnector", aliases: []string{"FileStreamSink", "FileStreamSinkConnector"},
		new: func() connector.Connector { return &FileStreamSink{} }},
	{class: "io.samsa.connect.DatagenSourceConnector", aliases: []string{"Datagen", "DatagenSource", "DatagenSourceConnector"}, source: true,
		new: func() connector.Connector { return &DatagenSource{} }},
}

// findPlugin looks a class up by full name or alias (case-insensitive
// for aliases, as Kafka's plugin aliases).
func findPlugin(class string) (*plugin, error) {
	class = strings.TrimSpace(class)
	for i, p := range plugins {
		if p.class == class {
			return &plugins[i], nil
		}
		for _, a := range p.aliases {
			if strings.EqualFold(a, class) {
				return &plugins[i], nil
			}
		}
	}
	var names []string
	for _, p := range plugins {
		names = append(names, p.class)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("Failed to find any class that implements Connector and which name matches %s, available connectors are: %s", class, strings.Join(names, ", "))
}

func (p *plugin) typeName() string {
	if p.source {
		return "source"
	}
	return "sink"
}
