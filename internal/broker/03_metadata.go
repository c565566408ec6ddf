package broker

// Metadata, versions 0-13.
//
// Behavior:
//   - Brokers are listed with their endpoint on the listener the request
//     arrived on, so clients reconnect through the same listener.
//   - A null topic list (an empty one at v0) means every topic. Topics can
//     be named, or from v10 given by id.
//   - Unknown topics are created when the request allows it (always before
//     v4) and auto.create.topics.enable is set, with num.partitions and
//     default.replication.factor (the coordinators' internal topics with
//     their own settings). As Kafka's AutoTopicCreationManager does, the
//     creation is sent to the controller in the background, one at a time
//     per topic, and the answer does not wait for it: the topic is
//     UNKNOWN_TOPIC_OR_PARTITION until it exists, and clients retry.
//   - Unknown names get UNKNOWN_TOPIC_OR_PARTITION, illegal names
//     INVALID_TOPIC_EXCEPTION, unknown ids UNKNOWN_TOPIC_ID.
//   - Only registered, unfenced brokers are listed. Each partition names
//     its leader and leader epoch, replicas, ISR and offline replicas
//     (those on fenced or unregistered brokers, or without an endpoint on
//     this listener). A partition without a live leader answers
//     LEADER_NOT_AVAILABLE with leader -1, so clients refresh and retry.
//   - A broker whose session with the controller quorum lapsed (it fenced
//     itself, see Broker.selfFenced) answers as the quorum's image does
//     once the controller fences it: itself unlisted and offline, its
//     partitions LEADER_NOT_AVAILABLE, and controller id -1. Clients then
//     ask another broker and find the leaders the quorum elected, rather
//     than being kept on this one by its stale image.
//   - Authorization (KafkaApis): a topic the client may not DESCRIBE is
//     left out of an all-topics answer, and answers
//     TOPIC_AUTHORIZATION_FAILED when named (without its id) or asked by
//     id (without its name). Auto-creation also needs CREATE on the
//     cluster or on the topic; a missing topic the client may describe
//     but not create answers TOPIC_AUTHORIZATION_FAILED. An unknown id is
//     UNKNOWN_TOPIC_ID before any check.
//   - include_topic_authorized_operations (v8+) fills each described
//     topic's authorized operations; include_cluster_authorized_operations
//     (v8-v10) the cluster's, 0 without DESCRIBE on it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleMetadata(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Version = req.Version

	z := b.authz(c)
	describable := z.topics(kmsg.ACLOperationDescribe)
	img := b.cfg.Image()
	allTopics := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	creatable := func(name string) bool {
		return describable(name) && (z.cluster(kmsg.ACLOperationCreate) || z.topic(kmsg.ACLOperationCreate, name))
	}
	autoCreate := !allTopics && (req.Version < 4 || req.AllowAutoTopicCreation) && b.cfg.Static.AutoCreateTopicsEnable
	var toCreate []string

	resp.ClusterID = &img.ClusterID
	resp.ControllerID = b.controllerID(img)
	live := b.liveness(img, c.Listener())
	for _, br := range img.Brokers() {
		if !live(br.ID) {
			continue
		}
		ep, _ := endpointFor(br, c.Listener())
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID = br.ID
		rb.Host = ep.Host
		rb.Port = int32(ep.Port)
		rb.Rack = br.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = z.clusterAuthorizedOps()
	}
	// described adds a topic the client may describe, with its
	// authorized operations when asked.
	described := func(mt kmsg.MetadataResponseTopic) {
		if req.Version >= 8 && req.IncludeTopicAuthorizedOperations && mt.Topic != nil {
			mt.AuthorizedOperations = z.authorizedOps(kmsg.ACLResourceTypeTopic, *mt.Topic)
		}
		resp.Topics = append(resp.Topics, mt)
	}

	if allTopics {
		for _, t := range img.Topics() {
			if describable(t.Name) {
				described(metadataTopic(t, live))
			}
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		byName := rt.Topic != nil && *rt.Topic != ""
		var t *metadata.TopicImage
		var ok bool
		if byName {
			t, ok = img.Topic(*rt.Topic)
		} else {
			t, ok = img.TopicByID(metadata.Uuid(rt.TopicID))
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		mt.TopicID = rt.TopicID
		switch {
		case !byName && !ok:
			mt.ErrorCode = kerr.UnknownTopicID.Code
		case !byName && !describable(t.Name):
			// Ids are not secret; the name is.
			mt.Topic, mt.ErrorCode = nil, kerr.TopicAuthorizationFailed.Code
		case byName && !describable(*rt.Topic):
			// Whether the topic exists is not told either.
			mt.TopicID, mt.ErrorCode = [16]byte{}, kerr.TopicAuthorizationFailed.Code
		case ok:
			described(metadataTopic(t, live))
			continue
		case autoCreate && metadata.ValidateTopicName(*rt.Topic) == nil && !creatable(*rt.Topic):
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case metadata.ValidateTopicName(*rt.Topic) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
			described(mt)
			continue
		default:
			if autoCreate {
				toCreate = append(toCreate, *rt.Topic)
			}
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			mt.IsInternal = isInternalTopic(*rt.Topic)
			described(mt)
			continue
		}
		resp.Topics = append(resp.Topics, mt)
	}
	// For the client, as Kafka's AutoTopicCreationManager wraps it in
	// the client's Envelope: it counts against its quotas.
	b.autoCreate(forClient(ctx, c), toCreate)
	return resp, nil
}

// autoCreate asks the controller to create topics in the background,
// as Kafka's AutoTopicCreationManager does: a topic already being created
// is not asked for again until the controller answered, and a failure is
// only logged (the client keeps seeing UNKNOWN_TOPIC_OR_PARTITION).
func (b *Broker) autoCreate(ctx context.Context, topics []string) {
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	create.TimeoutMillis = 30000 // Kafka's request.timeout.ms
	var names []string
	b.creating.Lock()
	for _, name := range topics {
		if b.creating.topics[name] {
			continue
		}
		names = append(names, name)
		if b.creating.topics == nil {
			b.creating.topics = map[string]bool{}
		}
		b.creating.topics[name] = true
		create.Topics = append(create.Topics, b.creatableTopic(name))
	}
	b.creating.Unlock()
	if len(create.Topics) == 0 {
		return
	}
	b.cfg.Logger.Info("sent auto-creation request to the active controller", "topics", names)
	b.cfg.Controller.ForwardInBackground(ctx, create, func(r kmsg.Response) {
		resp := r.(*kmsg.CreateTopicsResponse)
		b.creating.Lock()
		for _, ct := range create.Topics {
			delete(b.creating.topics, ct.Topic)
		}
		b.creating.Unlock()
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
				b.cfg.Logger.Warn("auto topic creation failed", "topic", t.Topic, "err", kerr.ErrorForCode(t.ErrorCode))
			}
		}
	})
}

// metadataTopic describes a topic; live tells which brokers clients may be
// sent to.
func metadataTopic(t *metadata.TopicImage, live func(id int32) bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Partition
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = p.Replicas
		mp.ISR = p.ISR
		mp.OfflineReplicas = offlineReplicas(p, live)
		if mp.Leader = liveLeader(p, live); mp.Leader == -1 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// liveLeader is p's leader, or -1 when it has none that clients may be
// sent to.
func liveLeader(p metadata.PartitionImage, live func(id int32) bool) int32 {
	if p.Leader < 0 || !live(p.Leader) {
		return -1
	}
	return p.Leader
}

// offlineReplicas are p's replicas that are not live (never nil).
func offlineReplicas(p metadata.PartitionImage, live func(id int32) bool) []int32 {
	out := []int32{}
	for _, r := range p.Replicas {
		if !live(r) {
			out = append(out, r)
		}
	}
	return out
}

// liveness reports which brokers clients can be sent to: registered,
// unfenced (this one also by its own lapsed session, b.selfFenced) and
// reachable on listener.
func (b *Broker) liveness(img *metadata.Image, listener string) func(id int32) bool {
	selfFenced := b.selfFenced()
	return func(id int32) bool {
		br, ok := b.brokerAlive(img, id, selfFenced)
		if !ok {
			return false
		}
		_, ok = endpointFor(br, listener)
		return ok
	}
}

func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == shareStateTopic
}

// endpointFor finds a broker's endpoint on the named listener.
func endpointFor(br metadata.BrokerImage, listener string) (metadata.Endpoint, bool) {
	return br.Endpoint(listener)
}
