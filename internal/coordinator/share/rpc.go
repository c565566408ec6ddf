package share

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// The five share-group state RPCs as the coordinator of their keys serves
// them (Kafka's ShareCoordinatorService). Each share partition of a
// request is an operation of its own on the shard that holds it; a key
// whose partition of __share_group_state is not loaded here answers
// NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
//
// As in Kafka, a request with an empty group id, no topics, or a topic
// with no partitions is answered with no results at all.

// dedupe merges the topics of a request that have the same id and drops
// repeated partitions: Kafka's coordinator keys its answers by topic and
// partition, so each is answered once (in order of first appearance
// here).
func dedupe[T, P any](topics []T, id func(*T) [16]byte, parts func(*T) *[]P, part func(*P) int32) []T {
	var out []T
	at := map[[16]byte]int{}
	seen := map[[16]byte]map[int32]bool{}
	for _, t := range topics {
		tid := id(&t)
		i, ok := at[tid]
		if !ok {
			nt := t
			*parts(&nt) = nil
			out = append(out, nt)
			i = len(out) - 1
			at[tid] = i
			seen[tid] = map[int32]bool{}
		}
		for _, p := range *parts(&t) {
			if n := part(&p); !seen[tid][n] {
				seen[tid][n] = true
				*parts(&out[i]) = append(*parts(&out[i]), p)
			}
		}
	}
	return out
}

// each runs fn for every (topic, partition) index pair of a request
// concurrently and waits; counts[i] is the partition count of topic i.
func each(counts []int, fn func(t, p int)) {
	var wg sync.WaitGroup
	for t, n := range counts {
		for p := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(t, p)
			}()
		}
	}
	wg.Wait()
}

// malformed reports whether a request is answered with no results.
func malformed(group string, counts []int) bool {
	if group == "" || len(counts) == 0 {
		return true
	}
	for _, n := range counts {
		if n == 0 {
			return true
		}
	}
	return false
}

// InitializeState serves InitializeShareGroupState.
func (c *Coordinator) InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	dup := *req
	req = &dup
	req.Topics = dedupe(req.Topics, func(t *kmsg.InitializeShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t *kmsg.InitializeShareGroupStateRequestTopic) *[]kmsg.InitializeShareGroupStateRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.InitializeShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.InitializeShareGroupStateResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	if malformed(req.GroupID, counts) {
		resp.Topics = nil
		return resp
	}
	each(counts, func(ti, pi int) {
		t, p := req.Topics[ti], req.Topics[ti].Partitions[pi]
		k := Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		res := c.op(ctx, k, func(s *shard) (*coordinator.KV, result) {
			return s.decideInitialize(k, p.StateEpoch, p.StartOffset)
		})
		rp := &resp.Topics[ti].Partitions[pi]
		rp.Default()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res.code, res.msg
	})
	return resp
}

// ReadState serves ReadShareGroupState.
func (c *Coordinator) ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	dup := *req
	req = &dup
	req.Topics = dedupe(req.Topics, func(t *kmsg.ReadShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t *kmsg.ReadShareGroupStateRequestTopic) *[]kmsg.ReadShareGroupStateRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.ReadShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.ReadShareGroupStateResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	if malformed(req.GroupID, counts) {
		resp.Topics = nil
		return resp
	}
	each(counts, func(ti, pi int) {
		t, p := req.Topics[ti], req.Topics[ti].Partitions[pi]
		k := Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		res := c.op(ctx, k, func(s *shard) (*coordinator.KV, result) { return s.decideRead(k, p.LeaderEpoch) })
		rp := &resp.Topics[ti].Partitions[pi]
		rp.Default()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res.code, res.msg
		if res.code == 0 && res.v != nil {
			rp.StartOffset, rp.StateEpoch = res.v.StartOffset, res.v.StateEpoch
			for _, b := range res.v.Batches {
				rb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
				rb.FirstOffset, rb.LastOffset, rb.DeliveryState, rb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
				rp.StateBatches = append(rp.StateBatches, rb)
			}
		}
	})
	return resp
}

// WriteState serves WriteShareGroupState.
func (c *Coordinator) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	dup := *req
	req = &dup
	req.Topics = dedupe(req.Topics, func(t *kmsg.WriteShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t *kmsg.WriteShareGroupStateRequestTopic) *[]kmsg.WriteShareGroupStateRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.WriteShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.WriteShareGroupStateResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	if malformed(req.GroupID, counts) {
		resp.Topics = nil
		return resp
	}
	each(counts, func(ti, pi int) {
		t, p := req.Topics[ti], req.Topics[ti].Partitions[pi]
		k := Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		w := stateWrite{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, DeliveryCompleteCount: p.DeliveryCompleteCount}
		if req.Version < 1 {
			w.DeliveryCompleteCount = -1 // not in v0
		}
		for _, b := range p.StateBatches {
			w.Batches = append(w.Batches, Batch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
		}
		res := c.op(ctx, k, func(s *shard) (*coordinator.KV, result) { return s.decideWrite(k, w) })
		rp := &resp.Topics[ti].Partitions[pi]
		rp.Default()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res.code, res.msg
	})
	return resp
}

// DeleteState serves DeleteShareGroupState.
func (c *Coordinator) DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	dup := *req
	req = &dup
	req.Topics = dedupe(req.Topics, func(t *kmsg.DeleteShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t *kmsg.DeleteShareGroupStateRequestTopic) *[]kmsg.DeleteShareGroupStateRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.DeleteShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.DeleteShareGroupStateResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	if malformed(req.GroupID, counts) {
		resp.Topics = nil
		return resp
	}
	each(counts, func(ti, pi int) {
		t, p := req.Topics[ti], req.Topics[ti].Partitions[pi]
		k := Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		res := c.op(ctx, k, func(s *shard) (*coordinator.KV, result) { return s.decideDelete(k) })
		rp := &resp.Topics[ti].Partitions[pi]
		rp.Default()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res.code, res.msg
	})
	return resp
}

// ReadStateSummary serves ReadShareGroupStateSummary.
func (c *Coordinator) ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	dup := *req
	req = &dup
	req.Topics = dedupe(req.Topics, func(t *kmsg.ReadShareGroupStateSummaryRequestTopic) [16]byte { return t.TopicID },
		func(t *kmsg.ReadShareGroupStateSummaryRequestTopic) *[]kmsg.ReadShareGroupStateSummaryRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.ReadShareGroupStateSummaryRequestTopicPartition) int32 { return p.Partition })
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.ReadShareGroupStateSummaryResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	if malformed(req.GroupID, counts) {
		resp.Topics = nil
		return resp
	}
	each(counts, func(ti, pi int) {
		t, p := req.Topics[ti], req.Topics[ti].Partitions[pi]
		k := Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		res := c.op(ctx, k, func(s *shard) (*coordinator.KV, result) { return nil, s.readSummary(k) })
		rp := &resp.Topics[ti].Partitions[pi]
		rp.Default()
		rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res.code, res.msg
		if res.code == 0 && res.v != nil {
			rp.StartOffset, rp.StateEpoch, rp.LeaderEpoch = res.v.StartOffset, res.v.StateEpoch, res.v.LeaderEpoch
			rp.DeliveryCompleteCount = res.v.DeliveryCompleteCount
		}
	})
	return resp
}
