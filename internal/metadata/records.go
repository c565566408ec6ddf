package metadata

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// RecordType is Kafka's api key of a metadata record.
type RecordType uint8

// Record types, numbered as Kafka numbers them.
const (
	TypeRegisterBroker RecordType = 0
	// TypeUnregisterBroker removes a broker's registration.
	TypeUnregisterBroker RecordType = 1
	TypeTopic            RecordType = 2
	TypePartition        RecordType = 3
	TypeConfig           RecordType = 4
	TypePartitionChange  RecordType = 5
	// TypeAccessControlEntry adds an ACL, TypeRemoveAccessControlEntry
	// removes one.
	TypeAccessControlEntry       RecordType = 6
	TypeRemoveAccessControlEntry RecordType = 7
	TypeRemoveTopic              RecordType = 9
	// TypeDelegationToken creates or renews a delegation token,
	// TypeRemoveDelegationToken removes one.
	TypeDelegationToken       RecordType = 10
	TypeRemoveDelegationToken RecordType = 26
	// TypeUserScramCredential sets and TypeRemoveUserScramCredential
	// removes a user's SCRAM credential for one mechanism.
	TypeUserScramCredential RecordType = 11
	TypeFeatureLevel        RecordType = 12
	TypeClientQuota         RecordType = 14
	TypeProducerIds         RecordType = 15
	// TypeBrokerRegistrationChange fences, unfences or marks a broker in
	// controlled shutdown.
	TypeBrokerRegistrationChange  RecordType = 17
	TypeRemoveUserScramCredential RecordType = 22
)

// Config resource types (Kafka's ConfigResource.Type).
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
	ResourceGroup  int8 = 32
)

// MetadataVersionFeature is the feature that versions the metadata log.
const MetadataVersionFeature = "metadata.version"

// Record is one metadata record.
type Record interface {
	Type() RecordType
}

// TopicRecord creates a topic (with no partitions yet).
type TopicRecord struct {
	Name    string
	TopicID Uuid
}

// PartitionRecord creates a partition, or replaces it wholesale.
type PartitionRecord struct {
	PartitionID    int32
	TopicID        Uuid
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (KIP-455); absent when there is none.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
	// EligibleLeaderReplicas and LastKnownElr are KIP-966's lists (Kafka's
	// tagged fields of the same names): replicas that left the ISR while it
	// was below min.insync.replicas and may still lead, and the last
	// leader of a partition that lost its whole ISR. Absent when empty.
	EligibleLeaderReplicas []int32 `json:",omitempty"`
	LastKnownElr           []int32 `json:",omitempty"`
}

// PartitionChangeRecord changes some fields of a partition; nil fields
// are unchanged. Leader and ISR changes bump the epochs on replay as Kafka
// does (leader epoch on a leader change, partition epoch on any change).
type PartitionChangeRecord struct {
	PartitionID int32
	TopicID     Uuid
	Leader      *int32 `json:",omitempty"`
	// ISR and Replicas: nil means unchanged, empty means empty (so no
	// omitempty: JSON null and [] must stay distinct).
	ISR      []int32
	Replicas []int32
	// AddingReplicas and RemovingReplicas, likewise nil when unchanged
	// and empty to clear, track a reassignment (KIP-455). Records written
	// before they existed decode as unchanged.
	AddingReplicas   []int32
	RemovingReplicas []int32
	// EligibleLeaderReplicas and LastKnownElr (KIP-966), likewise nil
	// when unchanged and empty to clear.
	EligibleLeaderReplicas []int32
	LastKnownElr           []int32
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	TopicID Uuid
}

// ClientQuotaRecord sets one quota (Key, e.g. producer_byte_rate, to
// Value) of a client quota entity, or removes it (Remove).
type ClientQuotaRecord struct {
	Entity []QuotaEntityPart
	Key    string
	Value  float64 `json:",omitempty"`
	Remove bool    `json:",omitempty"`
}

// QuotaEntityPart is one part of a quota entity as Kafka's record has
// it: a type (user, client-id or ip) and a name, nil for the default
// entity of that type.
type QuotaEntityPart struct {
	Type string
	Name *string
}

// ACL is one access control entry bound to a resource pattern, as the
// metadata log and image hold it (Kafka's StandardAcl). The codes are
// Kafka's wire codes (AclResourceType, PatternType, AclOperation,
// AclPermissionType); the controller writes only concrete, known ones.
type ACL struct {
	ResourceType int8
	ResourceName string
	PatternType  int8
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// AccessControlEntryRecord adds the ACL with id ID (Kafka's record 6).
type AccessControlEntryRecord struct {
	ID Uuid
	ACL
}

// RemoveAccessControlEntryRecord removes the ACL with id ID (record 7).
type RemoveAccessControlEntryRecord struct {
	ID Uuid
}

// ConfigRecord sets (Value non-nil) or deletes (nil) one config of a
// resource. ResourceName "" with ResourceBroker is the cluster default.
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// Endpoint is a broker listener.
type Endpoint struct {
	Name             string
	Host             string
	Port             uint16
	SecurityProtocol int16
}

// RegisterBrokerRecord registers (or re-registers) a broker.
type RegisterBrokerRecord struct {
	BrokerID      int32
	IncarnationID Uuid
	BrokerEpoch   int64
	Endpoints     []Endpoint
	Rack          *string
	Fenced        bool
	// Features are the feature levels the broker supports (Kafka's
	// BrokerFeature list), so a feature is finalized only at a level
	// every broker runs.
	Features []FeatureRange `json:",omitempty"`
}

// DelegationTokenRecord creates a delegation token or sets its expiry
// (Kafka's record of the same name). Principals are in Kafka's
// "User:alice" form; timestamps are Unix milliseconds. The token's HMAC is
// not stored: every node derives it from the token id and
// delegation.token.secret.key.
type DelegationTokenRecord struct {
	TokenID             string
	Owner               string
	Requester           string
	Renewers            []string
	IssueTimestamp      int64
	MaxTimestamp        int64
	ExpirationTimestamp int64
}

// RemoveDelegationTokenRecord removes an expired or expired-at-once
// delegation token.
type RemoveDelegationTokenRecord struct {
	TokenID string
}

// UnregisterBrokerRecord removes the registration BrokerEpoch of a
// broker (kafka-cluster unregister).
type UnregisterBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

// BrokerRegistrationChangeRecord changes the state of the current
// registration (BrokerEpoch) of a broker; nil fields are unchanged.
type BrokerRegistrationChangeRecord struct {
	BrokerID             int32
	BrokerEpoch          int64
	Fenced               *bool `json:",omitempty"`
	InControlledShutdown *bool `json:",omitempty"`
}

// FeatureLevelRecord sets a finalized feature level; 0 removes it.
type FeatureLevelRecord struct {
	Name         string
	FeatureLevel int16
}

// ProducerIdsRecord hands a block of producer ids to a broker: every id
// below NextProducerID has been handed out.
type ProducerIdsRecord struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

// UserScramCredentialRecord sets a user's SCRAM credential for one
// mechanism (Kafka's ScramMechanism type: 1 SCRAM-SHA-256, 2
// SCRAM-SHA-512): what the server keeps of the password, never the
// password or the salted password.
type UserScramCredentialRecord struct {
	Name       string
	Mechanism  int8
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// RemoveUserScramCredentialRecord removes a user's SCRAM credential for
// one mechanism; the credential must exist.
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

func (*TopicRecord) Type() RecordType            { return TypeTopic }
func (*PartitionRecord) Type() RecordType        { return TypePartition }
func (*PartitionChangeRecord) Type() RecordType  { return TypePartitionChange }
func (*RemoveTopicRecord) Type() RecordType      { return TypeRemoveTopic }
func (*ConfigRecord) Type() RecordType           { return TypeConfig }
func (*RegisterBrokerRecord) Type() RecordType   { return TypeRegisterBroker }
func (*FeatureLevelRecord) Type() RecordType     { return TypeFeatureLevel }
func (*UnregisterBrokerRecord) Type() RecordType { return TypeUnregisterBroker }
func (*DelegationTokenRecord) Type() RecordType  { return TypeDelegationToken }
func (*RemoveDelegationTokenRecord) Type() RecordType {
	return TypeRemoveDelegationToken
}
func (*ProducerIdsRecord) Type() RecordType { return TypeProducerIds }
func (*ClientQuotaRecord) Type() RecordType { return TypeClientQuota }
func (*AccessControlEntryRecord) Type() RecordType {
	return TypeAccessControlEntry
}
func (*RemoveAccessControlEntryRecord) Type() RecordType {
	return TypeRemoveAccessControlEntry
}
func (*BrokerRegistrationChangeRecord) Type() RecordType {
	return TypeBrokerRegistrationChange
}
func (*UserScramCredentialRecord) Type() RecordType { return TypeUserScramCredential }
func (*RemoveUserScramCredentialRecord) Type() RecordType {
	return TypeRemoveUserScramCredential
}

const batchFormatV1 = 1

func newRecord(t RecordType) (Record, error) {
	switch t {
	case TypeTopic:
		return &TopicRecord{}, nil
	case TypePartition:
		return &PartitionRecord{}, nil
	case TypePartitionChange:
		return &PartitionChangeRecord{}, nil
	case TypeRemoveTopic:
		return &RemoveTopicRecord{}, nil
	case TypeConfig:
		return &ConfigRecord{}, nil
	case TypeRegisterBroker:
		return &RegisterBrokerRecord{}, nil
	case TypeUnregisterBroker:
		return &UnregisterBrokerRecord{}, nil
	case TypeDelegationToken:
		return &DelegationTokenRecord{}, nil
	case TypeRemoveDelegationToken:
		return &RemoveDelegationTokenRecord{}, nil
	case TypeFeatureLevel:
		return &FeatureLevelRecord{}, nil
	case TypeProducerIds:
		return &ProducerIdsRecord{}, nil
	case TypeClientQuota:
		return &ClientQuotaRecord{}, nil
	case TypeAccessControlEntry:
		return &AccessControlEntryRecord{}, nil
	case TypeRemoveAccessControlEntry:
		return &RemoveAccessControlEntryRecord{}, nil
	case TypeBrokerRegistrationChange:
		return &BrokerRegistrationChangeRecord{}, nil
	case TypeUserScramCredential:
		return &UserScramCredentialRecord{}, nil
	case TypeRemoveUserScramCredential:
		return &RemoveUserScramCredentialRecord{}, nil
	}
	return nil, fmt.Errorf("unknown metadata record type %d", t)
}

// EncodeBatch encodes records as one log entry (see doc.go).
func EncodeBatch(recs []Record) ([]byte, error) {
	b := []byte{batchFormatV1}
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		body, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode %T: %w", r, err)
		}
		b = append(b, byte(r.Type()), 0)
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
	}
	return b, nil
}

// DecodeBatch decodes a log entry written by EncodeBatch.
func DecodeBatch(b []byte) ([]Record, error) {
	recs, rest, err := decodeBatch(b)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes after metadata batch", len(rest))
	}
	return recs, err
}

var errShort = errors.New("metadata batch truncated")

func decodeBatch(b []byte) ([]Record, []byte, error) {
	if len(b) == 0 || b[0] != batchFormatV1 {
		return nil, nil, errors.New("unknown metadata batch format")
	}
	b = b[1:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, nil, errShort
	}
	b = b[n:]
	recs := make([]Record, 0, count)
	for range count {
		if len(b) < 2 {
			return nil, nil, errShort
		}
		typ, ver := RecordType(b[0]), b[1]
		size, n := binary.Uvarint(b[2:])
		if n <= 0 || size > uint64(len(b)-2-n) {
			return nil, nil, errShort
		}
		body := b[2+n : 2+n+int(size)]
		b = b[2+n+int(size):]
		if ver != 0 {
			return nil, nil, fmt.Errorf("unsupported version %d of metadata record type %d", ver, typ)
		}
		r, err := newRecord(typ)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(body, r); err != nil {
			return nil, nil, fmt.Errorf("decode metadata record type %d: %w", typ, err)
		}
		recs = append(recs, r)
	}
	return recs, b, nil
}
