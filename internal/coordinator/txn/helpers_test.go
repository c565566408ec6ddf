package txn_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/coordinator/coordtest"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is an in-memory __transaction_state partition.
type memLog = coordtest.MemLog

// states decodes the log as "id:State@pid/epoch[partitions]" lines
// ("id:tombstone" for a tombstone).
func states(l *memLog) []string {
	var out []string
	for _, kv := range l.Records() {
		var k kmsg.TxnMetadataKey
		if err := k.ReadFrom(kv.Key); err != nil {
			panic(err)
		}
		if kv.Value == nil {
			out = append(out, k.TransactionalID+":tombstone")
			continue
		}
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(kv.Value); err != nil || v.Version != 0 {
			panic(fmt.Sprint(err, v.Version))
		}
		var parts []string
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
		out = append(out, fmt.Sprintf("%s:%s@%d/%d%v", k.TransactionalID, txn.State(v.State), v.ProducerID, v.ProducerEpoch, parts))
	}
	return out
}

// markerCall is one WriteMarkers call.
type markerCall struct {
	pid        int64
	epoch      int16
	coordEpoch int32
	commit     bool
	tv         int16
	parts      []txn.TopicPartition
}

func (m markerCall) String() string {
	kind := "abort"
	if m.commit {
		kind = "commit"
	}
	if m.tv >= 2 {
		kind += " tv2"
	}
	return fmt.Sprintf("%s %d/%d ce%d %v", kind, m.pid, m.epoch, m.coordEpoch, m.parts)
}

// fakeMarkers records successful calls; failures makes the next calls fail.
type fakeMarkers struct {
	mu       sync.Mutex
	calls    []markerCall
	failures int
	attempts int
	hang     bool // block until ctx ends
	// gate, when set, holds every call until it is closed (or ctx ends):
	// markers that are slow to be written.
	gate chan struct{}
}

func (f *fakeMarkers) WriteMarkers(ctx context.Context, m txn.Marker, parts []txn.TopicPartition) error {
	pid, epoch, ce, commit := m.ProducerID, m.Epoch, m.CoordinatorEpoch, m.Commit
	f.mu.Lock()
	f.attempts++
	hang, gate := f.hang, f.gate
	if f.failures > 0 {
		f.failures--
		f.mu.Unlock()
		return errors.New("NOT_ENOUGH_REPLICAS")
	}
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, markerCall{pid, epoch, ce, commit, m.TransactionVersion, slices.Clone(parts)})
	return nil
}

func (f *fakeMarkers) attemptCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

func (f *fakeMarkers) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.String())
	}
	return out
}

type env struct {
	t       *testing.T
	c       *txn.Coordinator
	log     *memLog
	markers *fakeMarkers
	ctx     context.Context
	nextPID int64
}

const coordEpoch = 7

// newEnv starts a coordinator with one partition of __transaction_state,
// loaded from log; call it inside synctest.Test.
func newEnv(t *testing.T, log *memLog, markers *fakeMarkers) *env {
	t.Helper()
	return newEnvTV(t, log, markers, 0)
}

// newEnvTV is newEnv on a cluster finalized at transaction.version tv.
func newEnvTV(t *testing.T, log *memLog, markers *fakeMarkers, tv int16) *env {
	t.Helper()
	if log == nil {
		log = &memLog{}
	}
	if markers == nil {
		markers = &fakeMarkers{}
	}
	e := &env{t: t, log: log, markers: markers, ctx: t.Context(), nextPID: 1000}
	var pidMu sync.Mutex
	cfg := txn.Config{
		NumPartitions: 1,
		ProducerIDs: func(context.Context) (int64, error) {
			pidMu.Lock()
			defer pidMu.Unlock()
			e.nextPID++
			return e.nextPID - 1, nil
		},
		GroupPartition:     func(g string) (string, int32) { return "__consumer_offsets", int32(len(g)) },
		Markers:            markers,
		TransactionVersion: func() int16 { return tv },
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e.c = txn.New(cfg)
	t.Cleanup(e.c.Close)
	e.c.Load(0, coordEpoch, log)
	for range 100 {
		if e.describe("probe").ErrorCode != 14 {
			return e
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("never loaded")
	return nil
}

func (e *env) init(id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
	req.ProducerID, req.ProducerEpoch = -1, -1
	return e.c.InitProducerID(e.ctx, req)
}

// mustInit inits id and returns its producer id and epoch.
func (e *env) mustInit(id string) (int64, int16) {
	e.t.Helper()
	r := e.init(id, 60_000)
	if r.ErrorCode != 0 {
		e.t.Fatalf("init %s: error %d", id, r.ErrorCode)
	}
	return r.ProducerID, r.ProducerEpoch
}

// add adds partitions "topic-p" ... of one topic with AddPartitionsToTxn v3.
func (e *env) add(id string, pid int64, epoch int16, topic string, parts ...int32) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: parts}}
	r := e.c.AddPartitionsToTxn(e.ctx, req)
	code := r.Topics[0].Partitions[0].ErrorCode
	for _, p := range r.Topics[0].Partitions {
		if p.ErrorCode != code {
			e.t.Fatalf("mixed codes %+v", r.Topics[0].Partitions)
		}
	}
	return code
}

func (e *env) end(id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return e.c.EndTxn(e.ctx, req).ErrorCode
}

func (e *env) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return e.c.DescribeTransactions(e.ctx, req).TransactionStates[0]
}

// state is "State@pid/epoch" of id.
func (e *env) state(id string) string {
	d := e.describe(id)
	if d.ErrorCode != 0 {
		return fmt.Sprintf("error %d", d.ErrorCode)
	}
	return fmt.Sprintf("%s@%d/%d", d.State, d.ProducerID, d.ProducerEpoch)
}

func (e *env) expect(what string, got, want any) {
	e.t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}
