package storage

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/metadata"
)

// MetaPropertiesFile identifies a formatted log directory: which cluster and
// node it belongs to. Kafka refuses to start on a directory that belongs to
// another cluster or node, and so do we.
const MetaPropertiesFile = "meta.properties"

// MetaProperties is the KRaft (version 1) content of meta.properties:
//
//	version=1
//	cluster.id=<22-character base64url uuid>
//	node.id=<int>
//	directory.id=<22-character base64url uuid>
type MetaProperties struct {
	Version     int
	ClusterID   string
	NodeID      int32
	DirectoryID [16]byte // zero when absent (written by Kafka before 3.7)
}

// ReadMetaProperties reads dir's meta.properties. A missing file is an
// error wrapping os.ErrNotExist: the directory is not formatted.
func ReadMetaProperties(dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return MetaProperties{}, err
	}
	props := parseJavaProperties(b)
	var mp MetaProperties
	bad := func(key string) error {
		return fmt.Errorf("%s: invalid or missing %s %q", path, key, props[key])
	}
	if mp.Version, err = strconv.Atoi(props["version"]); err != nil || mp.Version != 1 {
		return mp, fmt.Errorf("%s: unsupported version %q, want 1 (KRaft)", path, props["version"])
	}
	if mp.ClusterID = props["cluster.id"]; mp.ClusterID == "" {
		return mp, bad("cluster.id")
	}
	n, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil || n < 0 {
		return mp, bad("node.id")
	}
	mp.NodeID = int32(n)
	if s, ok := props["directory.id"]; ok {
		if mp.DirectoryID, err = ParseUUID(s); err != nil {
			return mp, bad("directory.id")
		}
	}
	return mp, nil
}

// parseJavaProperties reads the subset of java.util.Properties that Kafka
// writes: key=value (or key:value) lines, '#' and '!' comments.
func parseJavaProperties(b []byte) map[string]string {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[line] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return props
}

// WriteMetaProperties writes dir's meta.properties atomically.
func WriteMetaProperties(dir string, mp MetaProperties) error {
	if mp.Version == 0 {
		mp.Version = 1
	}
	var buf bytes.Buffer
	buf.WriteString("#\n#Written by Samsa\n")
	fmt.Fprintf(&buf, "cluster.id=%s\n", mp.ClusterID)
	if mp.DirectoryID != ([16]byte{}) {
		fmt.Fprintf(&buf, "directory.id=%s\n", UUIDString(mp.DirectoryID))
	}
	fmt.Fprintf(&buf, "node.id=%d\n", mp.NodeID)
	fmt.Fprintf(&buf, "version=%d\n", mp.Version)
	return writeFileAtomic(filepath.Join(dir, MetaPropertiesFile), buf.Bytes())
}

// FormatDirs formats every directory that has no meta.properties yet for
// clusterID and nodeID, each with its own random directory id, and checks
// that the formatted ones belong to the same cluster and node.
func FormatDirs(dirs []string, clusterID string, nodeID int32) error {
	if _, err := ParseUUID(clusterID); err != nil {
		return fmt.Errorf("invalid cluster id: %w", err)
	}
	var seen [][16]byte
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		mp, err := ReadMetaProperties(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			mp = MetaProperties{Version: 1, ClusterID: clusterID, NodeID: nodeID, DirectoryID: RandomUUID()}
			if err := WriteMetaProperties(dir, mp); err != nil {
				return err
			}
		case err != nil:
			return err
		case mp.ClusterID != clusterID:
			return fmt.Errorf("log directory %s belongs to cluster %s, not %s", dir, mp.ClusterID, clusterID)
		case mp.NodeID != nodeID:
			return fmt.Errorf("log directory %s belongs to node %d, not %d", dir, mp.NodeID, nodeID)
		}
		if mp.DirectoryID != ([16]byte{}) && slices.Contains(seen, mp.DirectoryID) {
			return fmt.Errorf("log directory %s has the same directory.id as another directory", dir)
		}
		seen = append(seen, mp.DirectoryID)
	}
	return nil
}

// RandomUUID returns a random id as Kafka makes them (metadata.RandomUuid).
func RandomUUID() [16]byte {
	id, err := metadata.RandomUuid(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return id
}

// NewClusterID returns a fresh cluster id string (kafka-storage random-uuid).
func NewClusterID() string { return UUIDString(RandomUUID()) }
