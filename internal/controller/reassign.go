package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// Partition reassignment (KIP-455). While a partition moves, Replicas is
// the target followed by the original replicas that leave, AddingReplicas
// are the targets that must catch up and RemovingReplicas the replicas that
// leave. Brokers host every replica in Replicas, so the new ones copy the
// log by ordinary replication; once the leader has added all of them to the
// ISR (AlterPartition), the controller completes the move in the same
// batch: Replicas = target, ISR = ISR ∩ target, and a new leader when the
// current one is leaving.

// AlterPartitionReassignments starts, changes or cancels (null replicas)
// reassignments. Versions 0-1 (v1: AllowReplicationFactorChange). Each
// partition succeeds or fails on its own; the accepted ones are written in
// one batch. Data moves by replication: a broker starts hosting a new
// replica when the published Replicas include it, and drops a removed one
// when they no longer do (KIP-455).
func (c *Controller) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	resp.Version = req.Version
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange || req.Version < 1
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.ErrorCodeAndMessage(err)
		return resp
	}
	ch := c.changes(img)
	var ok [][2]int
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		ti, _ := img.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			aerr := c.reassignOne(ch, ti, p.Partition, p.Replicas, resp.AllowReplicationFactorChange)
			rp.ErrorCode, rp.ErrorMessage = wire.ErrorCodeAndMessage(errOrNil(aerr))
			if aerr == nil {
				ok = append(ok, [2]int{len(resp.Topics), len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
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

// reassignOne stages the start, change (target non-nil) or cancellation
// (target nil) of one partition's reassignment in ch.
func (c *Controller) reassignOne(ch *changes, ti *metadata.TopicImage, part int32, target []int32, allowRFChange bool) *wire.Error {
	if ti == nil || part < 0 || int(part) >= len(ti.Partitions) {
		return &wire.Error{Code: kerr.UnknownTopicOrPartition}
	}
	p := ch.partition(ti, part)
	if target == nil {
		if !p.Reassigning() {
			return wire.Errorf(kerr.NoReassignmentInProgress, "no reassignment of %s-%d is in progress", ti.Name, part)
		}
		return ch.cancelReassignment(ti, p)
	}
	if err := ch.validateTarget(p, target); err != nil {
		return err
	}
	orig := originalReplicas(p)
	if !allowRFChange && len(target) != len(orig) {
		return wire.Errorf(kerr.InvalidReplicationFactor, "the replication factor of %s-%d would change from %d to %d", ti.Name, part, len(orig), len(target))
	}
	if !p.Reassigning() && slices.Equal(target, p.Replicas) {
		return nil // already there: Kafka answers success and writes nothing
	}
	replicas := slices.Clone(target)
	var removing []int32
	for _, r := range p.Replicas {
		if !slices.Contains(target, r) {
			replicas = append(replicas, r)
			removing = append(removing, r)
		}
	}
	var adding []int32
	for _, r := range target {
		if !slices.Contains(orig, r) {
			adding = append(adding, r)
		}
	}
	p.Replicas, p.AddingReplicas, p.RemovingReplicas = replicas, adding, removing
	ch.completeReassignment(p)
	return nil
}

// originalReplicas are the replicas before a reassignment: Replicas
// without the ones being added.
func originalReplicas(p *metadata.PartitionImage) []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
}

// validateTarget applies Kafka's checks of a manual assignment: not
// empty, no duplicates, registered brokers. New replicas must also be
// unfenced (a fenced broker would never catch up, so the move would hang).
func (ch *changes) validateTarget(p *metadata.PartitionImage, target []int32) *wire.Error {
	if len(target) == 0 {
		return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", r)
		}
		b, ok := ch.broker(r)
		if !ok {
			return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		if b.Fenced && !slices.Contains(originalReplicas(p), r) {
			return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, which is fenced.", r)
		}
	}
	return nil
}

// cancelReassignment reverts p to its original replicas (Kafka's
// PartitionReassignmentRevert): the adding replicas leave Replicas and the
// ISR; if that would empty the ISR, the cancellation is refused unless the
// topic allows unclean election, since only that could give the partition
// a leader.
func (ch *changes) cancelReassignment(ti *metadata.TopicImage, p *metadata.PartitionImage) *wire.Error {
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
	if len(isr) == 0 && (ch.unclean == nil || !ch.unclean(ti.Name)) {
		return wire.Errorf(kerr.InvalidReplicaAssignment, "Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", ti.Name, p.Partition)
	}
	p.Replicas, p.ISR = originalReplicas(p), isr
	p.AddingReplicas, p.RemovingReplicas = nil, nil
	ch.reelect(p)
	return nil
}

// completeReassignment finishes p's reassignment once every target
// replica is in the ISR (Kafka's maybeCompleteReassignment: a replica that
// stays but lags holds the move up as much as one being added); it is
// called wherever the ISR grows. The removing replicas leave Replicas and
// the ISR, unless no ISR member would remain.
func (ch *changes) completeReassignment(p *metadata.PartitionImage) {
	if !p.Reassigning() {
		return
	}
	leaving := func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) }
	isr := slices.DeleteFunc(slices.Clone(p.ISR), leaving)
	target := slices.DeleteFunc(slices.Clone(p.Replicas), leaving)
	if len(isr) == 0 || len(target) == 0 {
		return
	}
	for _, r := range target {
		if !slices.Contains(isr, r) {
			return
		}
	}
	p.Replicas = target
	p.ISR = isr
	p.AddingReplicas, p.RemovingReplicas = nil, nil
	ch.reelect(p)
}

// reelect elects a new leader when the current one has left the ISR or is
// no longer eligible; otherwise leadership stays where it is.
func (ch *changes) reelect(p *metadata.PartitionImage) {
	if p.Leader != -1 && slices.Contains(p.ISR, p.Leader) && ch.eligible(p.Leader) {
		return
	}
	before := *p
	p.Leader = ch.electLeader(p)
	ch.lastKnownLeader(p, before)
}

// ListPartitionReassignments lists the reassignments in progress. Version
// 0. Null topics lists all; unknown topics and partitions that are not
// moving are left out, as Kafka does.
func (c *Controller) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.Version = req.Version
	c.mu.Lock()
	img, err := c.beginLocked(ctx)
	c.mu.Unlock()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.ErrorCodeAndMessage(err)
		return resp
	}
	add := func(ti *metadata.TopicImage, parts []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = ti.Name
		for _, i := range parts {
			if i < 0 || int(i) >= len(ti.Partitions) || !ti.Partitions[i].Reassigning() {
				continue
			}
			p := &ti.Partitions[i]
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = i
			rp.Replicas = slices.Clone(p.Replicas)
			rp.AddingReplicas = append([]int32{}, p.AddingReplicas...)
			rp.RemovingReplicas = append([]int32{}, p.RemovingReplicas...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if req.Topics == nil {
		for _, ti := range img.Topics() {
			all := make([]int32, len(ti.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			add(ti, all)
		}
		return resp
	}
	for _, t := range req.Topics {
		if ti, ok := img.Topic(t.Topic); ok {
			add(ti, t.Partitions)
		}
	}
	return resp
}

// reassignAPIs are reassign.go's rows of the API table (api.go).
func reassignAPIs() []API {
	return []API{
		api(kmsg.AlterPartitionAssignments, 0, 1, (*Controller).AlterPartitionReassignments,
			func(req *kmsg.AlterPartitionAssignmentsRequest, err error) *kmsg.AlterPartitionAssignmentsResponse {
				r := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
				r.ErrorCode, r.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
				return r
			},
			func(r *kmsg.AlterPartitionAssignmentsResponse) bool { return r.ErrorCode == notController }),
		api(kmsg.ListPartitionReassignments, 0, 0, (*Controller).ListPartitionReassignments,
			func(req *kmsg.ListPartitionReassignmentsRequest, err error) *kmsg.ListPartitionReassignmentsResponse {
				r := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
				r.ErrorCode, r.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
				return r
			},
			func(r *kmsg.ListPartitionReassignmentsResponse) bool { return r.ErrorCode == notController }),
	}
}
