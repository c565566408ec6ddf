package broker

// Produce, versions 0-12.
//
// Behavior:
//   - Versions 0-2 are advertised because librdkafka expects Produce from
//     version 0 (KAFKA-18659), but their v0/v1 message sets are refused with
//     UNSUPPORTED_VERSION per partition: only v2 record batches are stored.
//   - Each partition's records must be exactly one v2 batch (Kafka's rule
//     since v3); more than one is INVALID_RECORD. The batch stays bytes: it
//     is validated, offsets are assigned in place, and it is appended as is.
//   - Clients may not write to internal topics (INVALID_TOPIC_EXCEPTION).
//   - zstd batches need produce v7+ (UNSUPPORTED_COMPRESSION_TYPE before).
//   - acks must be -1, 0 or 1 (INVALID_REQUIRED_ACKS). With one replica
//     acks=all is satisfied by the local append.
//   - acks=0 sends no response; an error then closes the connection, which
//     is the only way a fire-and-forget producer can learn of it (Kafka does
//     the same).

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/record"
)

func handleProduce(_ context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Version = req.Version

	acksOK := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	img := b.cfg.Image()
	var firstErr error
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		_, topicKnown := img.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			var err error
			switch {
			case !acksOK:
				err = kerr.InvalidRequiredAcks
			case !topicKnown:
				err = kerr.UnknownTopicOrPartition
			case isInternalTopic(rt.Topic):
				err = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, rt.Topic)
			default:
				err = b.produceTo(rt.Topic, rp.Records, &sp, req.Version)
			}
			if err != nil {
				sp.ErrorCode = b.errCode(err, "produce")
				if sp.ErrorMessage == nil {
					sp.ErrorMessage = errMessage(err)
				}
				if firstErr == nil {
					firstErr = fmt.Errorf("produce to %s-%d: %w", rt.Topic, rp.Partition, err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil, firstErr
	}
	return resp, nil
}

// produceTo appends one partition's batch and fills in the response.
func (b *Broker) produceTo(topic string, records []byte, sp *kmsg.ProduceResponseTopicPartition, version int16) error {
	p, ok := b.cfg.Replicas.Partition(topic, sp.Partition)
	if !ok {
		img := b.cfg.Image()
		if t, ok := img.Topic(topic); ok && sp.Partition >= 0 && int(sp.Partition) < len(t.Partitions) {
			return kerr.NotLeaderForPartition
		}
		return kerr.UnknownTopicOrPartition
	}
	h, err := record.ParseHeader(records)
	switch {
	case errors.Is(err, record.ErrUnsupportedMagic):
		return kerr.UnsupportedVersion
	case err == nil && h.Size() < len(records):
		sp.ErrorMessage = strPtr("a produce request must hold exactly one record batch per partition")
		return kerr.InvalidRecord
	case err == nil && h.Codec() == record.CodecZstd && version < 7:
		return kerr.UnsupportedCompressionType // zstd came with produce v7
	}
	res, err := p.Append(records)
	if err != nil {
		return err
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	return nil
}

func strPtr(s string) *string { return &s }
