package broker

// StreamsGroupTopologyDescriptionUpdate, version 0 (KIP-1331).
//
// Behavior: A streams member sends its full topology description when a
// heartbeat answered TopologyDescriptionRequired, which a Kafka broker only
// does with a topology description plugin
// (group.streams.topology.description.plugin.class). Samsa has no such
// plugin, like a Kafka broker at its default (no plugin): every request is
// answered UNSUPPORTED_VERSION with Kafka's message (after the READ check on
// the group: GROUP_AUTHORIZATION_FAILED), and heartbeats never ask for a
// description. While streams.version is below 1 the answer is
// UNSUPPORTED_VERSION too.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleStreamsGroupTopologyDescriptionUpdate(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	if b.streamsProtocolEnabled() && !b.authz(c).group(kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if b.streamsProtocolEnabled() {
		resp.ErrorMessage = kmsg.StringPtr("The broker has no streams group topology description plugin configured.")
	} else {
		resp.ErrorMessage = kmsg.StringPtr(kerr.UnsupportedVersion.Description)
	}
	return resp, nil
}
