package registry

import (
	"encoding/json"
	"fmt"
)

// Key types of the _schemas topic, as Confluent Schema Registry writes them.
const (
	keySchema       = "SCHEMA"
	keyConfig       = "CONFIG"
	keyMode         = "MODE"
	keyNoop         = "NOOP"
	keyDeleteSubj   = "DELETE_SUBJECT"
	keyClearSubject = "CLEAR_SUBJECT"
	keyContext      = "CONTEXT"
)

// recordKey is the JSON key of every _schemas record. Which fields are set
// depends on the key type: SCHEMA has subject and version (magic 1); CONFIG
// and MODE have subject, absent for the global setting (magic 0);
// DELETE_SUBJECT and CLEAR_SUBJECT have subject; CONTEXT has tenant and
// context; NOOP has nothing. Field order follows Confluent's.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Tenant  string  `json:"tenant,omitempty"`
	Context string  `json:"context,omitempty"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

// Reference names another subject's version that a schema imports.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaValue is the value of a SCHEMA record. schemaType is absent for
// Avro; deleted marks a soft-deleted version. A null value (tombstone)
// deletes the version permanently. metadata and ruleSet are kept as
// written.
type schemaValue struct {
	Subject    string          `json:"subject"`
	Version    int             `json:"version"`
	ID         int             `json:"id"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Schema     string          `json:"schema"`
	Deleted    bool            `json:"deleted"`
}

// configValue is the value of a CONFIG record. Confluent's other fields
// (alias, validateFields, default and override metadata...) are not
// served yet and are ignored when read.
type configValue struct {
	Subject            *string `json:"subject,omitempty"`
	CompatibilityLevel string  `json:"compatibilityLevel,omitempty"`
	Normalize          *bool   `json:"normalize,omitempty"`
}

// modeValue is the value of a MODE record.
type modeValue struct {
	Subject *string `json:"subject,omitempty"`
	Mode    string  `json:"mode"`
}

// deleteSubjectValue is the value of DELETE_SUBJECT: every version of the
// subject up to and including Version is soft-deleted.
type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// clearSubjectValue is the value of CLEAR_SUBJECT: the subject's
// soft-deleted versions are removed for good.
type clearSubjectValue struct {
	Subject string `json:"subject"`
}

// contextValue is the value of CONTEXT.
type contextValue struct {
	Tenant  string `json:"tenant"`
	Context string `json:"context"`
}

// record is one decoded _schemas record; Value is nil for a tombstone.
type record struct {
	Key   recordKey
	Value []byte
}

func strp(s string) *string { return &s }

func schemaKey(subject string, version int) recordKey {
	return recordKey{KeyType: keySchema, Subject: strp(subject), Version: version, Magic: 1}
}

// configKey and modeKey take "" for the global setting.
func configKey(subject string) recordKey {
	k := recordKey{KeyType: keyConfig}
	if subject != "" {
		k.Subject = strp(subject)
	}
	return k
}

func modeKey(subject string) recordKey {
	k := recordKey{KeyType: keyMode}
	if subject != "" {
		k.Subject = strp(subject)
	}
	return k
}

func encodeRecord(k recordKey, v any) (key, value []byte, err error) {
	if key, err = json.Marshal(k); err != nil {
		return nil, nil, err
	}
	if v == nil {
		return key, nil, nil
	}
	value, err = json.Marshal(v)
	return key, value, err
}

func decodeKey(b []byte) (recordKey, error) {
	var k recordKey
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("_schemas key %q: %w", b, err)
	}
	return k, nil
}
