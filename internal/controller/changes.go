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

// electLeader is Kafka's election of a partition's leader: the first
// replica, in Replicas order, that is in the ISR and eligible. If there
// is none and the topic allows it (unclean.leader.election.enable), the
// first eligible replica, with the ISR reset to it: records only the
// others had may be lost, as Kafka's unclean election loses them. -1 if
// there is none.
func (c *changes) electLeader(p *metadata.PartitionImage) int32 {
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) && c.eligible(r) {
			return r
		}
	}
	if c.unclean != nil && c.unclean(c.topicOf[p]) {
		for _, r := range p.Replicas {
			if c.eligible(r) {
				p.ISR = []int32{r}
				return r
			}
		}
	}
	return -1
}

// fence fences broker id and takes it out of its partitions (Kafka's
// handleBrokerFenced): leaderships move to another eligible ISR member or
// become -1, and it leaves every ISR where another member remains (the
// last member stays, so that it can come back as a clean leader).
func (c *changes) fence(id int32) {
	if b, ok := c.broker(id); ok && !b.Fenced {
		b.Fenced = true
		c.setBroker(b)
	}
	c.evict(id)
}

// unfence unfences broker id and elects it (or another eligible ISR
// member) where a partition it is in sync for has no leader.
func (c *changes) unfence(id int32) {
	if b, ok := c.broker(id); ok && b.Fenced {
		b.Fenced = false
		c.setBroker(b)
	}
	for _, ref := range c.img.PartitionsWithReplica(id) {
		p := c.partition(ref.Topic, ref.Partition.Partition)
		if p.Leader == -1 && slices.Contains(p.ISR, id) {
			p.Leader = c.electLeader(p)
		}
	}
}

// shutdown puts broker id in controlled shutdown (Kafka's
// handleBrokerInControlledShutdown): its leaderships move to other
// eligible ISR members, or to no leader where it is the last one (the
// partition is offline until it returns, as it would be once the process
// exits), and it leaves the ISRs where others remain. It then leads
// nothing, so the heartbeat answers ShouldShutdown.
func (c *changes) shutdown(id int32) {
	if b, ok := c.broker(id); ok && !b.InControlledShutdown {
		b.InControlledShutdown = true
		c.setBroker(b)
	}
	c.evict(id)
}

// evict moves leadership away from a broker that is no longer eligible
// (to no leader when no other is eligible) and removes it from
// non-singleton ISRs.
func (c *changes) evict(id int32) {
	for _, ref := range c.img.PartitionsWithReplica(id) {
		p := c.partition(ref.Topic, ref.Partition.Partition)
		if p.Leader == id {
			p.Leader = c.electLeader(p)
		}
		if len(p.ISR) > 1 && slices.Contains(p.ISR, id) {
			p.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
		}
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
