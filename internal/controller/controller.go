package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// ProducerIDBlockSize is the number of producer ids handed out per
// AllocateProducerIDs call, as in Kafka.
const ProducerIDBlockSize = 1000

// Config configures a Controller.
type Config struct {
	// NodeID is this node's node.id.
	NodeID int32
	// Raft is the metadata quorum member; Loader must be its Applier.
	Raft   *raft.Node
	Loader *metadata.Loader
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Rand supplies topic ids and placement offsets; default crypto/rand.
	Rand io.Reader
	// Now defaults to time.Now.
	Now func() time.Time
	// DefaultNumPartitions (num.partitions, default 1) and
	// DefaultReplicationFactor (default.replication.factor, default 1)
	// replace -1 in CreateTopics.
	DefaultNumPartitions     int32
	DefaultReplicationFactor int16
	// ValidateTopicConfig checks one topic config override; nil accepts
	// everything. Its error text is returned to the client.
	ValidateTopicConfig func(name, value string) error
	// ValidateGroupConfigs checks the complete set of configs a GROUP
	// resource would have (config.Config.ValidateGroupConfigs); nil
	// refuses GROUP resources. Its error text is returned to the client.
	ValidateGroupConfigs func(configs map[string]string) error
	// ValidateBrokerConfigs checks the complete set of dynamic configs a
	// BROKER resource would have (clusterDefault: resource name "");
	// default config.ValidateDynamicBrokerConfigs. Its error text is
	// returned to the client.
	ValidateBrokerConfigs func(configs map[string]string, clusterDefault bool) error
	// ListDefault reports whether a key of a resource type is a LIST, and
	// its default, for IncrementalAlterConfigs APPEND and SUBTRACT;
	// default config.ListDefault.
	ListDefault func(resourceType int8, name string) (def string, isList bool)
	// Voters are the controller endpoints of the quorum's voters
	// (controller.quorum.voters), which DescribeQuorum v2 reports so tools
	// can show and reach them. Name is the controller listener's name.
	Voters map[int32]metadata.Endpoint
	// DynamicQuorum is kraft.version 1 (KIP-853): the quorum was formatted
	// with --standalone, --initial-controllers or joined through
	// controller.quorum.bootstrap.servers, so AddRaftVoter and
	// RemoveRaftVoter may change its voters. A static quorum
	// (controller.quorum.voters, kraft.version 0) refuses them.
	DynamicQuorum bool
	// ControllerListener is the name of the controller listener
	// (controller.listener.names' first); an added voter must have it.
	ControllerListener string
	// SessionTimeout (broker.session.timeout.ms, default 9 s) is how long
	// a broker may go without a heartbeat before the active controller
	// fences it.
	SessionTimeout time.Duration
	// AutoLeaderRebalance (auto.leader.rebalance.enable) makes the
	// background loop move leadership back to eligible preferred replicas
	// every LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds, default 300 s).
	AutoLeaderRebalance          bool
	LeaderImbalanceCheckInterval time.Duration
	// UncleanLeaderElectionEnable is this node's static
	// unclean.leader.election.enable, the last fallback of a topic's
	// effective value (uncleanEnabled). UncleanLeaderElectionCheckInterval
	// (Kafka's fixed 5 minutes) is how often the background loop elects
	// unclean leaders for leaderless partitions of topics that allow it.
	UncleanLeaderElectionEnable        bool
	UncleanLeaderElectionCheckInterval time.Duration
	// MinInsyncReplicas is this node's static min.insync.replicas, the
	// last fallback of a topic's effective value (minISR), which decides
	// when replicas leaving the ISR join the ELR (KIP-966).
	MinInsyncReplicas int
	// BootstrapRecords are written with the metadata.version when the
	// log is bootstrapped (SCRAM credentials from --add-scram), and
	// ignored, with a warning, once it exists.
	BootstrapRecords []metadata.Record
	// InitialFeatures are the finalized feature levels of a new cluster
	// (metadata.InitialFeatures, from --release-version and --feature);
	// nil is Samsa's newest levels. Ignored once the log exists.
	InitialFeatures map[string]int16
	// Tokens configures delegation tokens (tokens.go).
	Tokens TokenConfig
	// Quotas measures the controller_mutation_rate of the clients whose
	// CreateTopics, CreatePartitions and DeleteTopics brokers forward
	// (quotas.go); the node keeps its quotas in step with the image. Nil
	// enforces none.
	Quotas *security.QuotaManager
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Raft == nil || c.Loader == nil {
		return errors.New("controller: Raft and Loader are required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.DefaultNumPartitions <= 0 {
		c.DefaultNumPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	// Broker configs default to Kafka's rules rather than to "anything":
	// a read-only key accepted here would look changed but never apply.
	if c.ValidateBrokerConfigs == nil {
		c.ValidateBrokerConfigs = config.ValidateDynamicBrokerConfigs
	}
	if c.ListDefault == nil {
		c.ListDefault = config.ListDefault
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 9 * time.Second
	}
	if c.LeaderImbalanceCheckInterval <= 0 {
		c.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if c.Tokens.MaxLifetime <= 0 {
		c.Tokens.MaxLifetime = 7 * 24 * time.Hour
	}
	if c.Tokens.ExpiryTime <= 0 {
		c.Tokens.ExpiryTime = 24 * time.Hour
	}
	if c.Tokens.ExpiryCheckInterval <= 0 {
		c.Tokens.ExpiryCheckInterval = time.Hour
	}
	if c.UncleanLeaderElectionCheckInterval <= 0 {
		c.UncleanLeaderElectionCheckInterval = 5 * time.Minute
	}
	return nil
}

// Controller decides metadata changes; see the package doc.
type Controller struct {
	cfg Config

	// mu serialises decisions: held from reading the image until the
	// records are replayed.
	mu struct {
		sync.Mutex
		// caughtUpTerm is the raft term in which we last ran a barrier:
		// a new leader must replay the whole log before deciding.
		caughtUpTerm uint64
		// sessions holds each broker's session deadline (last heartbeat +
		// SessionTimeout). Only meaningful on the active controller; reset
		// to now + SessionTimeout for every broker when a term begins.
		sessions map[int32]time.Time
		// heard marks brokers that registered or heartbeated with this
		// active controller. A session a new controller only granted
		// (resetSessionsLocked) does not block a new incarnation: the
		// old one may be a process that died with the previous leader.
		heard map[int32]bool
		// nextRebalance is when the loop next checks preferred leaders.
		nextRebalance time.Time
		// nextUnclean is when the loop next elects unclean leaders,
		// nextTokenSweep when it next removes expired delegation tokens.
		nextUnclean, nextTokenSweep time.Time
		// bootstrapWarned: the warning that BootstrapRecords came too
		// late was logged.
		bootstrapWarned bool
	}

	// renewals are sessions renewed by heartbeats answered while another
	// decision held mu (heartbeatWhileBusy); the next holder of mu moves
	// them into mu.sessions (mergeRenewalsLocked). Taken after mu.
	renewals struct {
		sync.Mutex
		m map[int32]renewal
	}

	// The background loop (Start, Close).
	startOnce sync.Once
	closeOnce sync.Once
	stop      context.CancelFunc
	loopDone  chan struct{}
}

// New returns a Controller. Call Start to run session expiry and leader
// rebalancing, and Close to stop them.
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, loopDone: make(chan struct{})}
	c.mu.sessions = map[int32]time.Time{}
	c.mu.heard = map[int32]bool{}
	c.renewals.m = map[int32]renewal{}
	return c, nil
}

// beginLocked makes sure this node may decide: it leads the quorum and has
// replayed everything committed before its term. Called with mu held.
func (c *Controller) beginLocked(ctx context.Context) (*metadata.Image, error) {
	if !c.cfg.Raft.IsLeader() {
		return nil, kerr.NotController
	}
	if term := c.cfg.Raft.Term(); term != c.mu.caughtUpTerm {
		if _, err := c.cfg.Raft.Barrier(ctx); err != nil {
			return nil, c.raftError(err)
		}
		c.mu.caughtUpTerm = term
		c.resetSessionsLocked(c.cfg.Loader.Image())
	}
	img := c.cfg.Loader.Image()
	c.mergeRenewalsLocked(img)
	return img, nil
}

// writeLocked proposes records as one atomic batch and returns once they
// are replayed into the Loader's image.
func (c *Controller) writeLocked(ctx context.Context, recs []metadata.Record) error {
	if len(recs) == 0 {
		return nil
	}
	data, err := metadata.EncodeBatch(recs)
	if err != nil {
		return err
	}
	idx, err := c.cfg.Raft.Propose(ctx, data)
	if err != nil {
		return c.raftError(err)
	}
	return c.cfg.Loader.WaitFor(ctx, idx)
}

func (c *Controller) raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrStopped):
		return fmt.Errorf("%w: %v", kerr.NotController, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
	case errors.Is(err, raft.ErrStorage):
		// Not written, and never applied: the client may retry (Kafka's
		// KafkaStorageException is retriable) once the disk has space.
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return err
}

// Bootstrap waits until the log is replayed and, when it holds no
// metadata.version yet (a freshly formatted cluster), writes the initial
// records. Calling it again is harmless.
func (c *Controller) Bootstrap(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err != nil {
		return err
	}
	if _, ok := img.Features()[metadata.MetadataVersionFeature]; ok {
		if len(c.cfg.BootstrapRecords) > 0 && !c.mu.bootstrapWarned {
			c.mu.bootstrapWarned = true
			c.cfg.Logger.Warn("the metadata log was bootstrapped already: the bootstrap records (--add-scram) are ignored, as kafka-storage format applies them only to a new cluster; use AlterUserScramCredentials (kafka-configs --alter --add-config 'SCRAM-SHA-256=[...]')",
				"records", len(c.cfg.BootstrapRecords))
		}
		return nil
	}
	features := c.cfg.InitialFeatures
	if features == nil {
		features, _ = metadata.InitialFeatures("", nil) // Samsa's default levels
	}
	c.cfg.Logger.Info("bootstrapping cluster metadata", "cluster.id", img.ClusterID, "features", features,
		"records", len(c.cfg.BootstrapRecords))
	// metadata.version first, as kafka-storage format writes it.
	recs := []metadata.Record{&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: features[metadata.MetadataVersionFeature]}}
	for _, name := range slices.Sorted(maps.Keys(features)) {
		if name != metadata.MetadataVersionFeature {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: name, FeatureLevel: features[name]})
		}
	}
	return c.writeLocked(ctx, append(recs, c.cfg.BootstrapRecords...))
}

// AllocateProducerIDs hands brokerID the next block of producer ids. Blocks
// never overlap, across restarts too, because the high-water mark is in the
// log.
func (c *Controller) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (first int64, count int32, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	if err != nil {
		return 0, 0, err
	}
	b, ok := img.Broker(brokerID)
	if !ok {
		return 0, 0, wire.Errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", brokerID)
	}
	if b.Epoch != brokerEpoch {
		return 0, 0, wire.Errorf(kerr.StaleBrokerEpoch, "broker %d epoch %d, current %d", brokerID, brokerEpoch, b.Epoch)
	}
	first = img.NextProducerID()
	if first > math.MaxInt64-ProducerIDBlockSize {
		return 0, 0, wire.Errorf(kerr.UnknownServerError, "exhausted all producer ids")
	}
	rec := &metadata.ProducerIdsRecord{BrokerID: brokerID, BrokerEpoch: brokerEpoch, NextProducerID: first + ProducerIDBlockSize}
	if err := c.writeLocked(ctx, []metadata.Record{rec}); err != nil {
		return 0, 0, err
	}
	return first, ProducerIDBlockSize, nil
}

// producerIDAPIs are controller.go's rows of the API table (api.go).
func producerIDAPIs() []API {
	return []API{
		api(kmsg.AllocateProducerIDs, 0, 0,
			func(c *Controller, ctx context.Context, req *kmsg.AllocateProducerIDsRequest) *kmsg.AllocateProducerIDsResponse {
				resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
				first, count, err := c.AllocateProducerIDs(ctx, req.BrokerID, req.BrokerEpoch)
				if err != nil {
					resp.ErrorCode = wire.ErrorCode(err)
					return resp
				}
				resp.ProducerIDStart, resp.ProducerIDLen = first, count
				return resp
			}, nil,
			func(r *kmsg.AllocateProducerIDsResponse) bool { return r.ErrorCode == notController }),
	}
}
