package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/net/html"

	"github.com/samsa-io/samsa/internal/servertest"
)

// env is a console over a real socket in front of a one-node server, and
// a franz-go client of the same server to check what the console did.
type env struct {
	t      *testing.T
	url    string
	broker string
	http   *http.Client
	cl     *kgo.Client
	adm    *kadm.Client
	ctx    context.Context
}

func start(t *testing.T) *env {
	t.Helper()
	broker := servertest.Addr(servertest.Start(t))
	c, err := New(Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(broker)}, Logger: servertest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(func() { srv.Close(); c.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	jar, _ := cookiejar.New(nil)
	return &env{t: t, url: srv.URL, broker: broker, http: &http.Client{Jar: jar}, cl: cl, adm: kadm.NewClient(cl), ctx: ctx}
}

// get fetches a page and returns its status and parsed document.
func (e *env) get(path string) (int, *html.Node) {
	e.t.Helper()
	resp, err := e.http.Get(e.url + path)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.parse(resp)
}

// post submits a form as a browser on the console's own page would (same
// Origin), following the redirect to the page it lands on.
func (e *env) post(path string, form url.Values) (int, *html.Node) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.url)
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.parse(resp)
}

func (e *env) parse(resp *http.Response) (int, *html.Node) {
	e.t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("%s: Content-Type %q: %s", resp.Request.URL, ct, b)
	}
	doc, err := html.Parse(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, doc
}

// byID finds the element with that id.
func byID(n *html.Node, id string) *html.Node {
	if n.Type == html.ElementNode {
		for _, a := range n.Attr {
			if a.Key == "id" && a.Val == id {
				return n
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := byID(c, id); f != nil {
			return f
		}
	}
	return nil
}

// text is an element's text with runs of white space made one space.
func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rows is a table's data rows (the header row left out), each as its
// cells' text.
func rows(t *testing.T, doc *html.Node, id string) [][]string {
	t.Helper()
	table := byID(doc, id)
	if table == nil {
		t.Fatalf("no table #%s on the page: %s", id, text(doc))
	}
	var out [][]string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			var cells []string
			header := false
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
					header = header || c.Data == "th"
					cells = append(cells, text(c))
				}
			}
			if !header {
				out = append(out, cells)
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(table)
	return out
}

func flash(doc *html.Node) string {
	var found string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "div" {
			for _, a := range n.Attr {
				if a.Key == "class" && (a.Val == "flash" || a.Val == "error") {
					found = text(n)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return found
}

func TestOverview(t *testing.T) {
	e := start(t)
	md, err := e.adm.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	status, doc := e.get("/")
	if status != http.StatusOK {
		t.Fatalf("GET /: %d %s", status, text(doc))
	}
	if got := text(byID(doc, "controller")); got != fmt.Sprint(md.Controller) {
		t.Errorf("active controller %q, metadata says %d", got, md.Controller)
	}
	brokers := rows(t, doc, "broker-table")
	if len(brokers) != 1 || brokers[0][0] != fmt.Sprint(md.Brokers[0].NodeID) || brokers[0][2] != fmt.Sprint(md.Brokers[0].Port) {
		t.Errorf("brokers %v, metadata says %+v", brokers, md.Brokers)
	}
	if !strings.Contains(text(doc), md.Cluster) {
		t.Errorf("the page does not name cluster %s", md.Cluster)
	}
}

func TestTopicLifecycle(t *testing.T) {
	e := start(t)
	status, doc := e.post("/topics", url.Values{"name": {"orders"}, "partitions": {"3"}, "replication": {"1"}, "configs": {"retention.ms=3600000\ncleanup.policy=delete"}})
	if status != http.StatusOK || !strings.Contains(flash(doc), "created topic orders") {
		t.Fatalf("create: %d %q", status, flash(doc))
	}
	details, err := e.adm.ListTopics(e.ctx, "orders")
	if err != nil || len(details["orders"].Partitions) != 3 {
		t.Fatalf("the broker has %+v, %v", details["orders"], err)
	}
	rcs, err := e.adm.DescribeTopicConfigs(e.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("orders", nil)
	if v := configValue(rc, "retention.ms"); v != "3600000" {
		t.Errorf("retention.ms on the broker is %q, want 3600000", v)
	}
	parts := rows(t, doc, "partition-table")
	if len(parts) != 3 || parts[2][0] != "2" {
		t.Errorf("partition rows %v", parts)
	}

	// The same name again: Kafka's error, named.
	status, doc = e.post("/topics", url.Values{"name": {"orders"}})
	if status != http.StatusBadRequest || !strings.Contains(flash(doc), "TOPIC_ALREADY_EXISTS") {
		t.Errorf("create twice: %d %q", status, flash(doc))
	}
	status, doc = e.post("/topics", url.Values{"name": {"bad name!"}})
	if status != http.StatusBadRequest || !strings.Contains(flash(doc), "INVALID_TOPIC_EXCEPTION") {
		t.Errorf("bad name: %d %q", status, flash(doc))
	}

	// Configs: set, see it marked as the topic's own, reset.
	status, doc = e.post("/topics/orders/configs", url.Values{"key": {"retention.ms"}, "value": {"7200000"}, "op": {"set"}})
	if status != http.StatusOK || flash(doc) != "set retention.ms" {
		t.Fatalf("set config: %d %q", status, flash(doc))
	}
	if row := findRow(rows(t, doc, "config-table"), "retention.ms"); row == nil || row[1] != "7200000" || row[2] != "dynamic topic" {
		t.Errorf("retention.ms row %v", row)
	}
	status, doc = e.post("/topics/orders/configs", url.Values{"key": {"retention.ms"}, "op": {"delete"}})
	if status != http.StatusOK {
		t.Fatalf("reset config: %d %q", status, flash(doc))
	}
	if row := findRow(rows(t, doc, "config-table"), "retention.ms"); row == nil || row[1] != "604800000" {
		t.Errorf("after the reset retention.ms row is %v, want Kafka's default 604800000", row)
	}
	status, doc = e.post("/topics/orders/configs", url.Values{"key": {"no.such.config"}, "value": {"1"}, "op": {"set"}})
	if status != http.StatusBadRequest || !strings.Contains(flash(doc), "INVALID_CONFIG") {
		t.Errorf("unknown config: %d %q", status, flash(doc))
	}

	_, doc = e.get("/topics")
	if row := findRow(rows(t, doc, "topic-table"), "orders"); row == nil || row[1] != "3" || row[2] != "1" {
		t.Errorf("topic list row %v", row)
	}
	status, doc = e.post("/topics/orders/delete", nil)
	if status != http.StatusOK || flash(doc) != "deleted topic orders" {
		t.Fatalf("delete: %d %q", status, flash(doc))
	}
	// Deletion is asynchronous in Kafka too: the broker stops listing the
	// topic once it has applied the controller's record.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _ = e.get("/topics/orders")
		_, doc = e.get("/topics")
		listed := findRow(rows(t, doc, "topic-table"), "orders") != nil
		if status == http.StatusNotFound && !listed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the delete: GET /topics/orders %d, listed %v", status, listed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCrossSiteFormRefused: a form another site posts is refused and
// changes nothing.
func TestCrossSiteFormRefused(t *testing.T) {
	e := start(t)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/topics", strings.NewReader("name=evil"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://attacker.example")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", resp.StatusCode)
	}
	details, err := e.adm.ListTopics(e.ctx, "evil")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := details["evil"]; ok && d.Err == nil {
		t.Error("a cross-site form created a topic")
	}
}

func TestMessageBrowser(t *testing.T) {
	e := start(t)
	if _, err := e.adm.CreateTopic(e.ctx, 2, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "events", Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("rec-%d", i))})
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(e.ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A record produced through the console's form lands where it says.
	status, doc := e.post("/topics/events/messages", url.Values{"partition": {"1"}, "key": {"user-7"}, "value": {`{"name":"ada","n":1}`}, "headers": {"source=console\ntrace=abc"}})
	if status != http.StatusOK || flash(doc) != "produced to partition 1 at offset 0" {
		t.Fatalf("produce: %d %q", status, flash(doc))
	}
	fetched := consumeAll(t, e, "events", 1, 1)
	if r := fetched[0]; string(r.Key) != "user-7" || string(r.Value) != `{"name":"ada","n":1}` || len(r.Headers) != 2 || r.Headers[0].Key != "source" || string(r.Headers[0].Value) != "console" {
		t.Errorf("the console produced %+v", r)
	}

	offsetsOf := func(q string) []string {
		t.Helper()
		status, doc := e.get("/topics/events/messages?" + q)
		if status != http.StatusOK {
			t.Fatalf("browse %s: %d %s", q, status, flash(doc))
		}
		var got []string
		for _, row := range rows(t, doc, "message-table") {
			got = append(got, row[0]+"@"+row[1]+"="+row[4])
		}
		return got
	}
	want := func(p int, from, to int) []string {
		var w []string
		for i := from; i < to; i++ {
			w = append(w, fmt.Sprintf("%d@%d=rec-%d", p, i, i))
		}
		return w
	}
	if got := offsetsOf("partition=0&from=beginning"); !slices.Equal(got, want(0, 0, 10)) {
		t.Errorf("from the beginning: %v", got)
	}
	if got := offsetsOf("partition=0&from=end&limit=3"); !slices.Equal(got, want(0, 7, 10)) {
		t.Errorf("the last 3: %v", got)
	}
	if got := offsetsOf("partition=0&from=offset&offset=5&limit=2"); !slices.Equal(got, want(0, 5, 7)) {
		t.Errorf("2 from offset 5: %v", got)
	}
	if got := offsetsOf("partition=0&from=beginning&filter=REC-3"); !slices.Equal(got, want(0, 3, 4)) {
		t.Errorf("filtered on rec-3: %v", got)
	}
	if got := offsetsOf("partition=0&from=offset&offset=10"); len(got) != 0 {
		t.Errorf("from the end offset: %v, want nothing", got)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if got := offsetsOf("from=timestamp&timestamp=" + url.QueryEscape(future)); len(got) != 0 {
		t.Errorf("after an hour from now: %v, want nothing", got)
	}

	// JSON is shown indented, headers by name.
	_, doc = e.get("/topics/events/messages?partition=1&from=beginning")
	msgs := rows(t, doc, "message-table")
	if len(msgs) != 1 || msgs[0][3] != "user-7" || !strings.Contains(msgs[0][4], `"name": "ada"`) || !strings.Contains(msgs[0][5], "source: console") {
		t.Errorf("partition 1 shows %v", msgs)
	}

	// Bad queries are named, not guessed.
	for q, wantStatus := range map[string]int{"from=offset&offset=x": 400, "from=sideways": 400, "partition=9": 404, "limit=-1": 400} {
		status, doc := e.get("/topics/events/messages?" + q)
		if status != wantStatus || flash(doc) == "" {
			t.Errorf("%s: %d %q, want %d with an error", q, status, flash(doc), wantStatus)
		}
	}
	if status, _ := e.get("/topics/nosuch/messages"); status != http.StatusNotFound {
		t.Errorf("unknown topic: %d, want 404", status)
	}
}

func TestGroupLagAndReset(t *testing.T) {
	e := start(t)
	if _, err := e.adm.CreateTopic(e.ctx, 2, 1, nil, "work"); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if err := prod.ProduceSync(e.ctx, &kgo.Record{Topic: "work", Partition: int32(i % 2), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer group reads, commits offsets 3 and 1, then stops.
	cons, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("work"),
		kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	for polled := 0; polled < 1; {
		polled += cons.PollFetches(e.ctx).NumRecords()
	}
	commit := map[string]map[int32]kgo.EpochOffset{"work": {0: {Epoch: -1, Offset: 3}, 1: {Epoch: -1, Offset: 1}}}
	var commitErr error
	cons.CommitOffsetsSync(e.ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				commitErr = cmpErr(commitErr, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	// While it is a member the group is not Empty: a reset is refused.
	status, doc := e.post("/groups/billing/reset", url.Values{"to": {"earliest"}})
	if status != http.StatusConflict {
		t.Errorf("reset of an active group: %d %q, want 409", status, flash(doc))
	}
	cons.Close()

	_, doc = e.get("/groups")
	if row := findRow(rows(t, doc, "group-table"), "billing"); row == nil || row[1] != "Empty" || row[5] != "6" {
		t.Errorf("group list row %v, want Empty with lag 6 (5-3 + 5-1)", row)
	}
	_, doc = e.get("/groups/billing")
	lag := rows(t, doc, "lag-table")
	if len(lag) != 2 || !slices.Equal(lag[0][:5], []string{"work", "0", "3", "5", "2"}) || !slices.Equal(lag[1][:5], []string{"work", "1", "1", "5", "4"}) {
		t.Errorf("lag rows %v", lag)
	}

	status, doc = e.post("/groups/billing/reset", url.Values{"topic": {"work"}, "to": {"latest"}})
	if status != http.StatusOK || !strings.Contains(flash(doc), "reset work of billing to latest") {
		t.Fatalf("reset: %d %q", status, flash(doc))
	}
	got, err := e.adm.FetchOffsets(e.ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if o, ok := got.Lookup("work", p); !ok || o.At != 5 {
			t.Errorf("work-%d committed %+v after the reset to latest, want 5", p, o)
		}
	}
	if text(byID(doc, "total-lag")) != "0" {
		t.Errorf("total lag after the reset %q, want 0", text(byID(doc, "total-lag")))
	}
	status, _ = e.post("/groups/billing/reset", url.Values{"to": {"offset"}, "offset": {"2"}})
	if status != http.StatusOK {
		t.Fatalf("reset to offset 2: %d", status)
	}
	got, _ = e.adm.FetchOffsets(e.ctx, "billing")
	if o, _ := got.Lookup("work", 1); o.At != 2 {
		t.Errorf("work-1 committed %d after the reset to offset 2", o.At)
	}
	if status, _ := e.get("/groups/nosuch"); status != http.StatusNotFound {
		t.Errorf("unknown group: %d, want 404", status)
	}
}

func consumeAll(t *testing.T, e *env, topic string, partition int32, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(e.ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func findRow(rows [][]string, first string) []string {
	for _, r := range rows {
		if len(r) > 0 && r[0] == first {
			return r
		}
	}
	return nil
}

func configValue(rc kadm.ResourceConfig, key string) string {
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue()
		}
	}
	return ""
}

// TestShowBytes: how the browser shows a key or value.
func TestShowBytes(t *testing.T) {
	for _, tc := range []struct {
		in           []byte
		text, format string
	}{
		{[]byte("plain words"), "plain words", "text"},
		{[]byte(`{"a":[1,2]}`), "{\n  \"a\": [\n    1,\n    2\n  ]\n}", "json"},
		{append([]byte{0, 0, 0, 1, 2}, `{"n":1}`...), "{\n  \"n\": 1\n}", "schema id 258"},
		{[]byte{0, 0, 0, 0, 7, 0x02, 0xff}, "02ff", "schema id 7"},
		{[]byte{0xff, 0xfe, 0x01}, "fffe01", "binary"},
	} {
		got := showBytes(tc.in)
		if got.Text != tc.text || got.Format != tc.format || got.Null {
			t.Errorf("showBytes(%q) = %+v, want %q as %q", tc.in, got, tc.text, tc.format)
		}
	}
	if !showBytes(nil).Null {
		t.Error("a nil value is not shown as null")
	}
}
