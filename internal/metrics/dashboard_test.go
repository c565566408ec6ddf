package metrics_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/servertest"
)

// The Grafana dashboard shipped in docs/grafana must query only names a
// node exports, so that it cannot drift from them unnoticed.

const dashboardPath = "../../docs/grafana/samsa-kafka.json"

// promqlWords are PromQL's keywords, and the aggregation modifiers whose
// parenthesised lists hold label names, not metrics.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
	"inf": true, "nan": true, "Inf": true, "NaN": true,
}

// selector is one metric name a PromQL expression reads, with the label
// names of its matchers.
type selector struct {
	name   string
	labels []string
}

// metricSelectors extracts the metrics an expression reads, with a small
// tokenizer rather than a PromQL parser. The rule: an identifier
// ([a-zA-Z_:][a-zA-Z0-9_:]*) is a metric name unless it is followed by
// '(' (a function or aggregation) or by by/without (an aggregation
// written `sum by (l) (...)`), is a PromQL keyword, is a Grafana
// variable ($name), or sits inside a string, a range [...], a label
// matcher list {...} or the label list of by/without/on/ignoring/
// group_left/group_right. Numbers (0.99, 1e3, 5m) are skipped whole. The
// label names of a {...} after a metric name are kept with it.
func metricSelectors(expr string) []selector {
	var out []selector
	isStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n') {
			i++
		}
		return i
	}
	// skipTo returns the index after the closing byte, skipping strings.
	skipTo := func(i int, closing byte) int {
		for i < len(expr) && expr[i] != closing {
			if q := expr[i]; q == '"' || q == '\'' || q == '`' {
				for i++; i < len(expr) && expr[i] != q; i++ {
					if expr[i] == '\\' && q != '`' {
						i++
					}
				}
			}
			i++
		}
		return i + 1
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipTo(i+1, c)
		case c == '[':
			i = skipTo(i+1, ']')
		case c == '{': // matchers without a metric name before them
			i = skipTo(i+1, '}')
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isPart(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '$':
			for i++; i < len(expr) && isPart(expr[i]); i++ {
			}
		case isStart(c):
			start := i
			for i < len(expr) && isPart(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			switch {
			case promqlWords[word]:
				if word != "bool" && word != "offset" && next < len(expr) && expr[next] == '(' {
					i = skipTo(next+1, ')') // a list of label names
				}
			case next < len(expr) && expr[next] == '(':
				// a function or an aggregation
			case strings.HasPrefix(expr[next:], "by") || strings.HasPrefix(expr[next:], "without"):
				// an aggregation with its modifier first: sum by (l) (...)
			default:
				s := selector{name: word}
				if next < len(expr) && expr[next] == '{' {
					end := skipTo(next+1, '}')
					s.labels = matcherLabels(expr[next+1 : end-1])
					i = end
				}
				out = append(out, s)
			}
		default:
			i++
		}
	}
	return out
}

var matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`)")

// matcherLabels is the label names of the matchers of a {...} list.
func matcherLabels(list string) []string {
	var out []string
	for _, m := range matcherLabel.FindAllStringSubmatch(list, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestMetricSelectorsTokenizer(t *testing.T) {
	for _, c := range []struct {
		expr string
		want string
	}{
		{`sum(up)`, `up`},
		{`histogram_quantile(0.99, sum by (le, request) (rate(a_bucket{instance=~"$instance"}[$__rate_interval])))`, `a_bucket{instance}`},
		{`sum by (topic) (max by (topic, partition) (x{t="a}b",u!=""}) - max without(p) (y offset 5m))`, `x{t,u} y`},
		{`rate(a[5m]) / on(instance) group_left(job) b > bool 1e3`, `a b`},
		{`delta(c{g=~"$g"}[5m]) / 300 and d_total:rate5m`, `c{g} d_total:rate5m`},
	} {
		var got []string
		for _, s := range metricSelectors(c.expr) {
			if len(s.labels) > 0 {
				got = append(got, s.name+"{"+strings.Join(s.labels, ",")+"}")
			} else {
				got = append(got, s.name)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("metricSelectors(%q) = %q, want %q", c.expr, strings.Join(got, " "), c.want)
		}
	}
}

// dashboardQuery is one PromQL expression of the dashboard and where it is.
type dashboardQuery struct {
	where string
	expr  string
	label string // for label_values(expr, label): the label it lists
}

var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// dashboardQueries reads every panel target's expr (rows' nested panels
// included) and every query variable of the dashboard's templating.
func dashboardQueries(t *testing.T, path string) []dashboardQuery {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Type    string  `json:"type"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []dashboardQuery
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q has an empty expr", p.Title)
				}
				out = append(out, dashboardQuery{where: "panel " + p.Title, expr: tg.Expr})
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		var obj struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil {
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
			}
			q = obj.Query
		}
		dq := dashboardQuery{where: "variable $" + v.Name, expr: q}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			dq.expr, dq.label = m[1], m[2]
		}
		out = append(out, dq)
	}
	return out
}

// exported is the metric names of a scrape as PromQL sees them (a
// histogram's _bucket, _sum and _count; a summary's _sum and _count)
// with the label names each carries.
func exported(s scrape) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(name string, labels ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, l := range labels {
			out[name][l] = true
		}
	}
	for name, f := range s {
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName())
			}
			switch {
			case m.Histogram != nil:
				add(name+"_bucket", append(labels, "le")...)
				add(name+"_sum", labels...)
				add(name+"_count", labels...)
			case m.Summary != nil:
				add(name, append(labels, "quantile")...)
				add(name+"_sum", labels...)
				add(name+"_count", labels...)
			default:
				add(name, labels...)
			}
		}
	}
	return out
}

// Prometheus adds these labels to every series it scrapes.
var targetLabels = map[string]bool{"instance": true, "job": true}

func TestGrafanaDashboardQueriesOnlyExportedMetrics(t *testing.T) {
	queries := dashboardQueries(t, dashboardPath)
	if len(queries) == 0 {
		t.Fatalf("%s has no queries", dashboardPath)
	}

	// A node that has produced, fetched and committed a group offset, so
	// that every family it can export (per-topic, per-partition and
	// per-group ones included) has series.
	srv := servertest.Start(t, "http.listeners=http://127.0.0.1:0", "group.initial.rebalance.delay.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group = "dashboarded", "dashboard-group"
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(strings.Repeat("x", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := getScrape(t, srv.HTTPAddr())
	names := exported(s)

	checked := map[string]bool{}
	for _, q := range queries {
		sels := metricSelectors(q.expr)
		if len(sels) == 0 {
			t.Errorf("%s: %q reads no metric", q.where, q.expr)
		}
		for _, sel := range sels {
			labels, ok := names[sel.name]
			if !ok {
				t.Errorf("%s: %q reads %s, which /metrics does not export", q.where, q.expr, sel.name)
				continue
			}
			checked[sel.name] = true
			for _, l := range sel.labels {
				if !labels[l] && !targetLabels[l] {
					t.Errorf("%s: %q matches label %s, which %s does not have", q.where, q.expr, l, sel.name)
				}
			}
			if q.label != "" && !labels[q.label] && !targetLabels[q.label] {
				t.Errorf("%s: lists label %s, which %s does not have", q.where, q.label, sel.name)
			}
		}
	}
	// The dashboard shows what the issue asks of it.
	for _, name := range []string{
		"kafka_controller_kafkacontroller_activecontrollercount",
		"kafka_server_replicamanager_underreplicatedpartitions",
		"kafka_controller_kafkacontroller_offlinepartitionscount",
		"kafka_server_brokertopicmetrics_bytesin_total",
		"kafka_server_brokertopicmetrics_bytesout_total",
		"kafka_server_brokertopicmetrics_messagesin_total",
		"kafka_network_requestmetrics_requests_total",
		"kafka_network_requestmetrics_totaltimems_bucket",
		"kafka_server_replicamanager_isrshrinks_total",
		"kafka_server_replicamanager_isrexpands_total",
		"kafka_log_log_size",
		"kafka_consumergroup_lag",
		"process_cpu_seconds_total",
		"process_resident_memory_bytes",
	} {
		if !checked[name] {
			t.Errorf("the dashboard does not query %s", name)
		}
	}
	var list []string
	for name := range checked {
		list = append(list, name)
	}
	slices.Sort(list)
	t.Logf("%d queries read %d exported metrics: %s", len(queries), len(list), strings.Join(list, " "))
}
