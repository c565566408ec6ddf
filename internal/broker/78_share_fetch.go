package broker

// ShareFetch, versions 1-2 (KIP-932).
//
// Behavior:
//   - A share session (group, member) opens with epoch 0 (acknowledgements
//     then are INVALID_REQUEST), continues with the epoch of its previous
//     request plus one (else INVALID_SHARE_SESSION_EPOCH, or
//     SHARE_SESSION_NOT_FOUND without a session) and closes with -1, which
//     releases the member's acquired records; so does closing the
//     connection that opened the session. Topics listed join the
//     session; forgotten ones leave it.
//   - Acknowledgements are applied first (per partition
//     AcknowledgeErrorCode; INVALID_RECORD_STATE for a record the member
//     does not hold), then records are acquired from the session's
//     partitions up to max_records, waiting up to max_wait_ms for some.
//     Each answered partition carries whole batches and the acquired
//     offset ranges with their delivery counts; a client keeps only the
//     acquired records. acquisition_lock_timeout_ms is the group's
//     share.record.lock.duration.ms.
//   - Partitions are read by the leader only (NOT_LEADER_OR_FOLLOWER), by
//     topic id (UNKNOWN_TOPIC_ID). Authorization: READ on the group
//     (GROUP_AUTHORIZATION_FAILED for the request) and on each topic
//     (TOPIC_AUTHORIZATION_FAILED for its partitions).
//   - v2's ShareAcquireMode is served as record-limit mode: at most
//     max_records records are acquired in either mode. A request with
//     IsRenewAck only acknowledges (renew acknowledgements extend the
//     member's locks) and acquires nothing.
//   - While share groups are off every request is UNSUPPORTED_VERSION.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/sharepartition"
)

func handleShareFetch(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := kmsg.NewPtrShareFetchResponse()
	resp.Version = req.Version
	if code := b.checkShareRequest(c, req.GroupID, req.MemberID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	group := *req.GroupID
	sr := &sharepartition.FetchRequest{
		Group: group, Member: *req.MemberID, SessionEpoch: req.ShareSessionEpoch,
		MaxWait: time.Duration(req.MaxWaitMillis) * time.Millisecond, MaxBytes: int(req.MaxBytes), MaxRecords: int(req.MaxRecords),
		Conn:            ctx, // the connection's context: the session closes with it
		AcknowledgeOnly: req.IsRenewAck,
	}
	refused := map[sharepartition.TopicPartition]int16{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			var acks []sharepartition.Ack
			for _, a := range p.AcknowledgementBatches {
				acks = append(acks, sharepartition.Ack{First: a.FirstOffset, Last: a.LastOffset, Types: a.AcknowledgeTypes})
			}
			k, code := b.shareKey(c, group, t.TopicID, p.Partition)
			if code != 0 {
				refused[sharepartition.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}] = code
				continue
			}
			sr.Partitions = append(sr.Partitions, sharepartition.PartitionRequest{Key: k, Acks: acks})
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			sr.Forgotten = append(sr.Forgotten, sharepartition.TopicPartition{TopicID: f.TopicID, Partition: p})
		}
	}
	results, err := b.cfg.ShareParts.Fetch(ctx, sr)
	if err != nil {
		resp.ErrorCode = b.errCode(err, "share fetch")
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(b.cfg.ShareParts.GroupConfig(group).LockDuration / time.Millisecond)
	topics := map[[16]byte]int{}
	add := func(id [16]byte, p kmsg.ShareFetchResponseTopicPartition) {
		if p.Records == nil {
			p.Records = []byte{} // not nullable: the Java client refuses a null record set
		}
		i, ok := topics[id]
		if !ok {
			i = len(resp.Topics)
			topics[id] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = id
			resp.Topics = append(resp.Topics, t)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	for tp, code := range refused {
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition, p.ErrorCode, p.AcknowledgeErrorCode = tp.Partition, code, code
		add(tp.TopicID, p)
	}
	for _, r := range results {
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = r.Partition
		if r.Err != nil {
			p.ErrorCode = b.errCode(r.Err, "share fetch")
		}
		if r.AckErr != nil {
			p.AcknowledgeErrorCode = b.errCode(r.AckErr, "share acknowledge")
		}
		p.Records = r.Records
		for _, a := range r.Acquired {
			p.AcquiredRecords = append(p.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: a.First, LastOffset: a.Last, DeliveryCount: a.Deliveries})
		}
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = b.cfg.NodeID, r.LeaderEpoch
		if p.ErrorCode == kerr.NotLeaderForPartition.Code {
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		}
		add(r.TopicID, p)
	}
	return resp, nil
}

// checkShareRequest is the checks ShareFetch and ShareAcknowledge share:
// share groups on, a group and member named, READ on the group.
func (b *Broker) checkShareRequest(c *network.Conn, groupID, memberID *string) int16 {
	switch {
	case !b.shareGroupsEnabled():
		return kerr.UnsupportedVersion.Code
	case groupID == nil || *groupID == "" || memberID == nil || *memberID == "":
		return kerr.InvalidRequest.Code
	case !b.authz(c).group(kmsg.ACLOperationRead, *groupID):
		return kerr.GroupAuthorizationFailed.Code
	}
	return 0
}

// shareKey names a share partition by its topic's name, or returns the
// error code for a partition that cannot be read: UNKNOWN_TOPIC_ID,
// TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) shareKey(c *network.Conn, group string, id [16]byte, partition int32) (sharepartition.Key, int16) {
	t, ok := b.cfg.Image().TopicByID(metadata.Uuid(id))
	switch {
	case !ok:
		return sharepartition.Key{}, kerr.UnknownTopicID.Code
	case !b.authz(c).topic(kmsg.ACLOperationRead, t.Name):
		return sharepartition.Key{}, kerr.TopicAuthorizationFailed.Code
	case partition < 0 || int(partition) >= len(t.Partitions):
		return sharepartition.Key{}, kerr.UnknownTopicOrPartition.Code
	}
	return sharepartition.Key{Group: group, TopicID: id, Topic: t.Name, Partition: partition}, 0
}

// LeaderPartition is leaderPartition for the share-partition manager,
// which reads share partitions on their leader only.
func (b *Broker) LeaderPartition(topic string, partition int32) (*replica.Partition, error) {
	return b.leaderPartition(topic, partition)
}
