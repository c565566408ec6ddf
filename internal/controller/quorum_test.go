package controller

import (
	"testing"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quorumReq(version int16, topic string, part int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = version
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = topic
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	p.Partition = part
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func TestDescribeQuorumOnSingleVoter(t *testing.T) {
	h := start(t, t.TempDir(), 1)
	resp := h.c.DescribeQuorum(ctx(t), quorumReq(2, MetadataTopic, 0))
	if resp.Version != 2 || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	applied := int64(h.loader.Image().Offset)
	if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != int32(h.node.Term()) || p.HighWatermark < applied {
		t.Fatalf("partition: %+v (applied %d, term %d)", p, applied, h.node.Term())
	}
	if len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
		t.Fatalf("voters %+v observers %+v", p.CurrentVoters, p.Observers)
	}
	v := p.CurrentVoters[0]
	if v.ReplicaID != 1 || v.LogEndOffset != p.HighWatermark || v.LastFetchTimestamp <= 0 || v.LastCaughtUpTimestamp <= 0 {
		t.Fatalf("voter: %+v (hw %d)", v, p.HighWatermark)
	}

	resp = h.c.DescribeQuorum(ctx(t), quorumReq(1, "other", 0))
	if p := resp.Topics[0].Partitions[0]; resp.Topics[0].Topic != "other" || p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("wrong topic: %+v", resp)
	}
	resp = h.c.DescribeQuorum(ctx(t), quorumReq(1, MetadataTopic, 1))
	if p := resp.Topics[0].Partitions[0]; p.Partition != 1 || p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("wrong partition: %+v", resp)
	}
}

func TestDescribeQuorumAfterStopIsNotController(t *testing.T) {
	h := start(t, t.TempDir(), 0)
	h.node.Close()
	p := h.c.DescribeQuorum(ctx(t), quorumReq(0, MetadataTopic, 0)).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotController.Code {
		t.Fatalf("stopped node: %+v", p)
	}
}

// TestDescribeQuorumNodes: v2 names every voter's controller endpoint, as
// kafka-metadata-quorum shows them; v1 has no Nodes.
func TestDescribeQuorumNodes(t *testing.T) {
	voters := map[int32]metadata.Endpoint{
		1: {Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093},
	}
	h := startWith(t, t.TempDir(), 1, func(c *Config) { c.Voters = voters })
	resp := h.c.DescribeQuorum(ctx(t), quorumReq(2, MetadataTopic, 0))
	if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 1 || len(resp.Nodes[0].Listeners) != 1 {
		t.Fatalf("nodes: %+v", resp.Nodes)
	}
	if l := resp.Nodes[0].Listeners[0]; l.Name != "CONTROLLER" || l.Host != "127.0.0.1" || l.Port != 9093 {
		t.Fatalf("listener: %+v", l)
	}
	if resp := h.c.DescribeQuorum(ctx(t), quorumReq(1, MetadataTopic, 0)); len(resp.Nodes) != 0 {
		t.Fatalf("v1 nodes: %+v", resp.Nodes)
	}
}
