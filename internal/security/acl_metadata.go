package security

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
)

// ACLFromMetadata is the ACL a metadata record or image holds.
func ACLFromMetadata(m metadata.ACL) ACL {
	return ACL{
		ResourceType: kmsg.ACLResourceType(m.ResourceType),
		ResourceName: m.ResourceName,
		PatternType:  kmsg.ACLResourcePatternType(m.PatternType),
		Principal:    m.Principal,
		Host:         m.Host,
		Operation:    kmsg.ACLOperation(m.Operation),
		Permission:   kmsg.ACLPermissionType(m.Permission),
	}
}

// Metadata is a as the metadata log holds it.
func (a ACL) Metadata() metadata.ACL {
	return metadata.ACL{
		ResourceType: int8(a.ResourceType),
		ResourceName: a.ResourceName,
		PatternType:  int8(a.PatternType),
		Principal:    a.Principal,
		Host:         a.Host,
		Operation:    int8(a.Operation),
		Permission:   int8(a.Permission),
	}
}

// ImageACLs returns the ACLs of img's map (by id), for NewACLSet.
func ImageACLs(acls map[metadata.Uuid]metadata.ACL) []ACL {
	out := make([]ACL, 0, len(acls))
	for _, a := range acls {
		out = append(out, ACLFromMetadata(a))
	}
	return out
}

// SortACLs sorts acls in Kafka's order (see Describe).
func SortACLs(acls []ACL) { slices.SortFunc(acls, compareKafka) }
