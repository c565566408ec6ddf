package txn

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// Record schema versions as Kafka 4 writes them: the key is v0; the value
// is v0 while the cluster's transaction.version is 0 and v1 (flexible,
// with the KIP-890 tagged fields PreviousProducerId, NextProducerId and
// ClientTransactionVersion) from level 1 (Kafka's
// TransactionVersion.transactionLogValueVersion).
const keyVersion = 0

// valueVersion is the TxnMetadataValue version written at the cluster's
// finalized transaction.version.
func valueVersion(transactionVersion int16) int16 {
	if transactionVersion >= 1 {
		return 1
	}
	return 0
}

// KV is one record of __transaction_state (Key and Value only); a nil
// Value is a tombstone.
type KV = coordinator.KV

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// State is a transaction's state, with Kafka's byte values (TransactionState).
type State int8

// Kafka's transaction states. PrepareEpochFence and Dead are never written
// to the log: a fence is written as PrepareAbort at the bumped epoch, and
// removal as a tombstone.
const (
	StateEmpty State = iota
	StateOngoing
	StatePrepareCommit
	StatePrepareAbort
	StateCompleteCommit
	StateCompleteAbort
	StateDead
	StatePrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's state name, as DescribeTransactions and
// ListTransactions report it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

func parseState(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// txnMeta is the coordinator's view of one transactional id (Kafka's
// TransactionMetadata).
type txnMeta struct {
	id             string
	producerID     int64
	prevProducerID int64 // before the last rotation, for InitProducerId retries
	epoch          int16
	lastEpoch      int16 // epoch before the last client-requested bump; -1 after load
	// nextProducerID is the producer id a transaction version 2 EndTxn
	// allocated because the epoch is exhausted: the Complete state moves
	// to it at epoch 0. -1 otherwise.
	nextProducerID int64
	// clientTV is the transaction version the client ran the transaction
	// with: 2 when it started by a broker's implicit add (Produce v12+,
	// TxnOffsetCommit v5+) or ended with EndTxn v5+; 0 otherwise.
	clientTV   int16
	timeoutMs  int32
	state      State
	partitions map[TopicPartition]struct{}
	startMs    int64 // -1 when no transaction has started
	updateMs   int64
}

func (t *txnMeta) clone() *txnMeta {
	n := *t
	n.partitions = maps.Clone(t.partitions)
	return &n
}

func (t *txnMeta) sortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(t.partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// byTopic groups sorted partitions by topic, as the record and
// DescribeTransactions list them.
func byTopic(ps []TopicPartition, fn func(topic string, parts []int32)) {
	for i := 0; i < len(ps); {
		j := i
		var parts []int32
		for ; j < len(ps) && ps[j].Topic == ps[i].Topic; j++ {
			parts = append(parts, ps[j].Partition)
		}
		fn(ps[i].Topic, parts)
		i = j
	}
}

func txnKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

func txnRecord(t *txnMeta, transactionVersion int16) KV {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion(transactionVersion)
	v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = t.prevProducerID, t.nextProducerID, t.clientTV
	v.ProducerID, v.ProducerEpoch = t.producerID, t.epoch
	v.TimeoutMillis = t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp, v.StartTimestamp = t.updateMs, t.startMs
	byTopic(t.sortedPartitions(), func(topic string, parts []int32) {
		v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: topic, Partitions: parts})
	})
	return KV{Key: txnKey(t.id), Value: v.AppendTo(nil)}
}

func parseRecord(kv KV) (id string, t *txnMeta, err error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(kv.Key); err != nil {
		return "", nil, fmt.Errorf("decoding transaction key: %w", err)
	}
	if k.Version != 0 {
		return "", nil, fmt.Errorf("unknown transaction key version %d", k.Version)
	}
	if kv.Value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(kv.Value); err != nil {
		return "", nil, fmt.Errorf("transactional id %q: decoding value: %w", k.TransactionalID, err)
	}
	st := State(v.State)
	if st < StateEmpty || st > StateCompleteAbort {
		return "", nil, fmt.Errorf("transactional id %q: state %d cannot be in the log", k.TransactionalID, v.State)
	}
	t = &txnMeta{
		id: k.TransactionalID, producerID: v.ProducerID, prevProducerID: -1, nextProducerID: -1,
		epoch: v.ProducerEpoch, lastEpoch: -1, timeoutMs: v.TimeoutMillis, state: st,
		partitions: map[TopicPartition]struct{}{}, startMs: v.StartTimestamp, updateMs: v.LastUpdateTimestamp,
	}
	if v.Version >= 1 {
		t.prevProducerID, t.nextProducerID, t.clientTV = v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion
	}
	for _, tp := range v.Topics {
		for _, p := range tp.Partitions {
			t.partitions[TopicPartition{tp.Topic, p}] = struct{}{}
		}
	}
	return k.TransactionalID, t, nil
}
