package broker

// StreamsGroupHeartbeat, versions 0-1 (KIP-1071).
//
// Behavior: The coordinator owns the task assignment of a Kafka Streams
// application: a member joins with epoch 0 and its topology, heartbeats
// with the epoch it was given, revokes active tasks before new ones are
// assigned, and leaves with epoch -1. Internal (repartition and changelog)
// topics the topology needs are created through the controller, with the
// configs the topology sends, as Kafka's AutoTopicCreationManager does;
// until they exist the answer carries status MISSING_INTERNAL_TOPICS and
// no tasks. Without READ on the group: GROUP_AUTHORIZATION_FAILED. A
// topology naming Kafka's internal topics or invalid topic names is
// refused with STREAMS_INVALID_TOPOLOGY; without DESCRIBE on one of its
// topics: TOPIC_AUTHORIZATION_FAILED. Without CREATE on the cluster or on
// each missing internal topic, none is created and the
// MISSING_INTERNAL_TOPICS status says so. While the cluster's streams.version is
// below 1 every heartbeat is answered UNSUPPORTED_VERSION, as Kafka does.
// v1 adds AcceptableRecoveryLag and TopologyDescriptionRequired, which
// Samsa never sets (it stores no topology descriptions).

import (
	"context"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

// StreamsCoordinator is the part of GroupCoordinator that serves streams
// groups.
type StreamsCoordinator interface {
	StreamsGroupHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []kmsg.CreateTopicsRequestTopic)
	StreamsGroupDescribe(ctx context.Context, req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse
}

func handleStreamsGroupHeartbeat(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.StreamsGroupHeartbeatRequest)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp, nil
	}
	if b.cfg.Groups == nil || !b.streamsProtocolEnabled() {
		return fail(kerr.UnsupportedVersion.Code, kerr.UnsupportedVersion.Description)
	}
	z := b.authz(c)
	if !z.group(kmsg.ACLOperationRead, req.Group) {
		return fail(kerr.GroupAuthorizationFailed.Code, "")
	}
	if req.Topology != nil {
		// Kafka checks the topology's topics before the coordinator sees it.
		var required, internal, invalid, denied []string
		for _, s := range req.Topology.Subtopologies {
			required = append(required, s.SourceTopics...)
			required = append(required, s.RepartitionSinkTopics...)
			for _, t := range append(slices.Clone(s.RepartitionSourceTopics), s.StateChangelogTopics...) {
				required = append(required, t.Topic)
			}
		}
		seen := map[string]bool{}
		for _, t := range required {
			if seen[t] {
				continue
			}
			seen[t] = true
			switch {
			case t == offsetsTopic || t == txnStateTopic || t == "__share_group_state":
				internal = append(internal, t)
			case metadata.ValidateTopicName(t) != nil:
				invalid = append(invalid, t)
			case !z.topic(kmsg.ACLOperationDescribe, t):
				denied = append(denied, t)
			}
		}
		switch {
		case len(internal) > 0:
			return fail(kerr.StreamsInvalidTopology.Code, "Use of Kafka internal topics "+strings.Join(internal, ",")+" in a Kafka Streams topology is prohibited.")
		case len(invalid) > 0:
			return fail(kerr.StreamsInvalidTopology.Code, "Topic names "+strings.Join(invalid, ",")+" are not valid topic names.")
		case len(denied) > 0:
			return fail(kerr.TopicAuthorizationFailed.Code, "Unauthorized to DESCRIBE on topics "+strings.Join(denied, ", ")+".")
		}
	}
	clientID := ""
	if id := requestHeader(ctx).ClientID; id != nil {
		clientID = *id
	}
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	resp, create := b.cfg.Groups.StreamsGroupHeartbeat(group.WithClient(ctx, clientID, "/"+host), req)
	resp.Version = req.Version
	if len(create) > 0 {
		var denied []string
		if !z.cluster(kmsg.ACLOperationCreate) {
			for _, t := range create {
				if !z.topic(kmsg.ACLOperationCreate, t.Topic) {
					denied = append(denied, t.Topic)
				}
			}
		}
		if len(denied) == 0 {
			b.createStreamsTopics(forClient(ctx, c), create)
			return resp, nil
		}
		// As Kafka: nothing is created, and the status says why.
		msg := "Unauthorized to CREATE on topics " + strings.Join(denied, ", ") + "."
		i := slices.IndexFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool { return s.StatusCode == 3 })
		if i >= 0 {
			resp.Status[i].StatusDetail += "; " + msg
		} else {
			resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: 3, StatusDetail: msg}) // MISSING_INTERNAL_TOPICS
		}
	}
	return resp, nil
}

// createStreamsTopics asks the controller, in the background, to create a
// streams group's missing internal topics; a topic already being created
// is not asked for again.
func (b *Broker) createStreamsTopics(ctx context.Context, topics []kmsg.CreateTopicsRequestTopic) {
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	create.TimeoutMillis = 30000
	b.creating.Lock()
	for _, t := range topics {
		if b.creating.topics[t.Topic] {
			continue
		}
		if b.creating.topics == nil {
			b.creating.topics = map[string]bool{}
		}
		b.creating.topics[t.Topic] = true
		create.Topics = append(create.Topics, t)
	}
	b.creating.Unlock()
	if len(create.Topics) == 0 {
		return
	}
	b.cfg.Logger.Info("creating streams internal topics", "topics", len(create.Topics))
	b.cfg.Controller.ForwardInBackground(ctx, create, func(r kmsg.Response) {
		resp := r.(*kmsg.CreateTopicsResponse)
		b.creating.Lock()
		for _, ct := range create.Topics {
			delete(b.creating.topics, ct.Topic)
		}
		b.creating.Unlock()
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
				b.cfg.Logger.Warn("creating a streams internal topic failed", "topic", t.Topic, "err", kerr.ErrorForCode(t.ErrorCode))
			}
		}
	})
}

// streamsProtocolEnabled reports whether KIP-1071 groups are on: the
// cluster's finalized streams.version is at least 1.
func (b *Broker) streamsProtocolEnabled() bool {
	return b.cfg.Image().Features()[metadata.StreamsVersionFeature] >= 1
}
