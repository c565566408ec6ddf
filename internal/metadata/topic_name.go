package metadata

import (
	"errors"
	"fmt"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// MetadataTopicName is the name of the metadata log. Its partition 0 has
// the directory a user topic of that name would get, so no user topic may
// take the name (Kafka refuses it with INVALID_REQUEST).
const MetadataTopicName = "__cluster_metadata"

// ValidateTopicName applies Kafka's rules for topic names (Topic.validate):
// 1 to 249 characters of ASCII alphanumerics, '.', '_' and '-', and not
// "." or "..". The error text is Kafka's.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return errors.New("Topic name cannot be \".\" or \"..\"")
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("Topic name is illegal, it can't be longer than %d characters, topic name: %s", MaxTopicNameLength, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}
