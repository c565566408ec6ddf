package broker_test

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/servertest"
)

// The transaction APIs over TCP, driven with raw requests so the codes and
// fields are the broker's own, not a client's interpretation.

// retryTxn sends req until the coordinator has loaded its partition.
func retryTxn[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	ctx := tctx(t)
	for {
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(R)
		c := code(r)
		if c != kerr.CoordinatorLoadInProgress.Code && c != kerr.NotCoordinator.Code && c != kerr.CoordinatorNotAvailable.Code && c != kerr.ConcurrentTransactions.Code {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("still %v: %v", kerr.ErrorForCode(c), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func initTxnID(t *testing.T, cl *kgo.Client, id string) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	return retryTxn(t, cl, req, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
}

func TestTxnAPIVersions(t *testing.T) {
	s := servertest.Start(t)
	c := connect(t, servertest.Addr(s))
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[kmsg.Key][2]int16{
		kmsg.InitProducerID: {0, 5}, kmsg.AddPartitionsToTxn: {0, 5}, kmsg.AddOffsetsToTxn: {0, 4},
		kmsg.EndTxn: {0, 5}, kmsg.TxnOffsetCommit: {0, 6}, kmsg.DescribeTransactions: {0, 0}, kmsg.ListTransactions: {0, 2},
		// Inter-broker, served on every listener as Kafka does; v2
		// carries the client's transaction version.
		kmsg.WriteTxnMarkers: {0, 2},
	}
	got := map[kmsg.Key][2]int16{}
	for _, k := range resp.ApiKeys {
		got[kmsg.Key(k.ApiKey)] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s advertised %v, want %v", k.Name(), got[k], v)
		}
	}
	// Clients switch to transaction version 2 (KIP-890) from this
	// feature: a new cluster starts at 2, as Kafka 4.4's do.
	var supported, finalized string
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" {
			supported = fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = fmt.Sprintf("%d-%d", f.MinVersionLevel, f.MaxVersionLevel)
		}
	}
	if supported != "0-2" || finalized != "2-2" {
		t.Errorf("transaction.version supported %q, finalized %q; want 0-2, 2-2", supported, finalized)
	}
}

func TestFindTxnCoordinatorCreatesStateTopic(t *testing.T) {
	s := servertest.Start(t, "transaction.state.log.num.partitions=3")
	c := connect(t, servertest.Addr(s))
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"tx-a", ""}
	resp, err := req.RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(servertest.Addr(s))
	// The client may split the keys over requests and merge the answers
	// in any order: find each by its key.
	byKey := map[string]kmsg.FindCoordinatorResponseCoordinator{}
	for _, co := range resp.Coordinators {
		byKey[co.Key] = co
	}
	if len(byKey) != 2 {
		t.Fatalf("answers for %d keys, want 2: %+v", len(byKey), resp.Coordinators)
	}
	co := byKey["tx-a"]
	if co.ErrorCode != 0 || co.NodeID != 1 || co.Host != host || strconv.Itoa(int(co.Port)) != port {
		t.Fatalf("tx-a: error %d node %d at %s:%d, want node 1 at %s:%s", co.ErrorCode, co.NodeID, co.Host, co.Port, host, port)
	}
	if code := byKey[""].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Errorf("empty transactional id: error %d, want INVALID_REQUEST (%d)", code, kerr.InvalidRequest.Code)
	}
	td, err := c.adm.ListTopicsWithInternal(tctx(t), "__transaction_state")
	if err != nil {
		t.Fatal(err)
	}
	st := td["__transaction_state"]
	if st.Err != nil || len(st.Partitions) != 3 || !st.IsInternal || st.Partitions.NumReplicas() != 1 {
		t.Fatalf("__transaction_state: err %v, %d partitions, internal %v, rf %d; want 3 internal partitions rf 1",
			st.Err, len(st.Partitions), st.IsInternal, st.Partitions.NumReplicas())
	}
	if v, _ := c.topicConfig(t, "__transaction_state", "cleanup.policy"); v != "compact" {
		t.Errorf("cleanup.policy %q, want compact", v)
	}
}

func TestInitProducerIDTransactionalBumpsEpoch(t *testing.T) {
	s := servertest.Start(t, "transaction.state.log.num.partitions=2")
	c := connect(t, servertest.Addr(s))
	first := initTxnID(t, c.cl, "tx-bump")
	if first.ErrorCode != 0 || first.ProducerID < 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first init: error %d pid %d epoch %d", first.ErrorCode, first.ProducerID, first.ProducerEpoch)
	}
	second := initTxnID(t, c.cl, "tx-bump")
	if second.ErrorCode != 0 || second.ProducerID != first.ProducerID || second.ProducerEpoch != 1 {
		t.Fatalf("second init: error %d pid %d epoch %d, want pid %d epoch 1", second.ErrorCode, second.ProducerID, second.ProducerEpoch, first.ProducerID)
	}
	other := initTxnID(t, c.cl, "tx-other")
	if other.ProducerID == first.ProducerID {
		t.Fatalf("two transactional ids share producer id %d", other.ProducerID)
	}
	// Over transaction.max.timeout.ms (15 min by default).
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr("tx-long")
	req.TransactionTimeoutMillis = 16 * 60 * 1000
	r := retryTxn(t, c.cl, req, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("16 min timeout: error %d, want INVALID_TRANSACTION_TIMEOUT", r.ErrorCode)
	}
}

func TestAddPartitionsToTxnAndDescribe(t *testing.T) {
	s := servertest.Start(t, "transaction.state.log.num.partitions=2")
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 2, 1, nil, "tx-data"); err != nil {
		t.Fatal(err)
	}
	init := initTxnID(t, c.cl, "tx-add")

	add := func(topics map[string][]int32) *kmsg.AddPartitionsToTxnResponse {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx-add", init.ProducerID, init.ProducerEpoch
		for name, ps := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = name, ps
			req.Topics = append(req.Topics, rt)
		}
		return retryTxn(t, c.cl, req, func(r *kmsg.AddPartitionsToTxnResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	}
	codes := func(r *kmsg.AddPartitionsToTxnResponse) map[string]int16 {
		out := map[string]int16{}
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				out[rt.Topic+"-"+strconv.Itoa(int(rp.Partition))] = rp.ErrorCode
			}
		}
		return out
	}
	// An unknown topic or partition: nothing is added.
	got := codes(add(map[string][]int32{"tx-data": {0}, "tx-missing": {0}}))
	if got["tx-missing-0"] != kerr.UnknownTopicOrPartition.Code || got["tx-data-0"] != kerr.OperationNotAttempted.Code {
		t.Fatalf("with an unknown topic: %v", got)
	}
	got = codes(add(map[string][]int32{"tx-data": {5}}))
	if got["tx-data-5"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 5 of 2: %v", got)
	}
	got = codes(add(map[string][]int32{"tx-data": {0, 1}}))
	if got["tx-data-0"] != 0 || got["tx-data-1"] != 0 {
		t.Fatalf("add: %v", got)
	}

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"tx-add", "tx-nobody"}
	dresp, err := dreq.RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
	for _, st := range dresp.TransactionStates {
		states[st.TransactionalID] = st
	}
	st := states["tx-add"]
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != init.ProducerID || st.TimeoutMillis != 60000 ||
		len(st.Topics) != 1 || st.Topics[0].Topic != "tx-data" || len(st.Topics[0].Partitions) != 2 {
		t.Fatalf("tx-add described as %+v", st)
	}
	if code := states["tx-nobody"].ErrorCode; code != kerr.TransactionalIDNotFound.Code {
		t.Errorf("unknown id: error %d, want TRANSACTIONAL_ID_NOT_FOUND", code)
	}

	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.StateFilters = []string{"Ongoing", "Bogus"}
	lresp, err := lreq.RequestWith(tctx(t), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "tx-add" ||
		lresp.TransactionStates[0].ProducerID != init.ProducerID || lresp.TransactionStates[0].TransactionState != "Ongoing" {
		t.Fatalf("list Ongoing: %+v", lresp.TransactionStates)
	}
	if len(lresp.UnknownStateFilters) != 1 || lresp.UnknownStateFilters[0] != "Bogus" {
		t.Errorf("unknown state filters %v, want [Bogus]", lresp.UnknownStateFilters)
	}
}

// TestAddOffsetsToTxnUnknownProducer checks the coordinator's producer
// check reaches the client with its version's code.
func TestAddOffsetsToTxnUnknownProducer(t *testing.T) {
	s := servertest.Start(t, "transaction.state.log.num.partitions=2")
	c := connect(t, servertest.Addr(s))
	init := initTxnID(t, c.cl, "tx-off")
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "tx-off", init.ProducerID+1, 0, "g"
	r := retryTxn(t, c.cl, req, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })
	if r.ErrorCode != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("wrong producer id: error %d, want INVALID_PRODUCER_ID_MAPPING", r.ErrorCode)
	}
	req.ProducerID, req.ProducerEpoch = init.ProducerID, init.ProducerEpoch+1
	r = retryTxn(t, c.cl, req, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })
	if r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("wrong epoch: error %d, want PRODUCER_FENCED", r.ErrorCode)
	}
}

// AddPartitionsToTxn v4+ is the partition leaders' batched form (KIP-890):
// each transaction answers on its own; one naming an unknown partition
// answers it UNKNOWN_TOPIC_OR_PARTITION and its others
// OPERATION_NOT_ATTEMPTED without reaching the coordinator; VerifyOnly
// checks without adding (TRANSACTION_ABORTABLE for a partition not in the
// transaction) and an entry without it adds the partition.
func TestAddPartitionsToTxnForBrokers(t *testing.T) {
	s := servertest.Start(t)
	c := connect(t, servertest.Addr(s))
	if _, err := c.adm.CreateTopic(tctx(t), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	ir := initTxnID(t, c.cl, "tx-b")
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	tx := func(id string, verify bool, topic string, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
		x := kmsg.NewAddPartitionsToTxnRequestTransaction()
		x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = id, ir.ProducerID, ir.ProducerEpoch, verify
		x.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: parts}}
		return x
	}
	send := func(txs ...kmsg.AddPartitionsToTxnRequestTransaction) map[string][]int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 5
		req.Transactions = txs
		resp, err := c.cl.Request(tctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.AddPartitionsToTxnResponse)
		if r.Version != 5 || r.ErrorCode != 0 {
			t.Fatalf("answer v%d, error %d", r.Version, r.ErrorCode)
		}
		got := map[string][]int16{}
		for _, rt := range r.Transactions {
			for _, tp := range rt.Topics {
				for _, p := range tp.Partitions {
					got[rt.TransactionalID] = append(got[rt.TransactionalID], p.ErrorCode)
				}
			}
		}
		return got
	}
	// The coordinator loads its partition first: verify until it answers.
	deadline := time.Now().Add(10 * time.Second)
	var got map[string][]int16
	for {
		got = send(tx("tx-b", true, "t", 0))
		if c := got["tx-b"][0]; (c != kerr.CoordinatorLoadInProgress.Code && c != kerr.NotCoordinator.Code) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := map[string][]int16{"tx-b": {kerr.TransactionAbortable.Code}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verify before any add: %v, want %v", got, want)
	}
	got = send(tx("tx-b", false, "t", 0), tx("tx-unknown", false, "nope", 0))
	want = map[string][]int16{"tx-b": {0}, "tx-unknown": {kerr.UnknownTopicOrPartition.Code}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("add: %v, want %v", got, want)
	}
	got = send(tx("tx-b", true, "t", 0, 1, 2))
	want = map[string][]int16{"tx-b": {kerr.OperationNotAttempted.Code, kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verify with an unknown partition: %v, want %v", got, want)
	}
	got = send(tx("tx-b", true, "t", 0, 1))
	want = map[string][]int16{"tx-b": {0, kerr.TransactionAbortable.Code}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("verify after the add: %v, want %v", got, want)
	}
}
