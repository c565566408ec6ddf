package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/metadata"
)

// QuorumFormat says how a new metadata log of a dynamic quorum starts
// (Kafka's `kafka-storage format --standalone | --initial-controllers |
// --no-initial-controllers`). At most one of the three is set.
type QuorumFormat struct {
	// Standalone: this controller alone is the initial voter set.
	Standalone bool
	// InitialControllers are the initial voters, this node among them.
	InitialControllers []InitialController
	// NoInitialControllers: the node joins an existing quorum; it never
	// votes or leads until a voter change (AddRaftVoter) adds it.
	NoInitialControllers bool
}

// Set reports whether any of the three was given.
func (q QuorumFormat) Set() bool {
	return q.Standalone || len(q.InitialControllers) > 0 || q.NoInitialControllers
}

// InitialController is one entry of --initial-controllers:
// id@host:port:directory-id.
type InitialController struct {
	ID          int32
	Host        string
	Port        int
	DirectoryID [16]byte
}

// ParseInitialControllers parses --initial-controllers, Kafka's
// "id@host:port:directory-id,..." (the directory id in Kafka's base64url
// form, as `kafka-storage random-uuid` prints it).
func ParseInitialControllers(raw string) ([]InitialController, error) {
	var out []InitialController
	for _, e := range strings.Split(raw, ",") {
		e = strings.TrimSpace(e)
		bad := fmt.Errorf("invalid --initial-controllers entry %q: want id@host:port:directory-id", e)
		idStr, rest, ok := strings.Cut(e, "@")
		i := strings.LastIndex(rest, ":")
		if !ok || i < 0 {
			return nil, bad
		}
		hostPort, dirStr := rest[:i], rest[i+1:]
		host, portStr, err := net.SplitHostPort(hostPort)
		if err != nil {
			return nil, bad
		}
		id, err1 := strconv.ParseInt(idStr, 10, 32)
		port, err2 := strconv.Atoi(portStr)
		dir, err3 := metadata.ParseUuid(dirStr)
		if err1 != nil || err2 != nil || err3 != nil || id < 0 || port <= 0 || port > 65535 || dir == (metadata.Uuid{}) {
			return nil, bad
		}
		if slices.ContainsFunc(out, func(c InitialController) bool { return c.ID == int32(id) }) {
			return nil, fmt.Errorf("invalid --initial-controllers: node %d appears twice", id)
		}
		out = append(out, InitialController{ID: int32(id), Host: host, Port: port, DirectoryID: dir})
	}
	return out, nil
}
