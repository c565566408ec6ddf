// Package sharetest is a share.Persister kept in memory, for tests of
// share groups only: state is lost with the process. Production nodes use
// the share coordinator's persister (internal/coordinator/share).
package sharetest

import (
	"context"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type key struct {
	group     string
	topicID   [16]byte
	partition int32
}

// Batch is one persisted run of records.
type Batch struct {
	First, Last int64
	State       int8
	Deliveries  int16
}

// State is one share partition's persisted state.
type State struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []Batch
}

// Persister is an in-memory share.Persister with the share coordinator's
// answers: reading or writing a partition never initialized is
// UNKNOWN_TOPIC_OR_PARTITION; a write replaces the start offset and
// overlays its batches on the ones kept, dropping those below the start.
type Persister struct {
	mu     sync.Mutex
	states map[key]*State
}

// New returns an empty persister.
func New() *Persister { return &Persister{states: map[key]*State{}} }

// Get returns a copy of a partition's state.
func (p *Persister) Get(group string, topicID [16]byte, partition int32) (State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.states[key{group, topicID, partition}]
	if !ok {
		return State{}, false
	}
	c := *s
	c.Batches = slices.Clone(s.Batches)
	return c, true
}

func (p *Persister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			p.states[key{req.GroupID, t.TopicID, pt.Partition}] = &State{StateEpoch: pt.StateEpoch, StartOffset: pt.StartOffset}
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = pt.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (p *Persister) ReadState(_ context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = pt.Partition
			s, ok := p.states[key{req.GroupID, t.TopicID, pt.Partition}]
			if !ok {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				rp.StateEpoch, rp.StartOffset = s.StateEpoch, s.StartOffset
				for _, b := range s.Batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Deliveries
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (p *Persister) WriteState(_ context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = pt.Partition
			s, ok := p.states[key{req.GroupID, t.TopicID, pt.Partition}]
			if !ok {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				if pt.StartOffset >= 0 {
					s.StartOffset = pt.StartOffset
				}
				s.Batches = overlay(s.Batches, pt.StateBatches, s.StartOffset)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// overlay lays the written batches over the kept ones, offset by offset,
// and keeps what is at or above start.
func overlay(kept []Batch, written []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch, start int64) []Batch {
	type st struct {
		state int8
		deliv int16
	}
	byOff := map[int64]st{}
	for _, b := range kept {
		for o := b.First; o <= b.Last; o++ {
			byOff[o] = st{b.State, b.Deliveries}
		}
	}
	for _, b := range written {
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			byOff[o] = st{b.DeliveryState, b.DeliveryCount}
		}
	}
	var offs []int64
	for o := range byOff {
		if o >= start {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	var out []Batch
	for _, o := range offs {
		s := byOff[o]
		if n := len(out); n > 0 && out[n-1].Last+1 == o && out[n-1].State == s.state && out[n-1].Deliveries == s.deliv {
			out[n-1].Last = o
			continue
		}
		out = append(out, Batch{First: o, Last: o, State: s.state, Deliveries: s.deliv})
	}
	return out
}

func (p *Persister) DeleteState(_ context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			delete(p.states, key{req.GroupID, t.TopicID, pt.Partition})
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = pt.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (p *Persister) ReadStateSummary(_ context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, pt := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = pt.Partition
			s, ok := p.states[key{req.GroupID, t.TopicID, pt.Partition}]
			if !ok {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				rp.StateEpoch, rp.StartOffset = s.StateEpoch, s.StartOffset
				rp.DeliveryCompleteCount = 0
				for _, b := range s.Batches {
					if b.State == 2 || b.State == 4 { // acknowledged, archived
						rp.DeliveryCompleteCount += int32(b.Last - b.First + 1)
					}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
