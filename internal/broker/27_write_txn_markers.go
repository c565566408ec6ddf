package broker

// WriteTxnMarkers, versions 0-2.
//
// Behavior:
//   - Sent by a transaction coordinator (txn.MarkerChannel on its broker) to the
//     leader of each partition of a transaction that ends. As in Kafka,
//     the sender needs ALTER or CLUSTER_ACTION on the cluster, else every
//     partition answers CLUSTER_AUTHORIZATION_FAILED.
//   - For each marker and partition: UNKNOWN_TOPIC_OR_PARTITION for a
//     partition the image does not know (or deleted meanwhile),
//     NOT_LEADER_OR_FOLLOWER where this node does not lead. Otherwise the
//     marker is appended — INVALID_PRODUCER_EPOCH for an older producer
//     epoch, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch
//     — and the partition answers once the marker is committed, as an
//     acks=all produce: REQUEST_TIMED_OUT after 30 s,
//     NOT_LEADER_OR_FOLLOWER if leadership moved meanwhile,
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND.
//   - A committed marker on a partition of __consumer_offsets is handed to
//     the local group coordinator, so the producer's pending transactional
//     offsets commit or drop.
//   - v2 carries the client's TransactionVersion per marker (KIP-890): at
//     2 the marker's epoch is the one EndTxn bumped to and must be above
//     that of an open transaction of the producer (INVALID_PRODUCER_EPOCH).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/storage"
)

func handleWriteTxnMarkers(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	resp.Version = req.Version
	z := b.authz(c)
	allowed := z.cluster(kmsg.ACLOperationAlter) || z.cluster(kmsg.ACLOperationClusterAction)
	img := b.cfg.Image()
	// One deadline for the whole request: markers are appended one
	// after the other, and each waits for the rest of it.
	ctx, cancel := context.WithTimeout(ctx, txn.WriteTimeout)
	defer cancel()
	for _, rm := range req.Markers {
		m := txn.Marker{ProducerID: rm.ProducerID, Epoch: rm.ProducerEpoch, CoordinatorEpoch: rm.CoordinatorEpoch, Commit: rm.Committed,
			TransactionVersion: int16(rm.TransactionVersion)}
		var known []txn.TopicPartition
		codes := make(map[txn.TopicPartition]int16)
		for _, rt := range rm.Topics {
			t, ok := img.Topic(rt.Topic)
			for _, p := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
				if !allowed {
					codes[tp] = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				if !ok || p < 0 || int(p) >= len(t.Partitions) {
					codes[tp] = kerr.UnknownTopicOrPartition.Code
					continue
				}
				known = append(known, tp)
			}
		}
		for i, err := range txn.WriteLocalMarkers(ctx, b.cfg.Replicas, b.cfg.Groups, m, known, txn.WriteTimeout) {
			codes[known[i]] = b.markerErrCode(err)
		}
		out := kmsg.NewWriteTxnMarkersResponseMarker()
		out.ProducerID = rm.ProducerID
		for _, rt := range rm.Topics {
			ot := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			ot.Topic = rt.Topic
			for _, p := range rt.Partitions {
				op := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				op.Partition = p
				op.ErrorCode = codes[txn.TopicPartition{Topic: rt.Topic, Partition: p}]
				ot.Partitions = append(ot.Partitions, op)
			}
			out.Topics = append(out.Topics, ot)
		}
		resp.Markers = append(resp.Markers, out)
	}
	return resp, nil
}

// markerErrCode is the code for one partition's marker: a log closed under
// the write means the partition was deleted.
func (b *Broker) markerErrCode(err error) int16 {
	if errors.Is(err, storage.ErrClosed) {
		return kerr.UnknownTopicOrPartition.Code
	}
	return b.errCode(err, "write transaction marker")
}
