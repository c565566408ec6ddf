package fetchsession

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// open makes a full fetch of n partitions at now, as a follower when
// privileged, and returns the session id it got (0: none).
func open(c *Cache, privileged bool, n int, now int64) int32 {
	parts := make([]Partition, n)
	results := make([]Result, n)
	for i := range parts {
		parts[i].Partition = int32(i)
		results[i].PreferredReplica = -1
	}
	id, _, _ := c.NewContext(17, 0, InitialEpoch, privileged, parts, nil, now).Respond(results, now)
	return id
}

// use continues session id at epoch with no changes at now.
func use(c *Cache, id, epoch int32, now int64) int16 {
	ctx := c.NewContext(17, id, epoch, false, nil, nil, now)
	return ctx.ErrorCode
}

// TestEviction walks Kafka's eviction rules in one shard (8 slots: one
// session per shard, so every ninth session lands in the first's shard).
func TestEviction(t *testing.T) {
	const young, old = 1_000, 1_000 + EvictionMs + 1
	fill := func(privileged bool, size int) (*Cache, int32) {
		c := NewCache(8)
		first := open(c, privileged, size, young)
		for range 7 {
			if open(c, false, 1, young) == 0 {
				t.Fatal("a shard with room refused a session")
			}
		}
		return c, first
	}
	for _, tc := range []struct {
		name             string
		firstPrivileged  bool
		firstSize        int
		touchFirstAt     int64 // 0: not used again after opening
		newPrivileged    bool
		newSize          int
		now              int64
		wantFirstEvicted bool
	}{
		{"young consumer kept from a bigger consumer", false, 1, 0, false, 5, young + 1, false},
		{"young consumer evicted by a follower", false, 1, 0, true, 1, young + 1, true},
		{"young follower kept from a follower", true, 1, 0, true, 5, young + 1, false},
		{"stale consumer evicted by anything", false, 9, 0, false, 1, old, true},
		{"stale follower evicted by a consumer", true, 9, 0, false, 1, old, true},
		{"old but recently used consumer kept from one as big", false, 3, old, false, 3, old + 10, false},
		{"old but recently used consumer evicted by a bigger one", false, 3, old, false, 4, old + 10, true},
		{"old but recently used follower kept from a bigger consumer", true, 3, old, false, 9, old + 10, false},
		{"old but recently used follower evicted by a bigger follower", true, 3, old, true, 4, old + 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, first := fill(tc.firstPrivileged, tc.firstSize)
			if tc.touchFirstAt != 0 {
				if code := use(c, first, 1, tc.touchFirstAt); code != 0 {
					t.Fatalf("using the first session: %v", kerr.ErrorForCode(code))
				}
			}
			got := open(c, tc.newPrivileged, tc.newSize, tc.now)
			evicted := !c.Contains(first)
			if evicted != tc.wantFirstEvicted {
				t.Fatalf("first session evicted: %v, want %v (new session %d)", evicted, tc.wantFirstEvicted, got)
			}
			if (got != 0) != evicted {
				t.Fatalf("new session %d, but first evicted: %v", got, evicted)
			}
			if c.Len() != 8 {
				t.Fatalf("cache holds %d sessions, want 8", c.Len())
			}
		})
	}
}

// TestSessionIDs: a session's id names its shard, and ids are positive.
func TestSessionIDs(t *testing.T) {
	c := NewCache(1000)
	for i := range 100 {
		id := open(c, false, 1, 1)
		if id <= 0 {
			t.Fatalf("session id %d", id)
		}
		if sh := c.shardOf(id); sh != c.shards[i%NumShards] {
			t.Fatalf("session %d (id %d) is not in shard %d", i, id, i%NumShards)
		}
	}
}

// TestOrder: partitions that return records move to the end of the
// session, so the next fetch reads the others first.
func TestOrder(t *testing.T) {
	c := NewCache(8)
	parts := []Partition{{Key: Key{Partition: 0}}, {Key: Key{Partition: 1}}, {Key: Key{Partition: 2}}}
	results := []Result{{PreferredReplica: -1}, {PreferredReplica: -1}, {PreferredReplica: -1}}
	id, _, _ := c.NewContext(17, 0, 0, false, parts, nil, 1).Respond(results, 1)
	ctx := c.NewContext(17, id, 1, false, nil, nil, 2)
	results[0].RecordBytes = 10
	_, code, include := ctx.Respond(results, 2)
	if code != 0 || !include[0] || include[1] || include[2] {
		t.Fatalf("respond: code %d, include %v", code, include)
	}
	ctx = c.NewContext(17, id, 2, false, nil, nil, 3)
	var order []int32
	for _, p := range ctx.Partitions {
		order = append(order, p.Partition)
	}
	if len(order) != 3 || order[0] != 1 || order[1] != 2 || order[2] != 0 {
		t.Fatalf("read order %v, want [1 2 0]", order)
	}
}
