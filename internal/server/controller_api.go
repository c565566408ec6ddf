package server

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/wire"
)

// controllerAPI serves the Kafka requests a controller answers on its
// controller listener: the broker-to-controller APIs (registration,
// heartbeats, AlterPartition, producer id blocks) and the admin requests
// brokers forward. Every one is decided by the active controller; the
// others answer NOT_CONTROLLER and the sender looks for the leader. It
// also serves the metadata log to observers (metadata_log.go).
type controllerAPI struct {
	ctrl     *controller.Controller
	meta     *metadataLog
	versions *wire.VersionTable
}

// controllerHandlers lists what the controller listener serves.
var controllerHandlers = map[kmsg.Key]struct {
	min, max int16
	fn       func(ctx context.Context, c *controller.Controller, req kmsg.Request) kmsg.Response
}{
	kmsg.CreateTopics: {2, 7, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.CreateTopics(ctx, r.(*kmsg.CreateTopicsRequest))
	}},
	kmsg.DeleteTopics: {1, 6, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.DeleteTopics(ctx, r.(*kmsg.DeleteTopicsRequest))
	}},
	kmsg.CreatePartitions: {0, 3, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.CreatePartitions(ctx, r.(*kmsg.CreatePartitionsRequest))
	}},
	kmsg.AlterConfigs: {0, 2, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.AlterConfigs(ctx, r.(*kmsg.AlterConfigsRequest))
	}},
	kmsg.IncrementalAlterConfigs: {0, 1, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.IncrementalAlterConfigs(ctx, r.(*kmsg.IncrementalAlterConfigsRequest))
	}},
	kmsg.BrokerRegistration: {0, 4, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.BrokerRegistration(ctx, r.(*kmsg.BrokerRegistrationRequest))
	}},
	kmsg.BrokerHeartbeat: {0, 1, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.BrokerHeartbeat(ctx, r.(*kmsg.BrokerHeartbeatRequest))
	}},
	kmsg.AlterPartition: {2, 3, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.AlterPartition(ctx, r.(*kmsg.AlterPartitionRequest))
	}},
	kmsg.ElectLeaders: {0, 2, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.ElectLeaders(ctx, r.(*kmsg.ElectLeadersRequest))
	}},
	kmsg.AlterPartitionAssignments: {0, 1, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.AlterPartitionReassignments(ctx, r.(*kmsg.AlterPartitionAssignmentsRequest))
	}},
	kmsg.ListPartitionReassignments: {0, 0, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.ListPartitionReassignments(ctx, r.(*kmsg.ListPartitionReassignmentsRequest))
	}},
	kmsg.DescribeQuorum: {0, 2, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		return c.DescribeQuorum(ctx, r.(*kmsg.DescribeQuorumRequest))
	}},
	kmsg.AllocateProducerIDs: {0, 0, func(ctx context.Context, c *controller.Controller, r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.AllocateProducerIDsRequest)
		resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		first, count, err := c.AllocateProducerIDs(ctx, req.BrokerID, req.BrokerEpoch)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return resp
		}
		resp.ProducerIDStart, resp.ProducerIDLen = first, count
		return resp
	}},
}

func newControllerAPI(ctrl *controller.Controller, rn *raft.Node) *controllerAPI {
	ranges := []wire.VersionRange{
		{Key: kmsg.ApiVersions, Min: 0, Max: 4},
		{Key: kmsg.Fetch, Min: fetchMinVersion, Max: fetchMaxVersion},
		{Key: kmsg.FetchSnapshot, Min: fetchSnapshotMinVersion, Max: fetchSnapshotMaxVersion},
	}
	for k, h := range controllerHandlers {
		ranges = append(ranges, wire.VersionRange{Key: k, Min: h.min, Max: h.max})
	}
	return &controllerAPI{ctrl: ctrl, meta: &metadataLog{raft: rn}, versions: wire.NewVersionTable(ranges...)}
}

// Handle implements network.Handler.
func (a *controllerAPI) Handle(ctx context.Context, _ *network.Conn, req wire.Request) (kmsg.Response, error) {
	key := kmsg.Key(req.Header.APIKey)
	if key == kmsg.ApiVersions {
		return a.apiVersions(req), nil
	}
	if req.Body == nil {
		return nil, fmt.Errorf("controller listener: unsupported API %s version %d", kmsg.NameForKey(int16(key)), req.Header.APIVersion)
	}
	var resp kmsg.Response
	switch key {
	case kmsg.Fetch:
		resp = a.meta.fetch(ctx, req.Body.(*kmsg.FetchRequest))
	case kmsg.FetchSnapshot:
		resp = a.meta.fetchSnapshot(ctx, req.Body.(*kmsg.FetchSnapshotRequest))
	default:
		resp = controllerHandlers[key].fn(ctx, a.ctrl, req.Body)
	}
	resp.SetVersion(req.Body.GetVersion())
	return resp, nil
}

func (a *controllerAPI) apiVersions(req wire.Request) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, r := range a.versions.All() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(r.Key), r.Min, r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if req.Body == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp // version 0, so any client can read it
	}
	resp.SetVersion(req.Body.GetVersion())
	return resp
}
