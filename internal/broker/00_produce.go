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
	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
)

func handleProduce(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Version = req.Version

	batches := parseBatches(req)
	z := b.authz(c)
	var txnDenied bool
	if z.on() && hasTransactionalBatches(batches) {
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
		txnWrites = b.verifyTxnWrites(ctx, req, func(fn func(string, int32, parsedBatch)) {
			for ti, rt := range req.Topics {
				if topic, unknown := topicName(rt); !unknown && writable(topic) {
					for pi, rp := range rt.Partitions {
						fn(topic, rp.Partition, batches.byTopic[ti][pi])
					}
				}
			}
		})
	}
	if !txnDenied && acksOK && len(batches.all) > 1 {
		// The first append to a partition after a restart or its
		// creation fsyncs its metadata files: for many partitions at
		// once, in parallel first.
		b.cfg.Replicas.SyncMetaFiles(func(yield func(string, int32)) {
			for _, rt := range req.Topics {
				if topic, unknown := topicName(rt); !unknown && writable(topic) {
					for _, rp := range rt.Partitions {
						yield(topic, rp.Partition)
					}
				}
			}
		})
	}
	var firstErr error
	var tm *metrics.TopicCounters // BrokerTopicMetrics of the topic, resolved once
	var pending []pendingProduce
	var commits *replica.CommitWait
	if req.Acks == -1 {
		commits = replica.NewCommitWait(len(batches.all))
	}
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		topic, idUnknown := topicName(rt)
		_, topicKnown := img.Topic(topic)
		for pi, rp := range rt.Partitions {
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
				var tw *txnWrite
				if txnWrites != nil {
					tw = txnWrites[txn.TopicPartition{Topic: topic, Partition: rp.Partition}]
					if tw == nil {
						tw = &txnWrite{} // verification on, none taken: only an open transaction may go on
					}
				}
				w := pendingProduce{topic: ti, partition: pi, index: batches.index(ti, pi)}
				err = b.produceTo(topic, rp.Records, batches.byTopic[ti][pi], &sp, req.Version, commits, tw, &w)
				tm = b.cfg.Metrics.Produced(tm, topic, int(batches.byTopic[ti][pi].h.NumRecords), len(rp.Records), err)
				if err == nil && w.p != nil {
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
	b.awaitAppends(ctx, resp, pending, commits, time.Duration(req.TimeoutMillis)*time.Millisecond)
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

// parsedBatch is a partition's batch header, parsed once per request.
type parsedBatch struct {
	h   record.Header
	err error
}

// requestBatches are a produce request's parsed batch headers, by topic
// and partition as in the request; all holds them back to back, topic
// ti's from first[ti].
type requestBatches struct {
	byTopic [][]parsedBatch
	all     []parsedBatch
	first   []int
}

func parseBatches(req *kmsg.ProduceRequest) requestBatches {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	rb := requestBatches{byTopic: make([][]parsedBatch, len(req.Topics)), all: make([]parsedBatch, n), first: make([]int, len(req.Topics))}
	n = 0
	for ti, t := range req.Topics {
		rb.first[ti] = n
		rb.byTopic[ti] = rb.all[n : n+len(t.Partitions)]
		for pi, p := range t.Partitions {
			h, err := record.ParseHeader(p.Records)
			rb.byTopic[ti][pi] = parsedBatch{h, err}
		}
		n += len(t.Partitions)
	}
	return rb
}

// index is the position of a partition's batch in all.
func (rb requestBatches) index(topic, partition int) int {
	return rb.first[topic] + partition
}

// hasTransactionalBatches reports whether a partition's batch is
// transactional (Kafka's RequestUtils.hasTransactionalRecords).
func hasTransactionalBatches(rb requestBatches) bool {
	for _, b := range rb.all {
		if b.err == nil && b.h.Transactional() {
			return true
		}
	}
	return false
}

// pendingProduce is an append not final yet — its fsync is due (the
// flush policy), or it waits to commit (acks=all) — and where its answer
// is in the response and in the request's CommitWait.
type pendingProduce struct {
	p                       *replica.Partition
	res                     replica.AppendResult
	topic, partition, index int
}

// awaitAppends waits until every pending append is final: fsynced when
// its log's flush policy says so (replica.WaitSynced, in parallel; the
// appends of one log share fsyncs) and, with acks=all (commits not nil),
// committed within timeout. It sets the error of those that are not.
func (b *Broker) awaitAppends(ctx context.Context, resp *kmsg.ProduceResponse, pending []pendingProduce, commits *replica.CommitWait, timeout time.Duration) {
	if len(pending) == 0 {
		return
	}
	back := away(ctx) // waiting for the disk and followers is not handling (quota.go)
	defer back()
	errs := make([]error, len(pending))
	var syncs []int
	for i, w := range pending {
		if w.res.NeedsSync() {
			syncs = append(syncs, i)
		}
	}
	if len(syncs) == 1 {
		errs[syncs[0]] = pending[syncs[0]].p.WaitSynced(pending[syncs[0]].res)
	} else if len(syncs) > 1 {
		var wg sync.WaitGroup
		for _, i := range syncs {
			wg.Go(func() { errs[i] = pending[i].p.WaitSynced(pending[i].res) })
		}
		wg.Wait()
	}
	if commits != nil {
		ctx, cancel := context.WithTimeout(ctx, max(timeout, 0))
		committed := commits.Wait(ctx)
		cancel()
		for i, w := range pending {
			if errs[i] == nil {
				errs[i] = committed[w.index]
			}
		}
	}
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

// produceTo appends one partition's batch, whose header batch is, and
// fills in the response. With commits (acks=all) the append checks the
// ISR first and joins commits at w.index. An append still to wait for
// (awaitAppends) is left in w. With tw (transaction verification on) a
// transactional batch appends under its verification: tw's error, or
// its guard.
func (b *Broker) produceTo(topic string, records []byte, batch parsedBatch, sp *kmsg.ProduceResponseTopicPartition, version int16, commits *replica.CommitWait, tw *txnWrite, w *pendingProduce) error {
	p, err := b.leaderPartition(topic, sp.Partition)
	if err != nil {
		return err
	}
	if tw != nil && tw.err != nil {
		return tw.err
	}
	h, err := batch.h, batch.err
	switch {
	case errors.Is(err, record.ErrUnsupportedMagic):
		return kerr.UnsupportedVersion
	case err == nil && h.Size() < len(records):
		sp.ErrorMessage = strPtr("a produce request must hold exactly one record batch per partition")
		return kerr.InvalidRecord
	case err == nil && h.Codec() == record.CodecZstd && version < 7:
		return kerr.UnsupportedCompressionType // zstd came with produce v7
	}
	var res replica.AppendResult
	if err != nil {
		// A header that does not parse: Append refuses the batch as it
		// refuses any invalid one, after the acks=all check as in Kafka.
		if commits != nil {
			if err := p.CheckEnoughReplicas(); err != nil {
				return err
			}
		}
		_, err := p.Append(records) // refuses the batch: its header does not parse
		return err
	}
	// The header goes down with the batch; nothing below parses it again.
	o := replica.AppendOptions{Commit: commits, CommitIndex: w.index}
	if tw != nil && h.Transactional() {
		o.Guard = &tw.guard
	}
	res, err = p.AppendProduce(records, h, o)
	if err != nil {
		return err
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	if commits == nil && !res.NeedsSync() {
		return nil
	}
	// A duplicate batch answers the offsets of the original, which must
	// be fsynced and committed too.
	w.p, w.res = p, res
	return nil
}

func strPtr(s string) *string { return &s }
