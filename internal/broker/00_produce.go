package broker

// Produce, versions 0-13.
//
// Behavior:
//   - v13 names topics by id (KIP-516), resolved through the metadata
//     image; the answer carries the ids. An id the image does not know
//     (the zero id included) answers UNKNOWN_TOPIC_ID for each of its
//     partitions, before the topic's authorization, as Kafka's KafkaApis
//     does (its name is not known to authorize).
//   - Versions 0-2 are advertised because librdkafka expects Produce from
//     version 0 (KAFKA-18659), but their v0/v1 message sets are refused with
//     UNSUPPORTED_VERSION per partition: only v2 record batches are stored.
//   - Each partition's records must be exactly one v2 batch (Kafka's rule
//     since v3); more than one is INVALID_RECORD. The batch stays bytes: it
//     is validated, offsets are assigned in place, and it is appended as is.
//   - Clients may not write to internal topics (INVALID_TOPIC_EXCEPTION).
//   - zstd batches need produce v7+ (UNSUPPORTED_COMPRESSION_TYPE before).
//   - acks must be -1, 0 or 1 (INVALID_REQUIRED_ACKS). Only the partition
//     leader appends (NOT_LEADER_OR_FOLLOWER elsewhere).
//   - acks=1 answers after the leader's append. acks=-1 (all) first checks
//     the ISR holds at least min.insync.replicas (NOT_ENOUGH_REPLICAS,
//     nothing appended), appends every partition, then waits until each
//     batch is committed (the high watermark passes it) within
//     timeout_ms. A partition that does not commit in time answers
//     REQUEST_TIMED_OUT, one committed with too small an ISR
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND, one whose leadership moved
//     NOT_LEADER_OR_FOLLOWER; as in Kafka's DelayedProduce, the base
//     offset of the append is still reported with the error.
//   - acks=0 sends no response; an error then closes the connection, which
//     is the only way a fire-and-forget producer can learn of it (Kafka does
//     the same).
//   - Transactional writes (KIP-890, transaction.partition.verification.enable,
//     default true): a transactional batch that would open a transaction
//     on a partition is appended only once the producer's transaction
//     coordinator confirms the partition is in the transaction (v3-v11,
//     AddPartitionsToTxn VerifyOnly) or adds it (v12+, transaction
//     version 2, whose clients add no partitions themselves). A write
//     refused answers INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11
//     when the partition is not in the transaction), INVALID_PRODUCER_EPOCH
//     for a fenced producer, and NOT_ENOUGH_REPLICAS, which producers
//     retry, while the coordinator is busy or unreachable. A marker of the
//     producer between the check and the append voids the check, so a
//     write arriving after its transaction ended cannot open a hanging
//     transaction.
//   - Authorization (KafkaApis): a request with transactional batches
//     needs WRITE on its transactional id, else every partition answers
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs WRITE, else
//     its partitions answer TOPIC_AUTHORIZATION_FAILED (before any check
//     of the topic's existence). An idempotent producer's right to a
//     producer id was checked by InitProducerId.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleProduce(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Version = req.Version

	z := b.authz(c)
	var txnDenied bool
	if z.on() && hasTransactionalBatches(req) {
		txnDenied = req.TransactionID == nil || !z.txnID(kmsg.ACLOperationWrite, *req.TransactionID)
	}
	writable := z.topics(kmsg.ACLOperationWrite)
	acksOK := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	img := b.cfg.Image()
	topicName := func(rt kmsg.ProduceRequestTopic) (topic string, idUnknown bool) {
		if req.Version < 13 {
			return rt.Topic, false
		}
		if t, ok := img.TopicByID(metadata.Uuid(rt.TopicID)); ok {
			return t.Name, false
		}
		return "", true
	}
	var txnWrites map[txn.TopicPartition]*txnWrite
	if !txnDenied && acksOK {
		txnWrites = b.verifyTxnWrites(ctx, req, func(fn func(string, int32, []byte)) {
			for _, rt := range req.Topics {
				if topic, unknown := topicName(rt); !unknown && writable(topic) {
					for _, rp := range rt.Partitions {
						fn(topic, rp.Partition, rp.Records)
					}
				}
			}
		})
	}
	var firstErr error
	var pending []pendingProduce
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		topic, idUnknown := topicName(rt)
		_, topicKnown := img.Topic(topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			var err error
			switch {
			case txnDenied:
				err = kerr.TransactionalIDAuthorizationFailed
			case idUnknown:
				err = kerr.UnknownTopicID
			case !writable(topic):
				err = kerr.TopicAuthorizationFailed
			case !acksOK:
				err = kerr.InvalidRequiredAcks
			case !topicKnown:
				err = kerr.UnknownTopicOrPartition
			case isInternalTopic(topic):
				err = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, topic)
			default:
				var w pendingProduce
				var tw *txnWrite
				if txnWrites != nil {
					tw = txnWrites[txn.TopicPartition{Topic: topic, Partition: rp.Partition}]
					if tw == nil {
						tw = &txnWrite{} // verification on, none taken: only an open transaction may go on
					}
				}
				w, err = b.produceTo(topic, rp.Records, &sp, req.Version, req.Acks == -1, tw)
				if err == nil && w.p != nil {
					w.topic, w.partition = len(resp.Topics), len(st.Partitions)
					pending = append(pending, w)
				}
			}
			if err != nil {
				setProduceError(b, &sp, err)
				if firstErr == nil {
					firstErr = fmt.Errorf("produce to %s-%d: %w", topicOrID(topic, rt.TopicID), rp.Partition, err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.awaitAppends(ctx, resp, pending, req.Acks == -1, time.Duration(req.TimeoutMillis)*time.Millisecond)
	if req.Acks == 0 {
		if firstErr == nil {
			firstErr = produceError(resp)
		}
		return nil, firstErr
	}
	return resp, nil
}

// produceError is the first partition error of resp, for acks=0.
func produceError(resp *kmsg.ProduceResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("produce to %s-%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// topicOrID names a produced-to topic for an error: by name, or by id
// when the name is not known (v13).
func topicOrID(name string, id [16]byte) string {
	if name != "" {
		return name
	}
	return metadata.Uuid(id).String()
}

// hasTransactionalBatches reports whether a partition's batch is
// transactional (Kafka's RequestUtils.hasTransactionalRecords).
func hasTransactionalBatches(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if h, err := record.ParseHeader(p.Records); err == nil && h.Transactional() {
				return true
			}
		}
	}
	return false
}

// pendingProduce is an append not final yet — its fsync is due (the
// flush policy), or it waits to commit (acks=all) — and where its answer
// is in the response.
type pendingProduce struct {
	p                *replica.Partition
	res              replica.AppendResult
	topic, partition int
}

// awaitAppends waits, in parallel, until every pending append is final:
// fsynced when its log's flush policy says so (replica.WaitSynced; the
// appends of one log share fsyncs) and, with acksAll, committed within
// timeout. It sets the error of those that are not.
func (b *Broker) awaitAppends(ctx context.Context, resp *kmsg.ProduceResponse, pending []pendingProduce, acksAll bool, timeout time.Duration) {
	if len(pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, max(timeout, 0))
	defer cancel()
	errs := make([]error, len(pending))
	wait := func(i int, w pendingProduce) {
		errs[i] = w.p.WaitSynced(w.res)
		if errs[i] == nil && acksAll {
			errs[i] = w.p.WaitCommitted(ctx, w.res.LastOffset)
		}
	}
	back := away(ctx) // waiting for the disk and followers is not handling (quota.go)
	if len(pending) == 1 {
		wait(0, pending[0])
	} else {
		var wg sync.WaitGroup
		for i, w := range pending {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wait(i, w)
			}()
		}
		wg.Wait()
	}
	back()
	for i, w := range pending {
		if errs[i] != nil {
			setProduceError(b, &resp.Topics[w.topic].Partitions[w.partition], errs[i])
		}
	}
}

func setProduceError(b *Broker, sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode = b.errCode(err, "produce")
	if sp.ErrorMessage == nil {
		sp.ErrorMessage = errMessage(err)
	}
}

// produceTo appends one partition's batch and fills in the response. With
// acksAll it checks the ISR first. It returns the append to wait for
// (awaitAppends). With tw (transaction verification on) a transactional
// batch appends under its verification: tw's error, or its guard.
func (b *Broker) produceTo(topic string, records []byte, sp *kmsg.ProduceResponseTopicPartition, version int16, acksAll bool, tw *txnWrite) (pendingProduce, error) {
	p, err := b.leaderPartition(topic, sp.Partition)
	if err != nil {
		return pendingProduce{}, err
	}
	if tw != nil && tw.err != nil {
		return pendingProduce{}, tw.err
	}
	h, err := record.ParseHeader(records)
	switch {
	case errors.Is(err, record.ErrUnsupportedMagic):
		return pendingProduce{}, kerr.UnsupportedVersion
	case err == nil && h.Size() < len(records):
		sp.ErrorMessage = strPtr("a produce request must hold exactly one record batch per partition")
		return pendingProduce{}, kerr.InvalidRecord
	case err == nil && h.Codec() == record.CodecZstd && version < 7:
		return pendingProduce{}, kerr.UnsupportedCompressionType // zstd came with produce v7
	}
	if acksAll {
		if err := p.CheckEnoughReplicas(); err != nil {
			return pendingProduce{}, err
		}
	}
	var res replica.AppendResult
	if err != nil {
		// A header that does not parse: Append refuses the batch as it
		// refuses any invalid one.
		res, err = p.Append(records)
	} else {
		// The header goes down with the batch; nothing below parses it
		// again.
		var guard *replica.VerificationGuard
		if tw != nil && h.Transactional() {
			guard = &tw.guard
		}
		res, err = p.AppendParsedUnsynced(records, h, guard)
	}
	if err != nil {
		return pendingProduce{}, err
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	if !acksAll && !res.NeedsSync() {
		return pendingProduce{}, nil
	}
	// A duplicate batch answers the offsets of the original, which must
	// be fsynced and committed too.
	return pendingProduce{p: p, res: res}, nil
}

func strPtr(s string) *string { return &s }
