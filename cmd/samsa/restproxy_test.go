package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var restProxyRE = regexp.MustCompile(`rest proxy listening" listener=(\S+)`)

// httpJSON sends a request with a JSON body and decodes the JSON answer
// into out (when not nil); it returns the status.
func httpJSON(t *testing.T, ctx context.Context, method, url, ct, accept, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, b, err)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// TestRestProxyCommands produces over HTTP to the proxy of `samsa server`
// (rest.proxy.listeners) and reads the records with franz-go; then
// produces with franz-go and reads through a v2 consumer instance of
// `samsa rest-proxy` on the same cluster.
func TestRestProxyCommands(t *testing.T) {
	srv := startServerProc(t, t.TempDir(), "--override", "rest.proxy.listeners=http://127.0.0.1:0", "--override", "schema.registry.listeners=")
	url := waitFor(t, restProxyRE, srv.stderr.String)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "http-in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "http-out"); err != nil {
		t.Fatal(err)
	}

	b64 := base64.StdEncoding.EncodeToString
	body := `{"records":[{"key":"` + b64([]byte("k0")) + `","value":"` + b64([]byte("v0")) + `"},{"key":"` + b64([]byte("k1")) + `","value":"` + b64([]byte("v1")) + `"}]}`
	var produced struct {
		Offsets []struct{ Partition, Offset int64 }
	}
	if code := httpJSON(t, ctx, "POST", url+"/topics/http-in", "application/vnd.kafka.binary.v2+json", "", body, &produced); code != 200 {
		t.Fatalf("produce: %d", code)
	}
	if len(produced.Offsets) != 2 || produced.Offsets[0].Offset != 0 || produced.Offsets[1].Offset != 1 {
		t.Fatalf("produce answer %+v", produced)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.ConsumeTopics("http-in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []*kgo.Record
	for len(got) < 2 && ctx.Err() == nil {
		got = append(got, cons.PollFetches(ctx).Records()...)
	}
	if len(got) != 2 || string(got[0].Key) != "k0" || string(got[0].Value) != "v0" || got[1].Offset != 1 || string(got[1].Key) != "k1" {
		t.Fatalf("franz-go read %d records: %v", len(got), got)
	}

	// samsa rest-proxy, alone, on the same cluster.
	cmd := exec.Command(os.Args[0], "rest-proxy", "--bootstrap", srv.addr, "--listen", "http://127.0.0.1:0")
	cmd.Env = append(os.Environ(), "SAMSA_RUN_MAIN=1")
	out := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	url2 := waitFor(t, restProxyRE, out.String)
	for i := range 3 {
		r := &kgo.Record{Topic: "http-out", Key: []byte{'k', byte('0' + i)}, Value: []byte{'v', byte('0' + i)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const v2 = "application/vnd.kafka.v2+json"
	var created struct {
		InstanceID string `json:"instance_id"`
		BaseURI    string `json:"base_uri"`
	}
	if code := httpJSON(t, ctx, "POST", url2+"/consumers/g1", v2, "", `{"name":"c1","format":"binary","auto.offset.reset":"earliest","auto.commit.enable":"false"}`, &created); code != 200 {
		t.Fatalf("create consumer: %d", code)
	}
	if created.InstanceID != "c1" || created.BaseURI != url2+"/consumers/g1/instances/c1" {
		t.Fatalf("create answer %+v", created)
	}
	if code := httpJSON(t, ctx, "POST", created.BaseURI+"/subscription", v2, "", `{"topics":["http-out"]}`, nil); code != 204 {
		t.Fatalf("subscribe: %d", code)
	}
	type rec struct {
		Topic      string
		Key, Value []byte
		Partition  int32
		Offset     int64
	}
	var recs []rec
	for len(recs) < 3 && ctx.Err() == nil {
		var batch []rec
		if code := httpJSON(t, ctx, "GET", created.BaseURI+"/records?timeout=1000", "", "application/vnd.kafka.binary.v2+json", "", &batch); code != 200 {
			t.Fatalf("records: %d", code)
		}
		recs = append(recs, batch...)
	}
	for i, r := range recs {
		if r.Topic != "http-out" || r.Offset != int64(i) || !bytes.Equal(r.Key, []byte{'k', byte('0' + i)}) || !bytes.Equal(r.Value, []byte{'v', byte('0' + i)}) {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if code := httpJSON(t, ctx, "POST", created.BaseURI+"/offsets", v2, "", "", nil); code != 200 {
		t.Fatalf("commit: %d", code)
	}
	committed, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := committed.Lookup("http-out", 0); o.At != 3 {
		t.Errorf("committed offset %d, want 3", o.At)
	}
	if code := httpJSON(t, ctx, "DELETE", created.BaseURI, "", "", "", nil); code != 204 {
		t.Fatalf("delete consumer: %d", code)
	}
	if code := httpJSON(t, ctx, "GET", created.BaseURI+"/records", "", "application/vnd.kafka.binary.v2+json", "", nil); code != 404 {
		t.Fatalf("records of a deleted instance: %d", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("samsa rest-proxy exit: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("samsa rest-proxy did not stop on SIGTERM:\n%s", out.String())
	}
}
