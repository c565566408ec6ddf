package metadata

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Delta says what one applied batch changed between two images.
type Delta struct {
	// Prev is the image before the batch (empty for a full delta).
	Prev *Image
	// Full is set when the delta describes a whole image from empty: a
	// snapshot was restored or a publisher registered late.
	Full bool
	// CreatedTopics are new topics, as in the new image, sorted by name.
	CreatedTopics []*TopicImage
	// DeletedTopics are removed topics as they were, so a broker can
	// delete their logs. Sorted by name.
	DeletedTopics []*TopicImage
	// ChangedPartitions lists, per topic id, the partitions created or
	// changed (partitions of created topics included), sorted.
	ChangedPartitions map[Uuid][]int32
	// ChangedConfigs are the resources whose configs changed.
	ChangedConfigs []ConfigResource
	// ChangedBrokers are ids of brokers (re)registered, unregistered,
	// fenced, unfenced or put in controlled shutdown.
	ChangedBrokers []int32
	// FeaturesChanged, ProducerIDsChanged, QuotasChanged and
	// TokensChanged flag those parts.
	FeaturesChanged    bool
	ProducerIDsChanged bool
	QuotasChanged      bool
	TokensChanged      bool
	// ChangedACLs are the ids of ACLs added or removed, sorted: those in
	// the new image were added, the others (in Prev) removed. An id added
	// and removed by the same batch is not listed.
	ChangedACLs []Uuid
	// ChangedScram are the SCRAM credentials set or removed, sorted.
	ChangedScram []ScramKey
}

// builder applies records to a copy-on-write successor of prev.
type builder struct {
	prev, next *Image
	// index is the log offset of the entry being applied (the snapshot's
	// offset on restore).
	index    uint64
	owned    map[string]bool // maps of next already copied from prev
	ownTopic map[Uuid]bool   // TopicImages of next already copied

	created  map[Uuid]bool
	deleted  map[Uuid]*TopicImage
	parts    map[Uuid]map[int32]bool
	configs  map[ConfigResource]bool
	brokers  map[int32]bool
	features bool
	pids     bool
	scram    map[ScramKey]bool
	quotas   bool
	acls     map[Uuid]bool
	tokens   bool
}

func newBuilder(prev *Image) *builder {
	next := *prev
	return &builder{
		prev: prev, next: &next, owned: map[string]bool{}, ownTopic: map[Uuid]bool{},
		created: map[Uuid]bool{}, deleted: map[Uuid]*TopicImage{},
		parts: map[Uuid]map[int32]bool{}, configs: map[ConfigResource]bool{},
		brokers: map[int32]bool{}, acls: map[Uuid]bool{}, scram: map[ScramKey]bool{},
	}
}

// own copies a map of next the first time the batch writes to it.
func (b *builder) own(name string) {
	if b.owned[name] {
		return
	}
	b.owned[name] = true
	switch name {
	case "topics":
		b.next.topics = maps.Clone(b.next.topics)
		b.next.topicsByID = maps.Clone(b.next.topicsByID)
		b.next.sorted = &sortedTopics{}
	case "brokers":
		b.next.brokers = maps.Clone(b.next.brokers)
	case "configs":
		b.next.configs = maps.Clone(b.next.configs)
	case "features":
		b.next.features = maps.Clone(b.next.features)
	case "scram":
		b.next.scram = maps.Clone(b.next.scram)
	case "tokens":
		b.next.tokens = maps.Clone(b.next.tokens)
	case "quotas":
		b.next.quotas = maps.Clone(b.next.quotas)
	case "acls":
		b.next.acls = maps.Clone(b.next.acls)
	}
}

// topicForWrite returns a private copy of a topic of next.
func (b *builder) topicForWrite(id Uuid) (*TopicImage, error) {
	t, ok := b.next.topicsByID[id]
	if !ok {
		return nil, fmt.Errorf("unknown topic id %s", id)
	}
	if b.ownTopic[id] {
		return t, nil
	}
	b.own("topics")
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	b.next.topics[c.Name] = &c
	b.next.topicsByID[id] = &c
	b.ownTopic[id] = true
	return &c, nil
}

func (b *builder) markPartition(id Uuid, p int32) {
	if b.parts[id] == nil {
		b.parts[id] = map[int32]bool{}
	}
	b.parts[id][p] = true
}

func (b *builder) apply(r Record) error {
	switch r := r.(type) {
	case *TopicRecord:
		return b.applyTopic(r)
	case *PartitionRecord:
		return b.applyPartition(r)
	case *PartitionChangeRecord:
		return b.applyPartitionChange(r)
	case *RemoveTopicRecord:
		return b.applyRemoveTopic(r)
	case *ConfigRecord:
		return b.applyConfig(r)
	case *ClientQuotaRecord:
		return b.applyClientQuota(r)
	case *AccessControlEntryRecord:
		// Kafka's AclsDelta replaces an ACL whose id is already known;
		// the controller never writes one.
		b.own("acls")
		b.next.acls[r.ID] = r.ACL
		b.acls[r.ID] = true
	case *RemoveAccessControlEntryRecord:
		if _, ok := b.next.acls[r.ID]; !ok {
			return fmt.Errorf("cannot remove unknown ACL id %s", r.ID)
		}
		b.own("acls")
		delete(b.next.acls, r.ID)
		b.acls[r.ID] = true
	case *RegisterBrokerRecord:
		b.own("brokers")
		b.next.brokers[r.BrokerID] = BrokerImage{ID: r.BrokerID, Epoch: r.BrokerEpoch,
			IncarnationID: r.IncarnationID, Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack, Fenced: r.Fenced,
			RegistrationOffset: b.index, Features: slices.Clone(r.Features)}
		b.brokers[r.BrokerID] = true
	case *BrokerRegistrationChangeRecord:
		return b.applyBrokerChange(r)
	case *DelegationTokenRecord:
		if r.TokenID == "" {
			return fmt.Errorf("delegation token without an id")
		}
		b.own("tokens")
		b.next.tokens[r.TokenID] = DelegationToken{ID: r.TokenID, Owner: r.Owner, Requester: r.Requester,
			Renewers: slices.Clone(r.Renewers), Issued: r.IssueTimestamp, Max: r.MaxTimestamp, Expiry: r.ExpirationTimestamp}
		b.tokens = true
	case *RemoveDelegationTokenRecord:
		if _, ok := b.next.tokens[r.TokenID]; !ok {
			return fmt.Errorf("cannot remove unknown delegation token %s", r.TokenID)
		}
		b.own("tokens")
		delete(b.next.tokens, r.TokenID)
		b.tokens = true
	case *UnregisterBrokerRecord:
		br, ok := b.next.brokers[r.BrokerID]
		if !ok || br.Epoch != r.BrokerEpoch {
			return fmt.Errorf("unregistration of broker %d epoch %d, which is not registered with that epoch", r.BrokerID, r.BrokerEpoch)
		}
		b.own("brokers")
		delete(b.next.brokers, r.BrokerID)
		b.brokers[r.BrokerID] = true
	case *FeatureLevelRecord:
		b.own("features")
		if r.FeatureLevel == 0 {
			delete(b.next.features, r.Name)
		} else {
			b.next.features[r.Name] = r.FeatureLevel
		}
		b.features = true
	case *ProducerIdsRecord:
		if r.NextProducerID <= b.next.nextProducerID {
			return fmt.Errorf("producer id block %d does not advance past %d", r.NextProducerID, b.next.nextProducerID)
		}
		b.next.nextProducerID = r.NextProducerID
		b.pids = true
	case *UserScramCredentialRecord:
		if r.Name == "" || r.Mechanism <= 0 {
			return fmt.Errorf("SCRAM credential with user %q and mechanism %d", r.Name, r.Mechanism)
		}
		k := ScramKey{r.Name, r.Mechanism}
		b.own("scram")
		b.next.scram[k] = ScramCredential{Salt: slices.Clone(r.Salt), StoredKey: slices.Clone(r.StoredKey),
			ServerKey: slices.Clone(r.ServerKey), Iterations: r.Iterations}
		b.scram[k] = true
	case *RemoveUserScramCredentialRecord:
		k := ScramKey{r.Name, r.Mechanism}
		if _, ok := b.next.scram[k]; !ok {
			return fmt.Errorf("no SCRAM credential of user %q for mechanism %d to remove", r.Name, r.Mechanism)
		}
		b.own("scram")
		delete(b.next.scram, k)
		b.scram[k] = true
	default:
		return fmt.Errorf("cannot replay %T", r)
	}
	return nil
}

func (b *builder) applyBrokerChange(r *BrokerRegistrationChangeRecord) error {
	br, ok := b.next.brokers[r.BrokerID]
	if !ok {
		return fmt.Errorf("change of unregistered broker %d", r.BrokerID)
	}
	if br.Epoch != r.BrokerEpoch {
		return fmt.Errorf("change of broker %d epoch %d, registered epoch %d", r.BrokerID, r.BrokerEpoch, br.Epoch)
	}
	if r.Fenced != nil {
		br.Fenced = *r.Fenced
	}
	if r.InControlledShutdown != nil {
		br.InControlledShutdown = *r.InControlledShutdown
	}
	b.own("brokers")
	b.next.brokers[r.BrokerID] = br
	b.brokers[r.BrokerID] = true
	return nil
}

func (b *builder) applyTopic(r *TopicRecord) error {
	if _, ok := b.next.topics[r.Name]; ok {
		return fmt.Errorf("topic %q already exists", r.Name)
	}
	if _, ok := b.next.topicsByID[r.TopicID]; ok || r.TopicID.IsZero() {
		return fmt.Errorf("topic id %s of %q is zero or in use", r.TopicID, r.Name)
	}
	b.own("topics")
	t := &TopicImage{Name: r.Name, ID: r.TopicID}
	b.next.topics[r.Name] = t
	b.next.topicsByID[r.TopicID] = t
	b.ownTopic[r.TopicID] = true
	b.created[r.TopicID] = true
	return nil
}

func (b *builder) applyPartition(r *PartitionRecord) error {
	t, err := b.topicForWrite(r.TopicID)
	if err != nil {
		return err
	}
	p := PartitionImage{Partition: r.PartitionID, Leader: r.Leader, LeaderEpoch: r.LeaderEpoch,
		PartitionEpoch: r.PartitionEpoch, Replicas: slices.Clone(r.Replicas), ISR: slices.Clone(r.ISR),
		AddingReplicas: nilIfEmpty(r.AddingReplicas), RemovingReplicas: nilIfEmpty(r.RemovingReplicas),
		ELR: nilIfEmpty(r.EligibleLeaderReplicas), LastKnownELR: nilIfEmpty(r.LastKnownElr)}
	switch {
	case int(r.PartitionID) == len(t.Partitions):
		t.Partitions = append(t.Partitions, p)
	case r.PartitionID >= 0 && int(r.PartitionID) < len(t.Partitions):
		t.Partitions[r.PartitionID] = p
	default:
		return fmt.Errorf("partition %d of %q would leave a gap after %d partitions", r.PartitionID, t.Name, len(t.Partitions))
	}
	b.markPartition(r.TopicID, r.PartitionID)
	return nil
}

func (b *builder) applyPartitionChange(r *PartitionChangeRecord) error {
	t, err := b.topicForWrite(r.TopicID)
	if err != nil {
		return err
	}
	if r.PartitionID < 0 || int(r.PartitionID) >= len(t.Partitions) {
		return fmt.Errorf("unknown partition %d of %q", r.PartitionID, t.Name)
	}
	p := &t.Partitions[r.PartitionID]
	if r.Leader != nil && *r.Leader != p.Leader {
		p.Leader = *r.Leader
		p.LeaderEpoch++
	}
	if r.ISR != nil {
		p.ISR = slices.Clone(r.ISR)
	}
	if r.Replicas != nil {
		p.Replicas = slices.Clone(r.Replicas)
	}
	if r.AddingReplicas != nil {
		p.AddingReplicas = nilIfEmpty(r.AddingReplicas)
	}
	if r.RemovingReplicas != nil {
		p.RemovingReplicas = nilIfEmpty(r.RemovingReplicas)
	}
	if r.EligibleLeaderReplicas != nil {
		p.ELR = nilIfEmpty(r.EligibleLeaderReplicas)
	}
	if r.LastKnownElr != nil {
		p.LastKnownELR = nilIfEmpty(r.LastKnownElr)
	}
	p.PartitionEpoch++
	b.markPartition(r.TopicID, r.PartitionID)
	return nil
}

// nilIfEmpty copies s, making an empty list nil so that images built by
// replay and from snapshots compare equal.
func nilIfEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (b *builder) applyRemoveTopic(r *RemoveTopicRecord) error {
	t, ok := b.next.topicsByID[r.TopicID]
	if !ok {
		return fmt.Errorf("cannot remove unknown topic id %s", r.TopicID)
	}
	b.own("topics")
	delete(b.next.topics, t.Name)
	delete(b.next.topicsByID, r.TopicID)
	delete(b.parts, r.TopicID)
	if b.created[r.TopicID] {
		delete(b.created, r.TopicID)
	} else {
		b.deleted[r.TopicID] = b.prev.topicsByID[r.TopicID]
	}
	// Kafka drops a topic's configs with the topic.
	res := ConfigResource{ResourceTopic, t.Name}
	if _, ok := b.next.configs[res]; ok {
		b.own("configs")
		delete(b.next.configs, res)
		b.configs[res] = true
	}
	return nil
}

func (b *builder) applyConfig(r *ConfigRecord) error {
	res := ConfigResource{r.ResourceType, r.ResourceName}
	if r.ResourceType == ResourceTopic {
		if _, ok := b.next.topics[r.ResourceName]; !ok {
			return fmt.Errorf("config %s for unknown topic %q", r.Name, r.ResourceName)
		}
	}
	b.own("configs")
	cfg := maps.Clone(b.next.configs[res])
	if cfg == nil {
		cfg = map[string]string{}
	}
	if r.Value == nil {
		delete(cfg, r.Name)
	} else {
		cfg[r.Name] = *r.Value
	}
	if len(cfg) == 0 {
		delete(b.next.configs, res)
	} else {
		b.next.configs[res] = cfg
	}
	b.configs[res] = true
	return nil
}

func (b *builder) applyClientQuota(r *ClientQuotaRecord) error {
	e, ok := QuotaEntityOf(r.Entity)
	if !ok {
		return fmt.Errorf("client quota %s for an invalid entity %v", r.Key, r.Entity)
	}
	b.own("quotas")
	q := maps.Clone(b.next.quotas[e])
	if q == nil {
		q = map[string]float64{}
	}
	if r.Remove {
		delete(q, r.Key)
	} else {
		q[r.Key] = r.Value
	}
	if len(q) == 0 {
		delete(b.next.quotas, e)
	} else {
		b.next.quotas[e] = q
	}
	b.quotas = true
	return nil
}

// delta summarises what the applied records changed.
func (b *builder) delta() *Delta {
	d := &Delta{Prev: b.prev, ChangedPartitions: map[Uuid][]int32{},
		FeaturesChanged: b.features, ProducerIDsChanged: b.pids, QuotasChanged: b.quotas, TokensChanged: b.tokens}
	byName := func(a, c *TopicImage) int { return cmp.Compare(a.Name, c.Name) }
	for id := range b.created {
		d.CreatedTopics = append(d.CreatedTopics, b.next.topicsByID[id])
	}
	slices.SortFunc(d.CreatedTopics, byName)
	d.DeletedTopics = slices.SortedFunc(maps.Values(b.deleted), byName)
	for id, ps := range b.parts {
		d.ChangedPartitions[id] = slices.Sorted(maps.Keys(ps))
	}
	d.ChangedConfigs = slices.SortedFunc(maps.Keys(b.configs), func(a, c ConfigResource) int {
		return cmp.Or(cmp.Compare(a.Type, c.Type), cmp.Compare(a.Name, c.Name))
	})
	d.ChangedBrokers = slices.Sorted(maps.Keys(b.brokers))
	for id := range b.acls {
		_, was := b.prev.acls[id]
		if _, is := b.next.acls[id]; was || is {
			d.ChangedACLs = append(d.ChangedACLs, id)
		}
	}
	slices.SortFunc(d.ChangedACLs, func(a, c Uuid) int { return bytes.Compare(a[:], c[:]) })
	d.ChangedScram = slices.SortedFunc(maps.Keys(b.scram), compareScramKeys)
	return d
}

// fullDelta describes img as built from nothing.
func fullDelta(img *Image) (*Delta, error) {
	b := newBuilder(NewImage(img.ClusterID))
	for _, r := range img.records() {
		if err := b.apply(r); err != nil {
			return nil, err
		}
	}
	d := b.delta()
	d.Full = true
	for i, t := range d.CreatedTopics {
		d.CreatedTopics[i] = img.topicsByID[t.ID] // the caller's pointers
	}
	return d, nil
}
