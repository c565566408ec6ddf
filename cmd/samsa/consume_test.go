package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceRecords writes records straight through franz-go, for tests that
// need what the CLI cannot set (timestamps, transactions).
func produceRecords(t *testing.T, bootstrap string, txn bool, rs ...*kgo.Record) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap)}
	if txn {
		opts = append(opts, kgo.TransactionalID("cli-test"))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if txn {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if txn {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConsumeFrom(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "t", "--partitions", "2", "--bootstrap", b)
	mustRun(t, "a\nb\nc\n", "produce", "t", "--partition", "0", "--bootstrap", b)
	mustRun(t, "x\ny\n", "produce", "t", "--partition", "1", "--bootstrap", b)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partition", "0"}, "0\t0\t\ta\n0\t1\t\tb\n0\t2\t\tc\n"},
		{[]string{"--partition", "1", "--from", "beginning"}, "1\t0\t\tx\n1\t1\t\ty\n"},
		{[]string{"--partition", "0", "--from", "1"}, "0\t1\t\tb\n0\t2\t\tc\n"},
		// An offset past the end is clamped to the end, not reset to 0.
		{[]string{"--partition", "0", "--from", "99"}, ""},
		{[]string{"--from", "end"}, ""},
		{[]string{"--from", "2", "--format", `%p:%o:%v\n`}, "0:2:c\n"},
		{[]string{"--partition", "0", "--num", "2"}, "0\t0\t\ta\n0\t1\t\tb\n"},
	} {
		args := append([]string{"consume", "t", "--exit-at-end", "--bootstrap", b}, tc.args...)
		r := mustRun(t, "", args...)
		if r.stdout != tc.want {
			t.Errorf("%v: stdout %q, want %q", tc.args, r.stdout, tc.want)
		}
	}
}

func TestConsumeFromTimestamp(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "ts", "--partitions", "1", "--bootstrap", b)
	var rs []*kgo.Record
	for i, v := range []string{"one", "two", "three"} {
		rs = append(rs, &kgo.Record{Topic: "ts", Value: []byte(v), Timestamp: time.UnixMilli(int64(i+1) * 1000)})
	}
	produceRecords(t, b, false, rs...)
	for from, want := range map[string]string{
		"@0":    "0 1000 one\n1 2000 two\n2 3000 three\n",
		"@2000": "1 2000 two\n2 3000 three\n",
		"@2500": "2 3000 three\n",
		"@9999": "",
	} {
		r := mustRun(t, "", "consume", "ts", "--from", from, "--exit-at-end", "--format", `%o %T %v\n`, "--bootstrap", b)
		if r.stdout != want {
			t.Errorf("--from %s: stdout %q, want %q", from, r.stdout, want)
		}
	}
}

// TestConsumeExitAtEndTransactional checks that --exit-at-end stops when the
// last offset is a transaction marker, which is never printed.
func TestConsumeExitAtEndTransactional(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "tx", "--partitions", "1", "--bootstrap", b)
	produceRecords(t, b, true,
		&kgo.Record{Topic: "tx", Key: []byte("k"), Value: []byte("v1")},
		&kgo.Record{Topic: "tx", Key: []byte("k"), Value: []byte("v2")})
	// EndTxn answers once the commit is decided; the marker is written
	// after, as in Kafka.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := mustRun(t, "", "topic", "describe", "tx", "--bootstrap", b)
		row := fields(r.stdout)[7]
		if row[6] == "3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log end = %s, want 3 (two records and the commit marker)", row[6])
		}
	}
	r := mustRun(t, "", "consume", "tx", "--exit-at-end", "--bootstrap", b, "--timeout", "5s")
	if want := "0\t0\tk\tv1\n0\t1\tk\tv2\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
}

// TestConsumeFollows checks that without --exit-at-end the consumer keeps
// reading records produced after it started.
func TestConsumeFollows(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "live", "--partitions", "1", "--bootstrap", b)
	mustRun(t, "old\n", "produce", "live", "--bootstrap", b)
	done := make(chan result, 1)
	go func() { done <- samsa(t, "", "consume", "live", "--from", "end", "--num", "1", "--bootstrap", b) }()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case r := <-done:
			f := strings.Split(r.stdout, "\t")
			if r.code != 0 || len(f) != 4 || f[0] != "0" || f[1] == "0" || f[3] != "new\n" {
				t.Errorf("consume --from end: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			return
		case <-deadline:
			t.Fatal("consume --from end --num 1 did not see a new record")
		case <-time.After(100 * time.Millisecond):
			mustRun(t, "new\n", "produce", "live", "--bootstrap", b)
		}
	}
}

func TestConsumeErrors(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "two", "--partitions", "2", "--bootstrap", b)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consume", "nope"}, "samsa: topic \"nope\" does not exist\n"},
		{[]string{"consume", "two", "--partition", "2"}, "samsa: topic \"two\" has 2 partitions: --partition 2 does not exist\n"},
	} {
		r := samsa(t, "", append(tc.args, "--bootstrap", b, "--exit-at-end")...)
		if r.code != 1 || r.stderr != tc.want || r.stdout != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q, want 1 and %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

func TestCompileFormat(t *testing.T) {
	toks, err := compileFormat(`100%% %k\t%v\\n\n`)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, tk := range toks {
		if tk.verb != 0 {
			sb.WriteString("<" + string(tk.verb) + ">")
		} else {
			sb.WriteString(tk.lit)
		}
	}
	if want := "100% <k>\t<v>\\n\n"; sb.String() != want {
		t.Errorf("compiled %q, want %q", sb.String(), want)
	}
	for _, bad := range []string{`%x`, `\q`} {
		if _, err := compileFormat(bad); err == nil {
			t.Errorf("compileFormat(%q) succeeded, want error", bad)
		}
	}
}
