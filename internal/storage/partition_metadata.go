package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/samsa-io/samsa/internal/metadata"
)

// partitionMetadataFile holds a partition's topic id, so a broker can tell
// a recreated topic's partition from the old one (KIP-516).
const partitionMetadataFile = "partition.metadata"

// partitionMetadata is the content of partition.metadata, Kafka's format:
//
//	version: 0
//	topic_id: <base64url uuid>
func partitionMetadata(topicID [16]byte) []byte {
	return fmt.Appendf(nil, "version: 0\ntopic_id: %s\n", UUIDString(topicID))
}

func readPartitionMetadata(dir string) ([16]byte, error) {
	var id [16]byte
	path := filepath.Join(dir, partitionMetadataFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return id, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if fields["version"] != "0" {
		return id, fmt.Errorf("%s: unsupported version %q", path, fields["version"])
	}
	id, err = ParseUUID(fields["topic_id"])
	if err != nil {
		return id, fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

// UUIDString formats a 16-byte id as Kafka's Uuid.toString does.
func UUIDString(id [16]byte) string { return metadata.Uuid(id).String() }

// ParseUUID is the inverse of UUIDString.
func ParseUUID(s string) ([16]byte, error) { return metadata.ParseUuid(s) }
