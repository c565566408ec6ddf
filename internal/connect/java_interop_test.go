package connect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestJavaConnectDistributedREST runs Apache Kafka's own Java
// ConnectDistributed (4.4) against a Samsa broker, beside a Samsa worker,
// and sends both the same REST calls: status codes and bodies must match
// (exactly, or in their JSON keys where values are per-worker). It needs
// the jars of internal/connect/testdata/java-connect/pom.xml:
//
//	mvn -q -B -f internal/connect/testdata/java-connect/pom.xml dependency:copy-dependencies \
//	  -DoutputDirectory=$HOME/.cache/samsa-interop/kafka-connect-4.4.0
//	SAMSA_KAFKA_CONNECT_JARS=$HOME/.cache/samsa-interop/kafka-connect-4.4.0 go test ./internal/connect -run Java
//
// The Maven mirror serves no connect-file 4.4.0, so the Java worker has
// no connectors: the calls are those that need none (errors, lists,
// health). That the Java worker starts at all shows the broker side:
// its topics, its Connect group (sessioned protocol) and its session key.
func TestJavaConnectDistributedREST(t *testing.T) {
	jars := os.Getenv("SAMSA_KAFKA_CONNECT_JARS")
	if jars == "" {
		t.Skip("SAMSA_KAFKA_CONNECT_JARS not set (see the test's comment)")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java")
	}
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	samsa := startWorker(t, bootstrap, true, nil)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	javaURL := "http://" + ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	props := strings.Join([]string{
		"bootstrap.servers=" + bootstrap, "group.id=java-connect", "listeners=" + javaURL,
		"config.storage.topic=java-configs", "offset.storage.topic=java-offsets", "status.storage.topic=java-status",
		"config.storage.replication.factor=1", "offset.storage.replication.factor=1", "status.storage.replication.factor=1",
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"plugin.discovery=only_scan",
	}, "\n")
	os.WriteFile(filepath.Join(dir, "worker.properties"), []byte(props), 0o644)
	os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte("log4j.rootLogger=WARN, stderr\n"+
		"log4j.appender.stderr=org.apache.log4j.ConsoleAppender\nlog4j.appender.stderr.Target=System.err\n"+
		"log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"), 0o644)
	cmd := exec.Command("java", "-Dlog4j.configuration=file:"+filepath.Join(dir, "log4j.properties"),
		"-cp", filepath.Join(jars, "*"), "org.apache.kafka.connect.cli.ConnectDistributed", filepath.Join(dir, "worker.properties"))
	var javaLog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &javaLog, &javaLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("java worker log:\n%s", javaLog.String())
		}
	})
	java := rest{t, javaURL}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		// The list answers once the worker joined its group.
		if code, _, err := tryCall(javaURL+"/connectors", "GET", nil); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Java worker did not serve /connectors in 3 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}
	ours := rest{t, samsa.URL()}

	type call struct {
		method, path string
		body         any
		shapeOnly    bool // compare JSON keys, not values
		msgPrefix    string
	}
	unknown := map[string]any{"name": "x", "config": map[string]string{"connector.class": "Nope"}}
	calls := []call{
		{method: "GET", path: "/", shapeOnly: true},
		{method: "GET", path: "/health"},
		{method: "GET", path: "/connectors"},
		{method: "GET", path: "/connectors?expand=status"},
		{method: "GET", path: "/connectors?expand=info"},
		{method: "GET", path: "/connectors/nope"},
		{method: "GET", path: "/connectors/nope/config"},
		{method: "GET", path: "/connectors/nope/status"},
		{method: "GET", path: "/connectors/nope/tasks"},
		{method: "GET", path: "/connectors/nope/tasks/0/status"},
		{method: "GET", path: "/connectors/nope/offsets"},
		{method: "DELETE", path: "/connectors/nope"},
		{method: "PUT", path: "/connectors/nope/pause"},
		{method: "PUT", path: "/connectors/nope/resume"},
		{method: "PUT", path: "/connectors/nope/stop"},
		{method: "POST", path: "/connectors/nope/restart"},
		{method: "POST", path: "/connectors/nope/restart?includeTasks=true"},
		{method: "POST", path: "/connectors/nope/tasks/0/restart"},
		{method: "GET", path: "/connector-plugins/Nope/config"},
		{method: "GET", path: "/connectors/nope/topics"},
		{method: "PUT", path: "/connectors/nope/topics/reset"},
		{method: "GET", path: "/no/such/path"},
		// The plugin lists differ (no connectors in the Java worker).
		{method: "POST", path: "/connectors", body: unknown, msgPrefix: "Failed to find any class that implements Connector and which name matches Nope, available connectors are: "},
	}
	for _, c := range calls {
		jc, jb := java.call(c.method, c.path, c.body)
		sc, sb := ours.call(c.method, c.path, c.body)
		what := c.method + " " + c.path
		switch {
		case jc != sc:
			t.Errorf("%s: Java %d %v, Samsa %d %v", what, jc, jb, sc, sb)
		case c.msgPrefix != "":
			jm, _ := jb.(map[string]any)["message"].(string)
			sm, _ := sb.(map[string]any)["message"].(string)
			if !strings.HasPrefix(jm, c.msgPrefix) || !strings.HasPrefix(sm, c.msgPrefix) {
				t.Errorf("%s: Java %q, Samsa %q", what, jm, sm)
			}
		case c.shapeOnly:
			if jk, sk := jsonKeys(jb), jsonKeys(sb); !reflect.DeepEqual(jk, sk) {
				t.Errorf("%s: Java keys %v, Samsa keys %v", what, jk, sk)
			}
		case !reflect.DeepEqual(jb, sb):
			t.Errorf("%s: %d; Java %v, Samsa %v", what, jc, jb, sb)
		}
	}

	// Known differences, listed so a change in either shows here.
	for _, c := range []call{
		{method: "GET", path: "/admin/loggers"}, // Java with reload4j: {}; ours lists root
	} {
		jc, jb := java.call(c.method, c.path, c.body)
		sc, sb := ours.call(c.method, c.path, c.body)
		t.Logf("known difference %s %s: Java %d %v, Samsa %d %v", c.method, c.path, jc, jb, sc, sb)
	}
}

func tryCall(url, method string, body any) (int, []byte, error) {
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, in)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// jsonKeys lists an object's keys, sorted ("" for a non-object).
func jsonKeys(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprintf("%T", v)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}
