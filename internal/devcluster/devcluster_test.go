package devcluster

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// A secured cluster's configuration: the client listener is named after
// its protocol and is the inter-broker listener, node properties come
// after the common ones, and a restart in the same Dir finds the
// listener again.
func TestConfigureSecuredListeners(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Nodes: 2, Dir: dir, BasePort: 29092, ClientProtocol: "SASL_SSL", ControllerProtocol: "SSL",
		Properties:     []string{"ssl.keystore.type=PEM"},
		NodeProperties: func(id int32) []string { return []string{fmt.Sprintf("ssl.keystore.location=node-%d.pem", id)} },
	}
	c := &Cluster{cfg: cfg}
	if err := c.configure(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.Node(2).ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{
		"listeners=SASL_SSL://127.0.0.1:29093,CONTROLLER://127.0.0.1:29193",
		"listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SSL",
		"inter.broker.listener.name=SASL_SSL",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("node 2's configuration lacks %q:\n%s", want, b)
		}
	}
	if got := lines[len(lines)-2:]; !slices.Equal(got, []string{"ssl.keystore.type=PEM", "ssl.keystore.location=node-2.pem"}) {
		t.Errorf("node 2's configuration ends with %q, want the common properties, then its own", got)
	}

	again := &Cluster{cfg: Config{Nodes: 2, Dir: dir}}
	if err := again.configure(); err != nil {
		t.Fatal(err)
	}
	if n := again.Node(2); n.ClientAddr != "127.0.0.1:29093" || n.ControllerAddr != "127.0.0.1:29193" {
		t.Errorf("restarted node 2: client %q, controller %q", n.ClientAddr, n.ControllerAddr)
	}
}

// Without protocols the cluster is PLAINTEXT as before, with Kafka's
// default inter-broker listener (no inter.broker.listener.name).
func TestConfigurePlaintextByDefault(t *testing.T) {
	c := &Cluster{cfg: Config{Nodes: 1, Dir: t.TempDir(), BasePort: 29092}}
	if err := c.configure(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.Node(1).ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n") ||
		!strings.Contains(s, "listeners=PLAINTEXT://127.0.0.1:29092,") || strings.Contains(s, "inter.broker.listener.name") {
		t.Errorf("configuration:\n%s", s)
	}
}

// With controller-only nodes, BasePort is the first broker's client port
// (what `samsa dev cluster --port 9092` tells users to bootstrap from),
// and the controllers are numbered from BasePort+100.
func TestBasePortNamesABroker(t *testing.T) {
	c := &Cluster{cfg: Config{Controllers: 3, Brokers: 2, Nodes: 5, Dir: t.TempDir(), BasePort: 29092}}
	if err := c.configure(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Bootstrap(), []string{"127.0.0.1:29092", "127.0.0.1:29093"}; !slices.Equal(got, want) {
		t.Errorf("bootstrap %v, want %v", got, want)
	}
	for i, want := range []string{"127.0.0.1:29192", "127.0.0.1:29193", "127.0.0.1:29194"} {
		if got := c.Node(int32(i + 1)).ControllerAddr; got != want {
			t.Errorf("controller %d at %q, want %q", i+1, got, want)
		}
	}
	b, err := os.ReadFile(c.Node(4).ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "listeners=PLAINTEXT://127.0.0.1:29092\n") ||
		!strings.Contains(s, "controller.quorum.voters=1@127.0.0.1:29192,2@127.0.0.1:29193,3@127.0.0.1:29194\n") {
		t.Errorf("node 4's configuration:\n%s", s)
	}
}
