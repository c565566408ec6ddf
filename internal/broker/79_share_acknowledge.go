package broker

// ShareAcknowledge, versions 1-2 (KIP-932).
//
// Behavior: acknowledges records acquired through ShareFetch in the
// member's share session (epoch rules as ShareFetch; epoch 0 is
// INVALID_SHARE_SESSION_EPOCH, -1 acknowledges and then closes the
// session). Types: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v2). A
// record the member does not hold (another member's, or its lock expired)
// is INVALID_RECORD_STATE for its partition, and nothing of that batch
// changes. Authorization as ShareFetch.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/sharepartition"
)

func handleShareAcknowledge(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.Version = req.Version
	if code := b.checkShareRequest(c, req.GroupID, req.MemberID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	group := *req.GroupID
	topics := map[[16]byte]int{}
	add := func(id [16]byte, p kmsg.ShareAcknowledgeResponseTopicPartition) {
		i, ok := topics[id]
		if !ok {
			i = len(resp.Topics)
			topics[id] = i
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = id
			resp.Topics = append(resp.Topics, t)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	var parts []sharepartition.PartitionRequest
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k, code := b.shareKey(c, group, t.TopicID, p.Partition)
			if code != 0 {
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				add(t.TopicID, rp)
				continue
			}
			pr := sharepartition.PartitionRequest{Key: k}
			for _, a := range p.AcknowledgementBatches {
				pr.Acks = append(pr.Acks, sharepartition.Ack{First: a.FirstOffset, Last: a.LastOffset, Types: a.AcknowledgeTypes})
			}
			parts = append(parts, pr)
		}
	}
	results, err := b.cfg.ShareParts.Acknowledge(ctx, group, *req.MemberID, req.ShareSessionEpoch, parts)
	if err != nil {
		resp.ErrorCode = b.errCode(err, "share acknowledge")
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(b.cfg.ShareParts.GroupConfig(group).LockDuration / time.Millisecond)
	for _, r := range results {
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition = r.Partition
		if r.AckErr != nil {
			rp.ErrorCode = b.errCode(r.AckErr, "share acknowledge")
		}
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.cfg.NodeID, r.LeaderEpoch
		add(r.TopicID, rp)
	}
	return resp, nil
}
