package broker

// DescribeShareGroupOffsets, versions 0-1 (KIP-932).
//
// Behavior: each group's share-partition start offsets (and, v1, the lag:
// records past the start offset not yet delivered to completion), read
// from the share coordinator by the group coordinator. Without DESCRIBE on
// the group: GROUP_AUTHORIZATION_FAILED for it; a topic without DESCRIBE
// is TOPIC_AUTHORIZATION_FAILED for its partitions. While share groups
// are off every group is UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeShareGroupOffsets(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.Version = req.Version
	z := b.authz(c)
	for _, rg := range req.Groups {
		dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		dg.GroupID = rg.GroupID
		switch {
		case !b.shareGroupsEnabled():
			dg.ErrorCode = kerr.UnsupportedVersion.Code
		case !z.group(kmsg.ACLOperationDescribe, rg.GroupID):
			dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			sub := rg
			var denied []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
			if rg.Topics != nil {
				sub.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
				for _, t := range rg.Topics {
					if z.topic(kmsg.ACLOperationDescribe, t.Topic) {
						sub.Topics = append(sub.Topics, t)
					} else {
						denied = append(denied, t)
					}
				}
			}
			one := &kmsg.DescribeShareGroupOffsetsRequest{Version: req.Version, Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{sub}}
			dg = b.cfg.Groups.DescribeShareGroupOffsets(ctx, one).Groups[0]
			if rg.Topics == nil && dg.ErrorCode == 0 {
				// Every topic: show only those the client may describe.
				kept := dg.Topics[:0]
				for _, t := range dg.Topics {
					if z.topic(kmsg.ACLOperationDescribe, t.Topic) {
						kept = append(kept, t)
					}
				}
				dg.Topics = kept
			}
			for _, t := range denied {
				dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				dt.Topic = t.Topic
				for _, p := range t.Partitions {
					dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					dp.Partition, dp.StartOffset, dp.LeaderEpoch, dp.Lag = p, -1, -1, -1
					dp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					dt.Partitions = append(dt.Partitions, dp)
				}
				dg.Topics = append(dg.Topics, dt)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
