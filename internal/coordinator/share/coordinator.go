package share

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/coordinator"
)

// StateTopic is the internal topic of the share coordinator.
const StateTopic = "__share_group_state"

// Config configures a Coordinator. The Kafka property each field mirrors
// is named beside it.
type Config struct {
	// NumPartitions is share.coordinator.state.topic.num.partitions (50
	// when zero). It must match the partition count of
	// __share_group_state.
	NumPartitions int32
	// SnapshotUpdateRecordsPerSnapshot is
	// share.coordinator.snapshot.update.records.per.snapshot (Kafka's
	// default 500, set by the node): after that many ShareUpdate records
	// for a share partition, its next write is a whole ShareSnapshot.
	// Zero makes every write a snapshot, as in Kafka.
	SnapshotUpdateRecordsPerSnapshot int
	// TopicPartitions returns the partition count of a topic by id, false
	// for a topic the metadata image does not have: state is kept only
	// for partitions that exist (UNKNOWN_TOPIC_OR_PARTITION otherwise).
	// Required.
	TopicPartitions func(topicID [16]byte) (int32, bool)
	// PruneInterval is share.coordinator.state.topic.prune.interval.ms
	// (5 min when zero): how often each partition's redundant records are
	// deleted (prune.go).
	PruneInterval time.Duration
	// Now stamps snapshots (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.NumPartitions == 0 {
		c.NumPartitions = 50
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = 5 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field, naming Kafka's property.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.NumPartitions < 1:
		return fmt.Errorf("invalid value %d for share.coordinator.state.topic.num.partitions: want at least 1", c.NumPartitions)
	case c.SnapshotUpdateRecordsPerSnapshot < 0 || c.SnapshotUpdateRecordsPerSnapshot > 500:
		return fmt.Errorf("invalid value %d for share.coordinator.snapshot.update.records.per.snapshot: want 0 to 500", c.SnapshotUpdateRecordsPerSnapshot)
	case c.TopicPartitions == nil:
		return errors.New("share.Config.TopicPartitions is required")
	}
	return nil
}

// Coordinator is the share coordinator of one broker (Kafka's
// ShareCoordinatorService): a shard per partition of __share_group_state
// this node leads, run by the coordinator runtime. Its request methods
// (rpc.go) serve the five share-group state RPCs.
type Coordinator struct {
	cfg Config
	rt  *coordinator.Runtime[*shard]

	// logs are the logs of the loaded partitions, for pruning.
	logs struct {
		sync.Mutex
		byPartition map[int32]coordinator.PartitionLog
	}
}

// New returns a coordinator with no loaded partitions.
func New(cfg Config) *Coordinator {
	c := &Coordinator{cfg: cfg.withDefaults()}
	c.rt = coordinator.NewRuntime(coordinator.Config{Topic: StateTopic, NumPartitions: c.cfg.NumPartitions, Logger: c.cfg.Logger},
		func(p *coordinator.Partition[*shard]) *shard { return newShard(c, p) })
	c.logs.byPartition = map[int32]coordinator.PartitionLog{}
	c.rt.Every(c.cfg.PruneInterval, func(p *coordinator.Partition[*shard]) { c.prune(p.Context(), p) })
	return c
}

// Load makes this coordinator the owner of partition of
// __share_group_state at leader epoch; its log is replayed in the
// background (COORDINATOR_LOAD_IN_PROGRESS until then).
func (c *Coordinator) Load(partition, epoch int32, log coordinator.PartitionLog) {
	c.logs.Lock()
	c.logs.byPartition[partition] = log
	c.logs.Unlock()
	c.rt.Load(partition, epoch, log)
}

// Unload drops the partition's state.
func (c *Coordinator) Unload(partition int32) {
	c.rt.Unload(partition)
	c.logs.Lock()
	delete(c.logs.byPartition, partition)
	c.logs.Unlock()
}

// logOf is the log partition was loaded from.
func (c *Coordinator) logOf(partition int32) coordinator.PartitionLog {
	c.logs.Lock()
	defer c.logs.Unlock()
	return c.logs.byPartition[partition]
}

// Close unloads every partition.
func (c *Coordinator) Close() { c.rt.Close() }

// PartitionFor is the partition of __share_group_state that holds k:
// Kafka's hash of the coordinator key "groupId:topicId:partition".
func (c *Coordinator) PartitionFor(k Key) int32 {
	return coordinator.PartitionFor(k.String(), c.cfg.NumPartitions)
}

// PartitionForKey is PartitionFor of a coordinator key as FindCoordinator
// carries it.
func (c *Coordinator) PartitionForKey(key string) (int32, error) {
	k, err := ParseKey(key)
	if err != nil {
		return 0, err
	}
	return c.PartitionFor(k), nil
}

// String is k as a coordinator key: "groupId:topicId:partition", the
// topic id in Kafka's base64 form.
func (k Key) String() string {
	return k.GroupID + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// ParseKey reads a coordinator key "groupId:topicId:partition" as Kafka's
// SharePartitionKey does: the last two fields are the topic id and the
// partition, everything before them (colons included) the group id, which
// must not be blank.
func ParseKey(key string) (Key, error) {
	if key == "" {
		return Key{}, errors.New("share partition key cannot be empty")
	}
	// Java's String.split drops trailing empty fields.
	parts := strings.Split(key, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) < 3 {
		return Key{}, fmt.Errorf("invalid key format: expected groupId:topicId:partition, found %s", key)
	}
	n := len(parts)
	k := Key{GroupID: strings.Join(parts[:n-2], ":")}
	if strings.TrimSpace(k.GroupID) == "" {
		return Key{}, errors.New("groupId must not be empty")
	}
	id, err := base64.RawURLEncoding.DecodeString(parts[n-2])
	if err != nil || len(id) != 16 {
		return Key{}, fmt.Errorf("invalid topic ID: %s", parts[n-2])
	}
	copy(k.TopicID[:], id)
	p, err := strconv.ParseInt(parts[n-1], 10, 32)
	if err != nil {
		return Key{}, fmt.Errorf("invalid partition: %s", parts[n-1])
	}
	k.Partition = int32(p)
	return k, nil
}

// op runs one share partition's operation on its shard: decide under the
// shard's lock, append the record it returns (if any), and answer once
// that record is committed and replayed. read says the operation answers
// with state (the result's value is copied under the lock).
func (c *Coordinator) op(ctx context.Context, k Key, decide func(s *shard) (*coordinator.KV, result)) result {
	p, code := c.rt.Lookup(k.String())
	if code != 0 {
		return result{code: code}
	}
	var res result
	ok := p.Write(ctx, func() ([]coordinator.KV, func(error)) {
		kv, r := decide(p.Shard)
		res = r
		if res.v != nil {
			res.v = clone(res.v)
		}
		if kv == nil {
			return nil, nil
		}
		return []coordinator.KV{*kv}, func(err error) {
			if err != nil {
				res = result{code: coordinator.AppendErrorCode(err)}
				return
			}
			_ = p.Shard.replayLocked(*kv) // a record we just encoded always parses
		}
	})
	if !ok {
		return result{code: kerr.NotCoordinator.Code}
	}
	return res
}

func clone(v *value) *value {
	n := *v
	n.Batches = append([]Batch(nil), v.Batches...)
	return &n
}

// TopicsDeleted drops the state of every share partition of the deleted
// topics, on each partition of __share_group_state this node leads, with
// tombstones written in the background (Kafka's maybeCleanupShareState on
// a metadata update): nothing could delete that state afterwards, as
// every RPC on it answers UNKNOWN_TOPIC_OR_PARTITION.
func (c *Coordinator) TopicsDeleted(ids [][16]byte) {
	if len(ids) == 0 {
		return
	}
	deleted := make(map[[16]byte]bool, len(ids))
	for _, id := range ids {
		deleted[id] = true
	}
	for _, p := range c.rt.Partitions() {
		c.rt.Go(func() {
			select {
			case <-p.Loaded():
			case <-p.Context().Done():
				return
			}
			p.Write(p.Context(), func() ([]coordinator.KV, func(error)) {
				var kvs []coordinator.KV
				for k := range p.Shard.mu.states {
					if deleted[k.TopicID] {
						kvs = append(kvs, tombstoneRecord(k))
					}
				}
				if len(kvs) == 0 {
					return nil, nil
				}
				return kvs, func(err error) {
					if err != nil {
						c.cfg.Logger.Warn("cannot drop the share state of deleted topics", "topic", StateTopic, "partition", p.ID, "err", err)
						return
					}
					for _, kv := range kvs {
						_ = p.Shard.replayLocked(kv)
					}
				}
			})
		})
	}
}
