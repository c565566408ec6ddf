package metadata

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"sync"
)

// Image is the cluster metadata as of one log index. It is immutable once
// published: callers must not modify anything reachable from it.
type Image struct {
	ClusterID string
	// Offset is the raft index of the last entry applied into this image.
	Offset uint64

	topics     map[string]*TopicImage
	topicsByID map[Uuid]*TopicImage
	brokers    map[int32]BrokerImage
	configs    map[ConfigResource]map[string]string
	features   map[string]int16
	quotas     map[QuotaEntity]map[string]float64
	acls       map[Uuid]ACL
	// nextProducerID is the first producer id not yet handed out.
	nextProducerID int64
	// scram holds the SCRAM credentials by user and mechanism.
	scram map[ScramKey]ScramCredential
	// tokens holds the delegation tokens by id.
	tokens map[string]DelegationToken
	// sorted is Topics' answer, built on first use. Shared by the
	// images with the same topics map: a builder that changes the topics
	// gives its image a new one (builder.own).
	sorted *sortedTopics
}

// sortedTopics is an image's topics sorted by name, built once.
type sortedTopics struct {
	once   sync.Once
	topics []*TopicImage
}

// DelegationToken is one delegation token as its DelegationTokenRecord
// last set it.
type DelegationToken struct {
	ID        string
	Owner     string // "User:alice"
	Requester string
	Renewers  []string
	// Issued, Max and Expiry are Unix milliseconds: when it was created,
	// past when it cannot be renewed, and when it expires unless renewed.
	Issued, Max, Expiry int64
}

// ScramKey names a SCRAM credential: a user and a mechanism (Kafka's
// ScramMechanism type, 1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
type ScramKey struct {
	Name      string
	Mechanism int8
}

// ScramCredential is a user's SCRAM credential for one mechanism.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// TopicImage is one topic; Partitions[i] is partition i.
type TopicImage struct {
	Name       string
	ID         Uuid
	Partitions []PartitionImage
}

// PartitionImage is one partition's replica assignment and leadership.
type PartitionImage struct {
	Partition      int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// AddingReplicas and RemovingReplicas are set while a reassignment
	// moves the partition: Replicas is then the union of the original and
	// the target replicas, the target being Replicas minus
	// RemovingReplicas (Kafka's KIP-455).
	AddingReplicas   []int32
	RemovingReplicas []int32
	// ELR and LastKnownELR are KIP-966's eligible leader replicas (out of
	// the ISR, but holding every committed record: they left it while it
	// was below min.insync.replicas, when the high watermark cannot
	// move) and the last known leader of a partition whose ISR emptied.
	// Both stay empty while eligible.leader.replicas.version is 0.
	ELR          []int32
	LastKnownELR []int32
}

// Reassigning reports whether a reassignment is in progress.
func (p *PartitionImage) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// BrokerImage is one registered broker.
type BrokerImage struct {
	ID            int32
	Epoch         int64
	IncarnationID Uuid
	Endpoints     []Endpoint
	Rack          *string
	// Fenced brokers lead nothing and are not placed on; a broker is
	// registered fenced and unfenced once it has caught up.
	Fenced bool
	// InControlledShutdown: the broker asked to shut down and is losing
	// its leaderships; it is not eligible as a leader or ISR member.
	InControlledShutdown bool
	// RegistrationOffset is the log offset of the registration record, the
	// metadata a broker must have replayed before it is unfenced. After a
	// snapshot restore it is the snapshot's offset (an upper bound).
	RegistrationOffset uint64
	// Features are the levels the broker supports, as it registered them.
	Features []FeatureRange
}

// SupportedFeature is the range of feature name the broker registered;
// a feature it did not list supports level 0 only.
func (b BrokerImage) SupportedFeature(name string) FeatureRange {
	for _, f := range b.Features {
		if f.Name == name {
			return f
		}
	}
	return FeatureRange{Name: name}
}

// Eligible reports whether the broker may lead or join an ISR.
func (b BrokerImage) Eligible() bool { return !b.Fenced && !b.InControlledShutdown }

// Endpoint is the broker's endpoint on the named listener.
func (b BrokerImage) Endpoint(listener string) (Endpoint, bool) {
	for _, ep := range b.Endpoints {
		if ep.Name == listener {
			return ep, true
		}
	}
	return Endpoint{}, false
}

// ConfigResource names a config owner (Kafka's ConfigResource).
type ConfigResource struct {
	Type int8
	Name string
}

// QuotaEntity is a client quota entity: each of user, client-id and ip is
// absent (the zero QuotaName), the default entity of its type, or a name.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// QuotaName is one part of a QuotaEntity.
type QuotaName struct {
	// Present: the entity has this part.
	Present bool
	// Default: the part is its type's <default> entity (a null name).
	Default bool
	Name    string
}

// Quota entity types, as Kafka names them.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// QuotaEntityOf builds the entity of a record's parts; false when a type
// is unknown or repeated.
func QuotaEntityOf(parts []QuotaEntityPart) (QuotaEntity, bool) {
	var e QuotaEntity
	for _, p := range parts {
		var n *QuotaName
		switch p.Type {
		case QuotaUser:
			n = &e.User
		case QuotaClientID:
			n = &e.ClientID
		case QuotaIP:
			n = &e.IP
		default:
			return e, false
		}
		if n.Present {
			return e, false
		}
		n.Present = true
		if p.Name == nil {
			n.Default = true
		} else {
			n.Name = *p.Name
		}
	}
	return e, true
}

// CompareQuotaEntities orders entities by user, then client id, then ip;
// absent parts first, then defaults, then names.
func CompareQuotaEntities(a, b QuotaEntity) int {
	name := func(x, y QuotaName) int {
		return cmp.Or(compareBool(x.Present, y.Present), compareBool(x.Default, y.Default), cmp.Compare(x.Name, y.Name))
	}
	return cmp.Or(name(a.User, b.User), name(a.ClientID, b.ClientID), name(a.IP, b.IP))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Parts is the entity as a record's parts, in the order user, client-id,
// ip.
func (e QuotaEntity) Parts() []QuotaEntityPart {
	var out []QuotaEntityPart
	for _, p := range []struct {
		typ string
		n   QuotaName
	}{{QuotaUser, e.User}, {QuotaClientID, e.ClientID}, {QuotaIP, e.IP}} {
		if !p.n.Present {
			continue
		}
		part := QuotaEntityPart{Type: p.typ}
		if !p.n.Default {
			name := p.n.Name
			part.Name = &name
		}
		out = append(out, part)
	}
	return out
}

// NewImage returns the empty image of a cluster.
func NewImage(clusterID string) *Image {
	return &Image{
		ClusterID:  clusterID,
		topics:     map[string]*TopicImage{},
		topicsByID: map[Uuid]*TopicImage{},
		sorted:     &sortedTopics{},
		brokers:    map[int32]BrokerImage{},
		configs:    map[ConfigResource]map[string]string{},
		features:   map[string]int16{},
		scram:      map[ScramKey]ScramCredential{},
		tokens:     map[string]DelegationToken{},
		quotas:     map[QuotaEntity]map[string]float64{},
		acls:       map[Uuid]ACL{},
	}
}

// Topic looks a topic up by name.
func (m *Image) Topic(name string) (*TopicImage, bool) {
	t, ok := m.topics[name]
	return t, ok
}

// TopicByID looks a topic up by id.
func (m *Image) TopicByID(id Uuid) (*TopicImage, bool) {
	t, ok := m.topicsByID[id]
	return t, ok
}

// Topics returns all topics sorted by name.
//
// The slice is built once per image (a Metadata request for all topics
// would otherwise sort them all) and shared: callers must not modify it.
func (m *Image) Topics() []*TopicImage {
	if m.sorted == nil {
		return m.sortTopics()
	}
	m.sorted.once.Do(func() { m.sorted.topics = m.sortTopics() })
	return m.sorted.topics
}

func (m *Image) sortTopics() []*TopicImage {
	ts := slices.Collect(maps.Values(m.topics))
	slices.SortFunc(ts, func(a, b *TopicImage) int { return cmp.Compare(a.Name, b.Name) })
	return ts
}

// Brokers returns all registered brokers sorted by id.
func (m *Image) Brokers() []BrokerImage {
	bs := slices.Collect(maps.Values(m.brokers))
	slices.SortFunc(bs, func(a, b BrokerImage) int { return cmp.Compare(a.ID, b.ID) })
	return bs
}

// Broker looks a broker up by id.
func (m *Image) Broker(id int32) (BrokerImage, bool) {
	b, ok := m.brokers[id]
	return b, ok
}

// PartitionRef names one partition of a topic of an Image.
type PartitionRef struct {
	Topic     *TopicImage
	Partition *PartitionImage
}

// PartitionsWithReplica returns the partitions that have broker id among
// their replicas, in topic name and partition order.
func (m *Image) PartitionsWithReplica(id int32) []PartitionRef {
	var out []PartitionRef
	for _, t := range m.Topics() {
		for i := range t.Partitions {
			if p := &t.Partitions[i]; slices.Contains(p.Replicas, id) {
				out = append(out, PartitionRef{Topic: t, Partition: p})
			}
		}
	}
	return out
}

// LeaderCount returns how many partitions broker id leads.
func (m *Image) LeaderCount(id int32) int {
	n := 0
	for _, t := range m.topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				n++
			}
		}
	}
	return n
}

// Configs returns a copy of the explicitly set configs of a resource.
func (m *Image) Configs(resourceType int8, name string) map[string]string {
	return maps.Clone(m.configs[ConfigResource{resourceType, name}])
}

// ConfigResourceNames lists, sorted, the names of the resources of a type
// that have explicitly set configs.
func (m *Image) ConfigResourceNames(resourceType int8) []string {
	var names []string
	for r := range m.configs {
		if r.Type == resourceType {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Features returns a copy of the finalized feature levels.
func (m *Image) Features() map[string]int16 { return maps.Clone(m.features) }

// ClientQuotas returns every client quota entity and its quotas; the
// caller must not modify it.
func (m *Image) ClientQuotas() map[QuotaEntity]map[string]float64 { return m.quotas }

// ACLs returns every ACL by its id; the caller must not modify it.
func (m *Image) ACLs() map[Uuid]ACL { return m.acls }

// ScramCredential looks up a user's SCRAM credential for a mechanism.
func (m *Image) ScramCredential(name string, mechanism int8) (ScramCredential, bool) {
	c, ok := m.scram[ScramKey{name, mechanism}]
	return c, ok
}

// ScramKeys returns the names of every SCRAM credential, by user then
// mechanism.
func (m *Image) ScramKeys() []ScramKey {
	return slices.SortedFunc(maps.Keys(m.scram), compareScramKeys)
}

func compareScramKeys(a, b ScramKey) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Mechanism, b.Mechanism))
}

// DelegationTokens returns every delegation token, by id.
func (m *Image) DelegationTokens() []DelegationToken {
	ts := slices.Collect(maps.Values(m.tokens))
	slices.SortFunc(ts, func(a, b DelegationToken) int { return cmp.Compare(a.ID, b.ID) })
	return ts
}

// DelegationToken looks a delegation token up by id.
func (m *Image) DelegationToken(id string) (DelegationToken, bool) {
	t, ok := m.tokens[id]
	return t, ok
}

// NextProducerID is the first producer id not yet handed to any broker.
func (m *Image) NextProducerID() int64 { return m.nextProducerID }

// records returns records that rebuild m from an empty image, in an order
// replay accepts (features, brokers, producer ids, topics with partitions,
// configs, client quotas, SCRAM credentials, ACLs), deterministic so snapshots of equal images are equal bytes.
func (m *Image) records() []Record {
	var recs []Record
	for _, name := range slices.Sorted(maps.Keys(m.features)) {
		recs = append(recs, &FeatureLevelRecord{Name: name, FeatureLevel: m.features[name]})
	}
	for _, b := range m.Brokers() {
		recs = append(recs, &RegisterBrokerRecord{BrokerID: b.ID, IncarnationID: b.IncarnationID,
			BrokerEpoch: b.Epoch, Endpoints: b.Endpoints, Rack: b.Rack, Fenced: b.Fenced, Features: b.Features})
		if b.InControlledShutdown {
			t := true
			recs = append(recs, &BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, InControlledShutdown: &t})
		}
	}
	if m.nextProducerID > 0 {
		recs = append(recs, &ProducerIdsRecord{BrokerID: -1, BrokerEpoch: -1, NextProducerID: m.nextProducerID})
	}
	for _, t := range m.Topics() {
		recs = append(recs, &TopicRecord{Name: t.Name, TopicID: t.ID})
		for _, p := range t.Partitions {
			recs = append(recs, &PartitionRecord{PartitionID: p.Partition, TopicID: t.ID,
				Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
				EligibleLeaderReplicas: p.ELR, LastKnownElr: p.LastKnownELR})
		}
	}
	res := slices.Collect(maps.Keys(m.configs))
	slices.SortFunc(res, func(a, b ConfigResource) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
	})
	for _, r := range res {
		cfg := m.configs[r]
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[k]
			recs = append(recs, &ConfigRecord{ResourceType: r.Type, ResourceName: r.Name, Name: k, Value: &v})
		}
	}
	for _, k := range m.ScramKeys() {
		c := m.scram[k]
		recs = append(recs, &UserScramCredentialRecord{Name: k.Name, Mechanism: k.Mechanism,
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
	}
	for _, t := range m.DelegationTokens() {
		recs = append(recs, &DelegationTokenRecord{TokenID: t.ID, Owner: t.Owner, Requester: t.Requester,
			Renewers: t.Renewers, IssueTimestamp: t.Issued, MaxTimestamp: t.Max, ExpirationTimestamp: t.Expiry})
	}
	entities := slices.Collect(maps.Keys(m.quotas))
	slices.SortFunc(entities, CompareQuotaEntities)
	for _, e := range entities {
		q := m.quotas[e]
		for _, k := range slices.Sorted(maps.Keys(q)) {
			recs = append(recs, &ClientQuotaRecord{Entity: e.Parts(), Key: k, Value: q[k]})
		}
	}
	for _, id := range slices.SortedFunc(maps.Keys(m.acls), func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) }) {
		recs = append(recs, &AccessControlEntryRecord{ID: id, ACL: m.acls[id]})
	}
	return recs
}
