package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/coordinator"
	"github.com/samsa-io/samsa/internal/fetchsession"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/sharepartition"
	"github.com/samsa-io/samsa/internal/wire"
)

// Controller is where metadata changes go (internal/controllerchannel's
// Channel).
type Controller interface {
	// Forward sends an admin request to the active controller in its own
	// version and returns the answer, of req.ResponseKind()'s type, with
	// per-item error codes (REQUEST_TIMED_OUT when no controller decided
	// it in time); the broker sets its version. The controller serves
	// the request (internal/controller's API table), so a handler that
	// forwards needs nothing else.
	Forward(ctx context.Context, req kmsg.Request) kmsg.Response
	// ForwardInBackground is Forward without waiting: done gets the
	// answer later, on another goroutine (auto topic creation); of ctx
	// only the client it names is kept.
	ForwardInBackground(ctx context.Context, req kmsg.Request, done func(kmsg.Response))
	AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (first int64, count int32, err error)
}

// Config configures a Broker.
type Config struct {
	NodeID     int32
	Static     *config.Config
	Controller Controller
	// Image returns the latest published metadata image.
	Image    func() *metadata.Image
	Replicas *replica.Manager
	// Groups coordinates consumer groups; nil serves none.
	Groups GroupCoordinator
	// ShareParts serves share partitions (KIP-932 ShareFetch and
	// ShareAcknowledge); nil serves no share groups.
	ShareParts *sharepartition.Manager
	// Txns coordinates transactions; nil serves none (transactional
	// FindCoordinator and InitProducerId get COORDINATOR_NOT_AVAILABLE).
	Txns TxnCoordinator
	// Shares keeps share-partition state (KIP-932's share coordinator,
	// share_coordinator.go); nil serves none (share keys and the
	// share-group state RPCs get COORDINATOR_NOT_AVAILABLE).
	Shares ShareCoordinator
	// TxnPartitions asks transaction coordinators to verify or add the
	// partitions of transactional writes (KIP-890; txn.go); nil writes
	// unverified.
	TxnPartitions TxnPartitionAdder
	// ActiveController returns the node id of the active controller, or
	// -1 while none is known; Metadata and DescribeCluster report it (a
	// combined node is also a broker, so clients may send it admin
	// requests). Nil reports this node.
	ActiveController func() int32
	// Fetchers replicate the partitions this node follows: the metadata
	// publisher hands them each follower's leader and leader epoch
	// (Follow) and takes back partitions this node leads or no longer
	// hosts (Unfollow). Required; the node owns it and closes it before
	// the logs.
	Fetchers *replica.FetcherManager
	// Quotas measures clients against their quotas (quota.go); the node
	// keeps its quotas in step with the image (security.QuotaPublisher).
	// Nil enforces none.
	Quotas *security.QuotaManager
	// Authorizer decides what each client may do (authz.go); the node's
	// security.ACLPublisher keeps its ACLs in step with the image. Nil:
	// no authorization, and the ACL APIs answer SECURITY_DISABLED.
	Authorizer *security.Authorizer
	// Metrics counts produce and fetch per topic (BrokerTopicMetrics);
	// nil counts nothing.
	Metrics *metrics.BrokerTopics
	Logger  *slog.Logger
	Now     func() time.Time
}

// Broker dispatches requests to the handler of their API key.
type Broker struct {
	cfg         Config
	versions    *wire.VersionTable
	handlers    map[kmsg.Key]handler
	producerIDs producerIDBlock
	epoch       atomic.Int64 // broker epoch from registration
	dyn         dynamicState // dynamic broker configs and log level (publisher.go)
	// offsetsLoaded is owned by the metadata publisher.
	offsetsLoaded coordinator.Leadership
	// txnLoaded is owned by the metadata publisher.
	txnLoaded coordinator.Leadership
	// shareLoaded is owned by the metadata publisher.
	shareLoaded coordinator.Leadership
	// creating are the topics Metadata requests are auto-creating
	// (03_metadata.go), so that a client's retries do not send the
	// controller one CreateTopics each.
	creating struct {
		sync.Mutex
		topics map[string]bool
	}
	// fetchSessions are the incremental fetch sessions (01_fetch.go).
	fetchSessions *fetchsession.Cache
	// parkedFollowers are the followers' parked fetches (01_fetch.go).
	parkedFollowers followerFetches
}

// handler answers one API. It returns the response with its version set
// to the request's, or an error that closes the connection.
type handler struct {
	min, max int16
	fn       func(ctx context.Context, b *Broker, c *network.Conn, req kmsg.Request) (kmsg.Response, error)
}

// New returns a broker serving every API in the handler table.
func New(cfg Config) *Broker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.timed() // delegates.go
	b := &Broker{cfg: cfg, handlers: handlers(), fetchSessions: newFetchSessions(cfg.Static)}
	ranges := make([]wire.VersionRange, 0, len(b.handlers))
	for k, h := range b.handlers {
		ranges = append(ranges, wire.VersionRange{Key: k, Min: h.min, Max: h.max})
	}
	b.versions = wire.NewVersionTable(ranges...).Refuse(refusedRanges(b.handlers)...)
	return b
}

// handlers is the explicit table of APIs served: key → versions and
// function. ApiVersions answers from it, so what is advertised is exactly
// what is handled.
func handlers() map[kmsg.Key]handler {
	m := map[kmsg.Key]handler{
		kmsg.Produce:                      {0, 13, handleProduce},
		kmsg.Fetch:                        {4, 18, handleFetch},
		kmsg.ListOffsets:                  {1, 11, handleListOffsets},
		kmsg.Metadata:                     {0, 13, handleMetadata},
		kmsg.DescribeTopicPartitions:      {0, 0, handleDescribeTopicPartitions},
		kmsg.ApiVersions:                  {0, 5, handleAPIVersions},
		kmsg.CreateTopics:                 {2, 7, handleCreateTopics},
		kmsg.InitProducerID:               {0, 5, handleInitProducerID},
		kmsg.OffsetForLeaderEpoch:         {0, 4, handleOffsetForLeaderEpoch},
		kmsg.DescribeConfigs:              {1, 4, handleDescribeConfigs},
		kmsg.DescribeCluster:              {0, 2, handleDescribeCluster},
		kmsg.OffsetCommit:                 {0, 10, handleOffsetCommit},
		kmsg.OffsetFetch:                  {0, 10, handleOffsetFetch},
		kmsg.FindCoordinator:              {0, 6, handleFindCoordinator},
		kmsg.JoinGroup:                    {0, 9, handleJoinGroup},
		kmsg.Heartbeat:                    {0, 4, handleHeartbeat},
		kmsg.LeaveGroup:                   {0, 5, handleLeaveGroup},
		kmsg.SyncGroup:                    {0, 5, handleSyncGroup},
		kmsg.DescribeGroups:               {0, 6, handleDescribeGroups},
		kmsg.ListGroups:                   {0, 5, handleListGroups},
		kmsg.DeleteGroups:                 {0, 3, handleDeleteGroups},
		kmsg.OffsetDelete:                 {0, 0, handleOffsetDelete},
		kmsg.ConsumerGroupHeartbeat:       {0, 1, handleConsumerGroupHeartbeat},
		kmsg.ConsumerGroupDescribe:        {0, 1, handleConsumerGroupDescribe},
		kmsg.StreamsGroupHeartbeat:        {0, 1, handleStreamsGroupHeartbeat},
		kmsg.StreamsGroupDescribe:         {0, 1, handleStreamsGroupDescribe},
		kmsg.ShareGroupHeartbeat:          {1, 1, handleShareGroupHeartbeat},
		kmsg.ShareGroupDescribe:           {1, 1, handleShareGroupDescribe},
		kmsg.ShareFetch:                   {1, 2, handleShareFetch},
		kmsg.ShareAcknowledge:             {1, 2, handleShareAcknowledge},
		kmsg.DescribeShareGroupOffsets:    {0, 1, handleDescribeShareGroupOffsets},
		kmsg.AlterShareGroupOffsets:       {0, 0, handleAlterShareGroupOffsets},
		kmsg.DeleteShareGroupOffsets:      {0, 0, handleDeleteShareGroupOffsets},
		kmsg.AlterConfigs:                 {0, 2, handleAlterConfigs},
		kmsg.IncrementalAlterConfigs:      {0, 1, handleIncrementalAlterConfigs},
		kmsg.DeleteRecords:                {0, 2, handleDeleteRecords},
		kmsg.DescribeProducers:            {0, 0, handleDescribeProducers},
		kmsg.AlterReplicaLogDirs:          {1, 2, handleAlterReplicaLogDirs},
		kmsg.DescribeLogDirs:              {1, 5, handleDescribeLogDirs},
		kmsg.DescribeClientQuotas:         {0, 1, handleDescribeClientQuotas},
		kmsg.ListConfigResources:          {0, 1, handleListConfigResources},
		kmsg.CreateDelegationToken:        {1, 3, handleCreateDelegationToken},
		kmsg.RenewDelegationToken:         {1, 2, handleRenewDelegationToken},
		kmsg.ExpireDelegationToken:        {1, 2, handleExpireDelegationToken},
		kmsg.DescribeDelegationToken:      {1, 3, handleDescribeDelegationToken},
		kmsg.SASLHandshake:                {0, 1, handleSASLHandshake},
		kmsg.SASLAuthenticate:             {0, 2, handleSASLAuthenticate},
		kmsg.DescribeUserSCRAMCredentials: {0, 0, handleDescribeUserSCRAMCredentials},
		kmsg.DescribeACLs:                 {1, 3, handleDescribeACLs},
		kmsg.CreateACLs:                   {1, 3, handleCreateACLs},
		kmsg.DeleteACLs:                   {1, 3, handleDeleteACLs},
		kmsg.DeleteTopics:                 {1, 6, handleDeleteTopics},
		kmsg.CreatePartitions:             {0, 3, handleCreatePartitions},
		// Transactions, versions 1 and 2 (KIP-890): AddPartitionsToTxn v4+
		// is inter-broker; EndTxn v5 and TxnOffsetCommit v5+ are
		// transaction version 2.
		kmsg.AddPartitionsToTxn:   {0, 5, handleAddPartitionsToTxn},
		kmsg.AddOffsetsToTxn:      {0, 4, handleAddOffsetsToTxn},
		kmsg.EndTxn:               {0, 5, handleEndTxn},
		kmsg.TxnOffsetCommit:      {0, 6, handleTxnOffsetCommit},
		kmsg.WriteTxnMarkers:      {0, 2, handleWriteTxnMarkers},
		kmsg.DescribeTransactions: {0, 0, handleDescribeTransactions},
		kmsg.ListTransactions:     {0, 2, handleListTransactions},
		// The share coordinator's inter-broker RPCs (KIP-932).
		kmsg.InitializeShareGroupState:  {0, 0, handleInitializeShareGroupState},
		kmsg.ReadShareGroupState:        {0, 0, handleReadShareGroupState},
		kmsg.WriteShareGroupState:       {0, 1, handleWriteShareGroupState},
		kmsg.DeleteShareGroupState:      {0, 0, handleDeleteShareGroupState},
		kmsg.ReadShareGroupStateSummary: {0, 1, handleReadShareGroupStateSummary},
	}
	m[kmsg.StreamsGroupTopologyDescriptionUpdate] = handler{0, 0, handleStreamsGroupTopologyDescriptionUpdate}
	// The rest of the admin requests the controller decides go to it as
	// they are (forward.go), at the versions its table lists.
	for _, a := range controller.APIs() {
		if _, own := m[a.Key]; a.Forwarded() && !own {
			m[a.Key] = handler{a.Min, a.Max, handleForward}
		}
	}
	return m
}

// SetEpoch records the broker epoch the controller gave this broker when it
// registered; requests to the controller carry it.
func (b *Broker) SetEpoch(epoch int64) { b.epoch.Store(epoch) }

// Epoch is the broker epoch SetEpoch recorded (0 before registration).
func (b *Broker) Epoch() int64 { return b.epoch.Load() }

// Versions is the table of served API versions, for the network layer.
func (b *Broker) Versions() *wire.VersionTable { return b.versions }

// Handle implements network.Handler.
func (b *Broker) Handle(ctx context.Context, c *network.Conn, req wire.Request) (kmsg.Response, error) {
	key := kmsg.Key(req.Header.APIKey)
	if req.Body == nil || !b.versions.Serves(int16(key), req.Header.APIVersion) {
		name := kmsg.NameForKey(int16(key))
		switch {
		case key == kmsg.ApiVersions:
			return unsupportedAPIVersions(b), nil
		case req.Body != nil:
			// A Kafka broker would take it (unserved.go): answered.
			return wire.ErrorResponse(req.Body, kerr.UnsupportedVersion, fmt.Sprintf("Samsa does not serve %s v%d", name, req.Header.APIVersion)), nil
		}
		// Kafka closes the connection for an API or version its listener
		// does not take; a client learns the served range from
		// ApiVersions first.
		return nil, fmt.Errorf("unsupported API %s version %d", name, req.Header.APIVersion)
	}
	h := b.handlers[key]
	st := &requestState{header: req.Header}
	if b.cfg.Quotas != nil && b.cfg.Quotas.Enabled(security.RequestQuota) {
		st.clock = requestClock{now: b.cfg.Now, start: b.cfg.Now()}
		if c != nil {
			st.clock.away = -c.NetworkTime() // parsing, and the previous answer's encoding
		}
	}
	resp, err := h.fn(withRequest(ctx, st), b, c, req.Body)
	if err == nil {
		b.throttle(c, req, resp, &st.clock) // quota.go
	}
	return resp, err
}

// errCode turns an error into its Kafka code through wire.ErrorCode (a
// storage failure is already KAFKA_STORAGE_ERROR there); an error with no
// Kafka code is unexpected and logged.
func (b *Broker) errCode(err error, what string) int16 {
	code := wire.ErrorCode(err)
	if code == kerr.UnknownServerError.Code {
		b.cfg.Logger.Error("request failed", "what", what, "err", err)
	}
	return code
}

// errMessage is the text for a response's error message field: nil when
// err is a bare Kafka error whose code says it all.
func errMessage(err error) *string {
	if _, bare := err.(*kerr.Error); bare || err == nil {
		return nil
	}
	msg := err.Error()
	return &msg
}

// leaderPartition returns a partition this node leads, for the APIs that
// serve clients from the leader only. Otherwise the error is
// NOT_LEADER_OR_FOLLOWER for a partition that exists (the client refreshes
// its metadata) and UNKNOWN_TOPIC_OR_PARTITION for one that does not.
func (b *Broker) leaderPartition(topic string, partition int32) (*replica.Partition, error) {
	p, ok := b.cfg.Replicas.Partition(topic, partition)
	if ok && p.IsLeader() {
		return p, nil
	}
	if t, known := b.cfg.Image().Topic(topic); known && partition >= 0 && int(partition) < len(t.Partitions) {
		return nil, kerr.NotLeaderForPartition
	}
	return nil, kerr.UnknownTopicOrPartition
}

// selfFenced reports whether this broker fenced itself because its
// session with the controller quorum lapsed (replica.Manager.SetFenced):
// it cannot tell what the quorum decided since, so it does not advertise
// itself as a leader, coordinator or controller.
func (b *Broker) selfFenced() bool {
	return b.cfg.Replicas != nil && b.cfg.Replicas.Fenced()
}

// brokerAlive returns a broker clients may be sent to: registered and
// unfenced in img, and not this node while selfFenced.
func (b *Broker) brokerAlive(img *metadata.Image, id int32, selfFenced bool) (metadata.BrokerImage, bool) {
	br, ok := img.Broker(id)
	if !ok || br.Fenced || (selfFenced && id == b.cfg.NodeID) {
		return metadata.BrokerImage{}, false
	}
	return br, true
}

// controllerID is the controller id reported to clients: the active
// controller when it is a live broker, else this node (which forwards) —
// unless this node fenced itself: then -1 (Kafka's NO_CONTROLLER_ID), as
// it knows of no live controller and cannot forward to one.
func (b *Broker) controllerID(img *metadata.Image) int32 {
	if b.selfFenced() {
		return -1
	}
	if b.cfg.ActiveController == nil {
		return b.cfg.NodeID
	}
	id := b.cfg.ActiveController()
	if br, ok := img.Broker(id); ok && !br.Fenced {
		return id
	}
	return b.cfg.NodeID
}
