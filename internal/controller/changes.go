package controller

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

type partitionKey struct {
	topic metadata.Uuid
	part  int32
}

// changes accumulates the broker and partition changes of one decision over
// an image, so each step sees the previous ones (two brokers fenced in one
// batch, a fence followed by a rebalance). records turns the difference
// with the image into one batch: at most one record per broker and per
// partition, so each partition's epochs move once per decision.
type changes struct {
	img         *metadata.Image
	brokers     map[int32]metadata.BrokerImage
	brokerOrder []int32
	parts       map[partitionKey]*metadata.PartitionImage
	partOrder   []partitionKey
	topicOf     map[*metadata.PartitionImage]string
	// unclean reports whether a topic's unclean.leader.election.enable
	// is on (Controller.uncleanEnabled); nil: never.
	unclean func(topic string) bool
	// elr: eligible.leader.replicas.version is 1 or more (KIP-966).
	// minISR is a topic's effective min.insync.replicas, at most its
	// replication factor rf (Controller.minISR).
	elr    bool
	minISR func(topic string, rf int) int
}

func newChanges(img *metadata.Image) *changes {
	return &changes{img: img, brokers: map[int32]metadata.BrokerImage{}, parts: map[partitionKey]*metadata.PartitionImage{},
		topicOf: map[*metadata.PartitionImage]string{}}
}

// changes starts the changes of a decision over img, electing unclean
// leaders where the topic's configs allow it.
func (c *Controller) changes(img *metadata.Image) *changes {
	ch := newChanges(img)
	ch.unclean = c.uncleanEnabled(img)
	ch.elr = img.Features()[metadata.ELRVersionFeature] >= 1
	ch.minISR = c.minISR(img)
	return ch
}

func (c *changes) broker(id int32) (metadata.BrokerImage, bool) {
	if b, ok := c.brokers[id]; ok {
		return b, true
	}
	return c.img.Broker(id)
}

func (c *changes) setBroker(b metadata.BrokerImage) {
	if _, ok := c.brokers[b.ID]; !ok {
		c.brokerOrder = append(c.brokerOrder, b.ID)
	}
	c.brokers[b.ID] = b
}

// eligible reports whether a broker may lead or be added to an ISR:
// registered, unfenced and not in controlled shutdown.
func (c *changes) eligible(id int32) bool {
	b, ok := c.broker(id)
	return ok && b.Eligible()
}

// partition returns the pending state of a partition, for writing. Callers
// replace ISR and Replicas slices rather than modify them: they may still be
// shared with the image.
func (c *changes) partition(t *metadata.TopicImage, part int32) *metadata.PartitionImage {
	k := partitionKey{t.ID, part}
	if p, ok := c.parts[k]; ok {
		return p
	}
	p := t.Partitions[part]
	c.parts[k] = &p
	c.partOrder = append(c.partOrder, k)
	c.topicOf[&p] = t.Name
	return &p
}

// electLeader is Kafka's election of a partition's leader (its
// PartitionChangeBuilder with ELR, KIP-966): the first replica, in
// Replicas order, that is in the ISR and eligible; if the ISR is empty,
// the first eligible member of the ELR, which becomes the ISR on its own;
// if the ELR is empty too, the last known leader once it is eligible
// again. Failing those, if the topic allows it
// (unclean.leader.election.enable), the first eligible replica, with the
// ISR reset to it and the ELR cleared: records only the others had may be
// lost, as Kafka's unclean election loses them. -1 if there is none.
func (c *changes) electLeader(p *metadata.PartitionImage) int32 {
	return c.elect(p, c.unclean != nil && c.unclean(c.topicOf[p]), -1)
}

// elect is electLeader with the unclean choice given, and a broker that
// may not lead (one shutting down uncleanly; -1 none).
func (c *changes) elect(p *metadata.PartitionImage, unclean bool, barred int32) int32 {
	ok := func(r int32) bool { return r != barred && c.eligible(r) }
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) && ok(r) {
			return r
		}
	}
	if c.elr && len(p.ISR) == 0 {
		for _, r := range p.Replicas {
			if slices.Contains(p.ELR, r) && ok(r) {
				p.ISR = []int32{r}
				p.ELR = without(p.ELR, r)
				return r
			}
		}
		if len(p.ELR) == 0 && len(p.LastKnownELR) == 1 && ok(p.LastKnownELR[0]) {
			r := p.LastKnownELR[0]
			p.ISR = []int32{r}
			return r
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if ok(r) {
				p.ISR, p.ELR = []int32{r}, nil
				return r
			}
		}
	}
	return -1
}

// settle finishes a change of partition p from before (its state when
// the change began; p already holds the new ISR) as Kafka's
// PartitionChangeBuilder does with eligible leader replicas: while the
// ISR is below the topic's min.insync.replicas, the replicas that leave
// it join the ELR (they hold every committed record, since the high
// watermark cannot move then), and barred (a broker that shut down
// uncleanly; -1 none) leaves it; at min.insync.replicas or above the ELR
// is cleared. Then a leader is elected if the current one may no longer
// lead, and LastKnownELR keeps the last leader of a partition whose ISR
// emptied. Without ELR the ISR never empties (its last member stays) and
// both lists are cleared.
func (c *changes) settle(p *metadata.PartitionImage, before metadata.PartitionImage, barred int32) {
	if !c.elr {
		if len(p.ISR) == 0 {
			p.ISR = before.ISR
		}
		if p.Leader == -1 || !slices.Contains(p.ISR, p.Leader) || !c.eligible(p.Leader) {
			p.Leader = c.electLeader(p)
		}
		p.ELR, p.LastKnownELR = nil, nil
		return
	}
	c.populateELR(p, before, barred)
	if p.Leader == -1 || p.Leader == barred || !slices.Contains(p.ISR, p.Leader) || !c.eligible(p.Leader) {
		p.Leader = c.elect(p, c.unclean != nil && c.unclean(c.topicOf[p]), barred)
	}
	c.lastKnownLeader(p, before)
}

// populateELR updates p's ELR for its new ISR (see settle).
func (c *changes) populateELR(p *metadata.PartitionImage, before metadata.PartitionImage, barred int32) {
	if !c.elr {
		p.ELR, p.LastKnownELR = nil, nil
		return
	}
	if len(p.ISR) >= c.minISR(c.topicOf[p], len(p.Replicas)) {
		p.ELR = nil
		return
	}
	var elr []int32
	for _, r := range append(slices.Clone(before.ELR), before.ISR...) {
		if r != barred && !slices.Contains(p.ISR, r) && !slices.Contains(elr, r) {
			elr = append(elr, r)
		}
	}
	slices.Sort(elr)
	p.ELR = elr
}

// lastKnownLeader records the leader of a partition whose ISR just
// emptied in LastKnownELR, and clears it once the partition has a leader
// (Kafka's maybeUpdateLastKnownLeader).
func (c *changes) lastKnownLeader(p *metadata.PartitionImage, before metadata.PartitionImage) {
	if !c.elr {
		return
	}
	switch {
	case len(p.ISR) == 0 && len(before.ISR) > 0 && before.Leader >= 0 &&
		!(len(before.LastKnownELR) == 1 && before.LastKnownELR[0] == before.Leader):
		p.LastKnownELR = []int32{before.Leader}
	case p.Leader >= 0 && len(before.LastKnownELR) > 0:
		p.LastKnownELR = nil
	}
}

// without returns a copy of s without r.
func without(s []int32, r int32) []int32 {
	return slices.DeleteFunc(slices.Clone(s), func(x int32) bool { return x == r })
}

// fence fences broker id and takes it out of its partitions (Kafka's
// handleBrokerFenced): leaderships move to another eligible ISR member
// (or ELR member) or become -1, and it leaves every ISR (see settle).
func (c *changes) fence(id int32) {
	if b, ok := c.broker(id); ok && !b.Fenced {
		b.Fenced = true
		c.setBroker(b)
	}
	c.evict(id)
}

// unfence unfences broker id and elects a leader where a partition it is
// a replica of has none: it, or another eligible member of the ISR (or
// of the ELR when the ISR is empty).
func (c *changes) unfence(id int32) {
	if b, ok := c.broker(id); ok && b.Fenced {
		b.Fenced = false
		c.setBroker(b)
	}
	for _, ref := range c.img.PartitionsWithReplica(id) {
		p := c.partition(ref.Topic, ref.Partition.Partition)
		if p.Leader == -1 {
			c.settle(p, *p, -1)
		}
	}
}

// shutdown puts broker id in controlled shutdown (Kafka's
// handleBrokerInControlledShutdown): its leaderships move to other
// eligible ISR members, or to no leader where it is the last one (the
// partition is offline until it returns, as it would be once the process
// exits), and it leaves the ISRs. It then leads nothing, so the heartbeat
// answers ShouldShutdown.
func (c *changes) shutdown(id int32) {
	if b, ok := c.broker(id); ok && !b.InControlledShutdown {
		b.InControlledShutdown = true
		c.setBroker(b)
	}
	c.evict(id)
}

// evict moves leadership away from a broker that is no longer eligible
// and removes it from the ISRs it is in (see settle).
func (c *changes) evict(id int32) {
	for _, ref := range c.img.PartitionsWithReplica(id) {
		p := c.partition(ref.Topic, ref.Partition.Partition)
		if p.Leader != id && !slices.Contains(p.ISR, id) {
			continue
		}
		before := *p
		p.ISR = without(p.ISR, id)
		c.settle(p, before, -1)
	}
}

// uncleanShutdown takes broker id, registering again after a shutdown
// that was not clean (Kafka's handleBrokerUncleanShutdown, KIP-966), out
// of every ISR and ELR: its log may have lost a suffix, so it may only
// lead again after catching up or by an unclean election.
func (c *changes) uncleanShutdown(id int32) {
	for _, ref := range c.img.PartitionsWithReplica(id) {
		p := c.partition(ref.Topic, ref.Partition.Partition)
		if !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
			continue
		}
		before := *p
		p.ISR = without(p.ISR, id)
		c.settle(p, before, id)
	}
}

// preferred moves leadership to the partition's preferred (first) replica
// if it is eligible and in sync. It reports whether an election was
// needed and possible (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE).
func (c *changes) preferred(t *metadata.TopicImage, part int32) (needed, possible bool) {
	p := c.partition(t, part)
	if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] {
		return false, false
	}
	pref := p.Replicas[0]
	if !slices.Contains(p.ISR, pref) || !c.eligible(pref) {
		return true, false
	}
	p.Leader = pref
	return true, true
}

// records returns the batch that turns the image into the pending state.
func (c *changes) records() []metadata.Record {
	var recs []metadata.Record
	for _, id := range c.brokerOrder {
		b := c.brokers[id]
		old, _ := c.img.Broker(id)
		r := &metadata.BrokerRegistrationChangeRecord{BrokerID: id, BrokerEpoch: old.Epoch}
		if b.Fenced != old.Fenced {
			r.Fenced = &b.Fenced
		}
		if b.InControlledShutdown != old.InControlledShutdown {
			r.InControlledShutdown = &b.InControlledShutdown
		}
		if r.Fenced != nil || r.InControlledShutdown != nil {
			recs = append(recs, r)
		}
	}
	for _, k := range c.partOrder {
		p := c.parts[k]
		t, _ := c.img.TopicByID(k.topic)
		old := t.Partitions[k.part]
		r := &metadata.PartitionChangeRecord{TopicID: k.topic, PartitionID: k.part}
		changed := false
		if p.Leader != old.Leader {
			leader := p.Leader
			r.Leader, changed = &leader, true
		}
		if !slices.Equal(p.ISR, old.ISR) {
			r.ISR, changed = slices.Clone(p.ISR), true
		}
		if !slices.Equal(p.Replicas, old.Replicas) {
			r.Replicas, changed = slices.Clone(p.Replicas), true
		}
		// Non-nil even when empty: an empty list clears the field.
		if !slices.Equal(p.AddingReplicas, old.AddingReplicas) {
			r.AddingReplicas, changed = append([]int32{}, p.AddingReplicas...), true
		}
		if !slices.Equal(p.RemovingReplicas, old.RemovingReplicas) {
			r.RemovingReplicas, changed = append([]int32{}, p.RemovingReplicas...), true
		}
		if !slices.Equal(p.ELR, old.ELR) {
			r.EligibleLeaderReplicas, changed = append([]int32{}, p.ELR...), true
		}
		if !slices.Equal(p.LastKnownELR, old.LastKnownELR) {
			r.LastKnownElr, changed = append([]int32{}, p.LastKnownELR...), true
		}
		if changed {
			recs = append(recs, r)
		}
	}
	return recs
}

// uncleanEnabled answers, over img, whether a topic's effective
// unclean.leader.election.enable is true, looked up as Kafka's
// ConfigurationControlManager does: the topic's own config, the
// cluster-wide broker default, this controller's dynamic broker config,
// then its static config.
func (c *Controller) uncleanEnabled(img *metadata.Image) func(topic string) bool {
	const key = "unclean.leader.election.enable"
	cluster := img.Configs(int8(kmsg.ConfigResourceTypeBroker), "")
	node := img.Configs(int8(kmsg.ConfigResourceTypeBroker), strconv.Itoa(int(c.cfg.NodeID)))
	return func(topic string) bool {
		for _, cfgs := range []map[string]string{img.Configs(int8(kmsg.ConfigResourceTypeTopic), topic), cluster, node} {
			if v, ok := cfgs[key]; ok {
				return strings.EqualFold(strings.TrimSpace(v), "true")
			}
		}
		return c.cfg.UncleanLeaderElectionEnable
	}
}

// minISR answers, over img, a topic's effective min.insync.replicas as
// Kafka's getTopicEffectiveMinIsr does: looked up like
// unclean.leader.election.enable (uncleanEnabled), and at most the
// replication factor rf.
func (c *Controller) minISR(img *metadata.Image) func(topic string, rf int) int {
	const key = "min.insync.replicas"
	cluster := img.Configs(int8(kmsg.ConfigResourceTypeBroker), "")
	node := img.Configs(int8(kmsg.ConfigResourceTypeBroker), strconv.Itoa(int(c.cfg.NodeID)))
	return func(topic string, rf int) int {
		n := max(c.cfg.MinInsyncReplicas, 1)
		for _, cfgs := range []map[string]string{img.Configs(int8(kmsg.ConfigResourceTypeTopic), topic), cluster, node} {
			if v, ok := cfgs[key]; ok {
				if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					n = i
				}
				break
			}
		}
		return min(n, rf)
	}
}
