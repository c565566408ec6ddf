package broker

// The coordinators and the controller as handlers call them: every call
// that takes a context is time away from the handler (quota.go's
// requestClock), as in Kafka these requests wait in a coordinator's or
// the controller's queue and run on their threads, not the request
// handler's. New wraps Config.Groups, Config.Txns and Config.Controller
// in them. A method added to an interface passes through unmeasured
// until it is written out here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type timedGroups struct{ GroupCoordinator }

func (g timedGroups) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	defer away(ctx)()
	return g.GroupCoordinator.JoinGroup(ctx, req)
}

func (g timedGroups) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	defer away(ctx)()
	return g.GroupCoordinator.SyncGroup(ctx, req)
}

func (g timedGroups) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	defer away(ctx)()
	return g.GroupCoordinator.Heartbeat(ctx, req)
}

func (g timedGroups) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	defer away(ctx)()
	return g.GroupCoordinator.LeaveGroup(ctx, req)
}

func (g timedGroups) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	defer away(ctx)()
	return g.GroupCoordinator.OffsetCommit(ctx, req)
}

func (g timedGroups) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	defer away(ctx)()
	return g.GroupCoordinator.OffsetFetch(ctx, req)
}

func (g timedGroups) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	defer away(ctx)()
	return g.GroupCoordinator.DescribeGroups(ctx, req)
}

func (g timedGroups) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	defer away(ctx)()
	return g.GroupCoordinator.ListGroups(ctx, req)
}

func (g timedGroups) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	defer away(ctx)()
	return g.GroupCoordinator.DeleteGroups(ctx, req)
}

func (g timedGroups) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	defer away(ctx)()
	return g.GroupCoordinator.OffsetDelete(ctx, req)
}

func (g timedGroups) ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	defer away(ctx)()
	return g.GroupCoordinator.ConsumerGroupHeartbeat(ctx, req)
}

func (g timedGroups) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	defer away(ctx)()
	return g.GroupCoordinator.ConsumerGroupDescribe(ctx, req)
}

func (g timedGroups) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	defer away(ctx)()
	return g.GroupCoordinator.TxnOffsetCommit(ctx, req)
}

func (g timedGroups) ShareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	defer away(ctx)()
	return g.GroupCoordinator.ShareGroupHeartbeat(ctx, req)
}

func (g timedGroups) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	defer away(ctx)()
	return g.GroupCoordinator.ShareGroupDescribe(ctx, req)
}

func (g timedGroups) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	defer away(ctx)()
	return g.GroupCoordinator.DescribeShareGroupOffsets(ctx, req)
}

func (g timedGroups) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	defer away(ctx)()
	return g.GroupCoordinator.AlterShareGroupOffsets(ctx, req)
}

func (g timedGroups) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	defer away(ctx)()
	return g.GroupCoordinator.DeleteShareGroupOffsets(ctx, req)
}

type timedTxns struct{ TxnCoordinator }

func (t timedTxns) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	defer away(ctx)()
	return t.TxnCoordinator.InitProducerID(ctx, req)
}

func (t timedTxns) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	defer away(ctx)()
	return t.TxnCoordinator.AddPartitionsToTxn(ctx, req)
}

func (t timedTxns) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	defer away(ctx)()
	return t.TxnCoordinator.AddOffsetsToTxn(ctx, req)
}

func (t timedTxns) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	defer away(ctx)()
	return t.TxnCoordinator.EndTxn(ctx, req)
}

func (t timedTxns) DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	defer away(ctx)()
	return t.TxnCoordinator.DescribeTransactions(ctx, req)
}

func (t timedTxns) ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	defer away(ctx)()
	return t.TxnCoordinator.ListTransactions(ctx, req)
}

type timedController struct{ Controller }

func (c timedController) Forward(ctx context.Context, req kmsg.Request) kmsg.Response {
	defer away(ctx)()
	return c.Controller.Forward(ctx, req)
}

func (c timedController) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (int64, int32, error) {
	defer away(ctx)()
	return c.Controller.AllocateProducerIDs(ctx, brokerID, brokerEpoch)
}

// timed wraps the delegates of cfg; a nil one stays nil.
func (cfg *Config) timed() {
	if cfg.Groups != nil {
		cfg.Groups = timedGroups{cfg.Groups}
	}
	if cfg.Txns != nil {
		cfg.Txns = timedTxns{cfg.Txns}
	}
	if cfg.Controller != nil {
		cfg.Controller = timedController{cfg.Controller}
	}
}

func (g timedGroups) StreamsGroupHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []kmsg.CreateTopicsRequestTopic) {
	defer away(ctx)()
	return g.GroupCoordinator.StreamsGroupHeartbeat(ctx, req)
}

func (g timedGroups) StreamsGroupDescribe(ctx context.Context, req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	defer away(ctx)()
	return g.GroupCoordinator.StreamsGroupDescribe(ctx, req)
}
