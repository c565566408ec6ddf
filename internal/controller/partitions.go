package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// AlterPartition applies ISR changes proposed by partition leaders.
// Versions 0-3 (topics by name before v2, by id from v2; v3 names each ISR
// member's broker epoch). Each partition succeeds or fails on its own; all
// accepted changes are written in one batch and answered with the
// partition's new state (an ISR equal to the current one writes nothing and
// answers the current state).
func (c *Controller) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Version = req.Version
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err == nil {
		if b, ok := img.Broker(req.BrokerID); !ok || b.Epoch != req.BrokerEpoch {
			err = wire.Errorf(kerr.StaleBrokerEpoch, "broker %d epoch %d is not the registered one", req.BrokerID, req.BrokerEpoch)
		}
	}
	if err != nil {
		resp.ErrorCode, _ = wire.ErrorCodeAndMessage(err)
		return resp
	}
	ch := c.changes(img)
	type accepted struct {
		ti, pi int
		topic  *metadata.TopicImage
	}
	var ok []accepted
	for ti, t := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		var topic *metadata.TopicImage
		unknown := kerr.UnknownTopicOrPartition
		if req.Version >= 2 {
			topic, _ = img.TopicByID(t.TopicID)
			unknown = kerr.UnknownTopicID
		} else {
			topic, _ = img.Topic(t.Topic)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition, rp.LeaderID = p.Partition, -1
			var perr *kerr.Error
			if topic == nil {
				perr = unknown
			} else {
				perr = c.alterOne(ch, topic, req, &p)
			}
			if perr != nil {
				rp.ErrorCode = perr.Code
			} else {
				ok = append(ok, accepted{ti, len(rt.Partitions), topic})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := c.writeLocked(ctx, ch.records()); err != nil {
		code, _ := wire.ErrorCodeAndMessage(err)
		for _, a := range ok {
			resp.Topics[a.ti].Partitions[a.pi].ErrorCode = code
		}
		return resp
	}
	after := c.cfg.Loader.Image()
	for _, a := range ok {
		rp := &resp.Topics[a.ti].Partitions[a.pi]
		t, _ := after.TopicByID(a.topic.ID)
		p := t.Partitions[rp.Partition]
		rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch, rp.ISR = p.Leader, p.LeaderEpoch, p.PartitionEpoch, slices.Clone(p.ISR)
	}
	return resp
}

// alterOne validates one partition's proposed ISR with Kafka's checks and,
// if valid, stages it in ch.
func (c *Controller) alterOne(ch *changes, topic *metadata.TopicImage, req *kmsg.AlterPartitionRequest, p *kmsg.AlterPartitionRequestTopicPartition) *kerr.Error {
	if p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
		return kerr.UnknownTopicOrPartition
	}
	cur := ch.partition(topic, p.Partition)
	switch {
	case cur.Leader != req.BrokerID:
		return kerr.NotLeaderForPartition
	case p.LeaderEpoch != cur.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case p.PartitionEpoch != cur.PartitionEpoch:
		return kerr.InvalidUpdateVersion
	}
	isr, epochs := p.NewISR, map[int32]int64{}
	if req.Version >= 3 {
		isr = nil
		for _, e := range p.NewEpochISR {
			isr = append(isr, e.BrokerID)
			epochs[e.BrokerID] = e.BrokerEpoch
		}
	}
	seen := map[int32]bool{}
	for _, r := range isr {
		if seen[r] {
			return kerr.InvalidRequest
		}
		seen[r] = true
	}
	if !seen[cur.Leader] {
		return kerr.InvalidRequest
	}
	for _, r := range isr {
		if !slices.Contains(cur.Replicas, r) {
			return kerr.IneligibleReplica
		}
		if r == cur.Leader {
			continue // a leader in controlled shutdown with nobody to hand over to
		}
		b, ok := ch.broker(r)
		if !ok || !b.Eligible() {
			return kerr.IneligibleReplica
		}
		if e, ok := epochs[r]; ok && e != -1 && e != b.Epoch {
			return kerr.IneligibleReplica
		}
	}
	before := *cur
	cur.ISR = slices.Clone(isr)
	// An ISR that now holds every adding replica completes a reassignment.
	ch.completeReassignment(cur)
	ch.populateELR(cur, before, -1)
	ch.lastKnownLeader(cur, before)
	return nil
}

// Election types of ElectLeaders.
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// ElectLeaders runs preferred (type 0) or unclean (type 1) leader elections.
// Versions 0-2. Null topics means every partition; then partitions that need
// no election are left out of the response, as Kafka does.
func (c *Controller) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.Version = req.Version
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err == nil && req.ElectionType != electPreferred && req.ElectionType != electUnclean {
		err = wire.Errorf(kerr.InvalidRequest, "Unknown election type %d", req.ElectionType)
	}
	if err != nil {
		code, msg := wire.ErrorCodeAndMessage(err)
		resp.ErrorCode = code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	all := req.Topics == nil
	topics := req.Topics
	if all {
		for _, t := range img.Topics() {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = t.Name
			for i := range t.Partitions {
				rt.Partitions = append(rt.Partitions, int32(i))
			}
			topics = append(topics, rt)
		}
	}
	ch := c.changes(img)
	var ok [][2]int
	for _, t := range topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		ti, _ := img.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			aerr := c.electOne(ch, ti, p, req.ElectionType)
			if aerr != nil && all && aerr.Code == kerr.ElectionNotNeeded {
				continue
			}
			rp.ErrorCode, rp.ErrorMessage = wire.ErrorCodeAndMessage(errOrNil(aerr))
			if aerr == nil {
				ok = append(ok, [2]int{len(resp.Topics), len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if !all || len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if err := c.writeLocked(ctx, ch.records()); err != nil {
		code, msg := wire.ErrorCodeAndMessage(err)
		for _, i := range ok {
			rp := &resp.Topics[i[0]].Partitions[i[1]]
			rp.ErrorCode, rp.ErrorMessage = code, msg
		}
	}
	return resp
}

func errOrNil(e *wire.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// electOne stages one election in ch.
func (c *Controller) electOne(ch *changes, ti *metadata.TopicImage, part int32, typ int8) *wire.Error {
	if ti == nil || part < 0 || int(part) >= len(ti.Partitions) {
		return &wire.Error{Code: kerr.UnknownTopicOrPartition}
	}
	if typ == electPreferred {
		switch needed, possible := ch.preferred(ti, part); {
		case !needed:
			return wire.Errorf(kerr.ElectionNotNeeded, "Leader election not needed for topic partition.")
		case !possible:
			return wire.Errorf(kerr.PreferredLeaderNotAvailable, "Failed to elect leader for partition %s-%d under strategy PreferredReplicaPartitionLeaderElectionStrategy", ti.Name, part)
		}
		return nil
	}
	// Unclean: only for a partition without a leader; a clean choice
	// still wins, else the first eligible replica with the ISR reset to
	// it (records acknowledged by others may be lost).
	p := ch.partition(ti, part)
	if p.Leader != -1 {
		return wire.Errorf(kerr.ElectionNotNeeded, "Leader election not needed for topic partition.")
	}
	before := *p
	if p.Leader = ch.elect(p, true, -1); p.Leader != -1 {
		ch.lastKnownLeader(p, before)
		return nil
	}
	return wire.Errorf(kerr.EligibleLeadersNotAvailable, "Failed to elect leader for partition %s-%d under strategy OfflinePartitionLeaderElectionStrategy", ti.Name, part)
}

// partitionAPIs are partitions.go's rows of the API table (api.go).
func partitionAPIs() []API {
	return []API{
		api(kmsg.AlterPartition, 2, 3, (*Controller).AlterPartition, nil,
			func(r *kmsg.AlterPartitionResponse) bool {
				if r.ErrorCode == notController {
					return true
				}
				return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 && r.Topics[0].Partitions[0].ErrorCode == notController
			}),
		api(kmsg.ElectLeaders, 0, 2, (*Controller).ElectLeaders,
			func(req *kmsg.ElectLeadersRequest, err error) *kmsg.ElectLeadersResponse {
				r := req.ResponseKind().(*kmsg.ElectLeadersResponse)
				r.ErrorCode = wire.ErrorCode(err)
				return r
			},
			func(r *kmsg.ElectLeadersResponse) bool {
				if r.ErrorCode == notController {
					return true
				}
				return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 && r.Topics[0].Partitions[0].ErrorCode == notController
			}),
	}
}
