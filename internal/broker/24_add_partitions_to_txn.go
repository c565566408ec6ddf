package broker

// AddPartitionsToTxn, versions 0-3.
//
// Behavior:
//   - The transaction coordinator adds the partitions to the producer's
//     transaction, starting one if none is ongoing; every partition gets
//     the same code.
//   - Partitions of unknown topics, or beyond a topic's partition count, get
//     UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED
//     without asking the coordinator, as Kafka answers.
//   - v4+ (KIP-890's batched broker-to-broker form) is not served: it only
//     verifies transactions for other brokers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAddPartitionsToTxn(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	img := b.cfg.Image()
	unknown := make(map[string]map[int32]bool)
	for _, t := range req.Topics {
		ti, ok := img.Topic(t.Topic)
		for _, p := range t.Partitions {
			if !ok || p < 0 || int(p) >= len(ti.Partitions) {
				if unknown[t.Topic] == nil {
					unknown[t.Topic] = map[int32]bool{}
				}
				unknown[t.Topic][p] = true
			}
		}
	}
	var resp *kmsg.AddPartitionsToTxnResponse
	switch {
	case len(unknown) > 0:
		resp = addPartitionsAnswer(req, func(topic string, p int32) int16 {
			if unknown[topic][p] {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
	case b.cfg.Txns == nil:
		resp = addPartitionsAnswer(req, func(string, int32) int16 { return kerr.CoordinatorNotAvailable.Code })
	default:
		resp = b.cfg.Txns.AddPartitionsToTxn(ctx, req)
	}
	resp.Version = req.Version
	return resp, nil
}

// addPartitionsAnswer answers every requested partition with code(topic, p).
func addPartitionsAnswer(req *kmsg.AddPartitionsToTxnRequest, code func(topic string, p int32) int16) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code(t.Topic, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
