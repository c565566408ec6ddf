package broker

// FindCoordinator, versions 0-6.
//
// Behavior:
//   - Group keys (type 0): the coordinator is the leader of the partition
//     of __consumer_offsets the group id hashes to. The topic is created on
//     the first request, as Kafka does, with offsets.topic.num.partitions
//     and offsets.topic.replication.factor.
//   - Transaction keys (type 1): the leader of the partition of
//     __transaction_state the transactional id hashes to, the topic created
//     on first use with transaction.state.log.num.partitions and
//     transaction.state.log.replication.factor. An empty id is
//     INVALID_REQUEST.
//   - Share keys (type 2, KIP-932, v6+): "groupId:topicId:partition",
//     whose coordinator is the leader of the partition of
//     __share_group_state the key hashes to, the topic created on first
//     use with share.coordinator.state.topic.num.partitions and
//     share.coordinator.state.topic.replication.factor. A malformed key,
//     or a share key before v6, is INVALID_REQUEST. Only brokers look
//     share coordinators up: without CLUSTER_ACTION on the cluster the
//     whole request is refused CLUSTER_AUTHORIZATION_FAILED, as Kafka's
//     AuthHelper throws for it.
//   - v4+ batches keys; earlier versions carry one key.
//   - COORDINATOR_NOT_AVAILABLE while the coordinator partition has no
//     leader, or its leader is fenced or unregistered (this broker
//     included, while it fenced itself: see Metadata).
//   - Authorization (KafkaApis), before anything else: a group key needs
//     DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), a transaction
//     key DESCRIBE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleFindCoordinator(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	resp.Version = req.Version
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	z := b.authz(c)
	shareRefused := req.CoordinatorType == 2 && req.Version >= 6 && !z.cluster(kmsg.ACLOperationClusterAction)
	for _, key := range keys {
		var co kmsg.FindCoordinatorResponseCoordinator
		switch {
		case req.CoordinatorType == 0 && !z.group(kmsg.ACLOperationDescribe, key):
			co = coordinatorError(key, kerr.GroupAuthorizationFailed)
		case req.CoordinatorType == 1 && !z.txnID(kmsg.ACLOperationDescribe, key):
			co = coordinatorError(key, kerr.TransactionalIDAuthorizationFailed)
		case req.CoordinatorType == 2 && req.Version < 6:
			co = coordinatorError(key, kerr.InvalidRequest)
		case shareRefused:
			co = coordinatorError(key, kerr.ClusterAuthorizationFailed)
		default:
			co = b.findCoordinator(ctx, c, req.CoordinatorType, key)
		}
		if req.Version < 4 {
			resp.ErrorCode, resp.ErrorMessage = co.ErrorCode, co.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = co.NodeID, co.Host, co.Port
			return resp, nil
		}
		resp.Coordinators = append(resp.Coordinators, co)
	}
	return resp, nil
}

// coordinatorError is a key's answer refused with err.
func coordinatorError(key string, err *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
	co := kmsg.NewFindCoordinatorResponseCoordinator()
	co.Key, co.NodeID, co.Port, co.ErrorCode = key, -1, -1, err.Code
	return co
}

func (b *Broker) findCoordinator(ctx context.Context, c *network.Conn, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	co := kmsg.NewFindCoordinatorResponseCoordinator()
	co.Key = key
	co.NodeID, co.Port = -1, -1
	fail := func(err *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		co.ErrorCode = err.Code
		if msg != "" {
			co.ErrorMessage = &msg
		}
		return co
	}
	var (
		t   *metadata.TopicImage
		p   int32
		err error
	)
	switch {
	case keyType == 1 && key == "":
		return fail(kerr.InvalidRequest, "a transactional id must not be empty")
	case keyType == 1 && b.cfg.Txns == nil:
		return fail(kerr.CoordinatorNotAvailable, "")
	case keyType == 1:
		t, err = b.ensureTxnTopic(ctx)
		if err == nil {
			p = b.cfg.Txns.PartitionFor(key)
		}
	case keyType == 2:
		if b.cfg.Shares == nil {
			return fail(kerr.CoordinatorNotAvailable, "")
		}
		if p, err = b.cfg.Shares.PartitionForKey(key); err != nil {
			return fail(kerr.InvalidRequest, err.Error())
		}
		t, err = b.EnsureShareStateTopic(ctx)
	case keyType != 0:
		return fail(kerr.InvalidRequest, "unknown coordinator key type")
	case key == "":
		return fail(kerr.InvalidGroupID, "")
	case b.cfg.Groups == nil:
		return fail(kerr.CoordinatorNotAvailable, "")
	default:
		t, err = b.ensureOffsetsTopic(ctx)
		if err == nil {
			p = b.cfg.Groups.PartitionFor(key)
		}
	}
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable, err.Error())
	}
	if int(p) >= len(t.Partitions) || t.Partitions[p].Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	leader, ok := b.brokerAlive(b.cfg.Image(), t.Partitions[p].Leader, b.selfFenced())
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	ep, ok := endpointFor(leader, c.Listener())
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator has no endpoint on listener "+c.Listener())
	}
	co.NodeID, co.Host, co.Port = leader.ID, ep.Host, int32(ep.Port)
	return co
}
