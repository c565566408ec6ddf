package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// openTxn starts a transaction of id that wrote one record to topic and
// leaves it open until the test ends; it returns the producer.
func openTxn(t *testing.T, b, id, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

func TestTxnListAndDescribe(t *testing.T) {
	b := startTestCluster(t)
	mustRun(t, "", "topic", "create", "pay", "--partitions", "1", "--bootstrap", b)
	produceRecords(t, b, true, &kgo.Record{Topic: "pay", Value: []byte("done")}) // id cli-test, committed
	openTxn(t, b, "open-one", "pay")

	r := mustRun(t, "", "txn", "list", "--bootstrap", b)
	rows := fields(r.stdout)
	if len(rows) != 3 || strings.Join(rows[0], " ") != "TRANSACTIONAL-ID COORDINATOR PRODUCER-ID STATE" {
		t.Fatalf("txn list:\n%s", r.stdout)
	}
	if rows[1][0] != "cli-test" || rows[1][1] != "1" || rows[1][3] != "CompleteCommit" ||
		rows[2][0] != "open-one" || rows[2][3] != "Ongoing" {
		t.Errorf("txn list rows: %v", rows[1:])
	}
	r = mustRun(t, "", "txn", "list", "--state", "ongoing", "--bootstrap", b)
	if rows := fields(r.stdout); len(rows) != 2 || rows[1][0] != "open-one" {
		t.Errorf("txn list --state ongoing:\n%s", r.stdout)
	}

	r = mustRun(t, "", "txn", "describe", "open-one", "--bootstrap", b)
	for _, want := range []string{"Transactional id: open-one\n", "State:            Ongoing\n",
		"Producer epoch:   0\n", "Timeout:          60000ms\n", "Partitions: pay:0\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = mustRun(t, "", "txn", "describe", "cli-test", "--bootstrap", b)
	if !strings.Contains(r.stdout, "State:            CompleteCommit\n") || !strings.Contains(r.stdout, "Partitions: -\n") {
		t.Errorf("describe committed:\n%s", r.stdout)
	}

	if r := samsa(t, "", "txn", "describe", "nobody", "--bootstrap", b); r.code != exitFail || r.stderr != "samsa: transactional id \"nobody\" does not exist\n" {
		t.Errorf("describe unknown id: exit %d stderr %q", r.code, r.stderr)
	}
	if r := samsa(t, "", "txn", "list", "--state", "bogus", "--bootstrap", b); r.code != exitUsage || !strings.Contains(r.stderr, `unknown transaction state "bogus"`) {
		t.Errorf("list --state bogus: exit %d stderr %q", r.code, r.stderr)
	}
	if r := samsa(t, "", "txn", "frob"); r.code != exitUsage {
		t.Errorf("unknown subcommand: exit %d", r.code)
	}
}
