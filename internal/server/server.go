package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Server is a running node.
type Server struct {
	cfg    *config.Config
	logger *slog.Logger

	logs      *storage.LogManager
	loader    *metadata.Loader
	raft      *raft.Node
	transport *raft.TCPTransport
	ctrlLn    *splitListener
	ctrlAPI   *network.Server
	ctrl      *controller.Controller
	channel   *channel
	lifecycle *lifecycle
	replicas  *replica.Manager
	broker    *broker.Broker
	fetchers  *replica.FetcherManager // replica fetchers
	groups    *group.Coordinator
	txns      *txn.Coordinator
	fetcher   *metadataFetcher // broker-only nodes
	markers   *txn.MarkerChannel
	listeners []*network.Server
	clusterID string
}

// startupTimeout bounds how long Start waits for the quorum to elect a
// controller and for the controller to unfence this broker: the other
// nodes of a new cluster may start a little later.
const startupTimeout = 2 * time.Minute

// Start formats the data directories if this is the first start, recovers
// the logs, joins the metadata quorum and replays its log, registers the
// broker with the active controller and, once unfenced, serves clients. On
// error everything already started is closed. level, when not nil, is the
// level of logger's handler: BROKER_LOGGER configs change it at runtime.
//
// process.roles decides what runs: a combined node does all of the above;
// a controller-only node (process.roles=controller) only joins the quorum
// and serves its controller listener; a broker-only node
// (process.roles=broker) is no voter but an observer: it fetches the
// metadata log from the quorum leader (metadata_fetcher.go) instead.
func Start(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*Server, error) {
	return StartContext(context.Background(), cfg, logger, level)
}

// StartContext is Start that gives up when ctx is done (a SIGTERM during
// start-up): every wait of start-up — for a controller, for this broker's
// registration and unfencing — returns, what was started is closed, and
// the error wraps ctx's cause.
func StartContext(ctx context.Context, cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (_ *Server, err error) {
	if err := checkSupported(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.format(); err != nil {
		return nil, err
	}
	s.loader = metadata.NewLoader(s.clusterID, logger)
	if !cfg.HasRole("broker") {
		return s, s.startController(ctx)
	}
	defaults, err := broker.PartitionConfig(cfg, nil)
	if err != nil {
		return nil, err
	}
	s.logs, err = storage.NewLogManager(managerConfig(cfg, defaults.Log, logger))
	if err != nil {
		return nil, err
	}
	if err := s.logs.Load(); err != nil {
		return nil, fmt.Errorf("load logs: %w", err)
	}
	activeController := func() int32 {
		if id := s.raft.Leader(); id != 0 {
			return int32(id)
		}
		return -1
	}
	if cfg.HasRole("controller") {
		if err := s.joinQuorum(); err != nil {
			return nil, err
		}
	} else {
		if err := s.observeQuorum(ctx); err != nil {
			return nil, err
		}
		activeController = s.fetcher.Known
	}
	s.replicas = replica.NewManager(replica.Config{
		NodeID:                          cfg.NodeID,
		DecompressionBudget:             record.NewBudget(decompressionBudget(cfg.QueuedMaxRequestBytes)),
		Logs:                            s.logs,
		Logger:                          logger,
		ProducerIDExpirationMs:          cfg.ProducerIDExpirationMs,
		ReplicaLagTimeMax:               time.Duration(cfg.ReplicaLagTimeMaxMs) * time.Millisecond,
		HighWatermarkCheckpointInterval: time.Duration(cfg.MustInt64("replica.high.watermark.checkpoint.interval.ms")) * time.Millisecond,
		AlterPartition:                  s.alterPartition,
		ReplicaEligible: func(id int32) bool {
			b, ok := s.loader.Image().Broker(id)
			return ok && b.Eligible()
		},
	})
	if err := s.startCoordinators(); err != nil {
		return nil, err
	}
	fcfg := fetcherConfig(cfg, logger)
	fcfg.BrokerEpoch = func() int64 { return s.broker.Epoch() }
	fcfg.Image, fcfg.Replicas = s.loader.Image, s.replicas
	s.fetchers = replica.NewFetcherManager(fcfg)
	s.broker = broker.New(broker.Config{
		NodeID:           cfg.NodeID,
		Static:           cfg,
		Controller:       s.channel,
		Image:            s.loader.Image,
		Replicas:         s.replicas,
		Fetchers:         s.fetchers,
		Groups:           s.groups,
		Txns:             s.txns,
		Logger:           logger,
		ActiveController: activeController,
	})
	if level != nil {
		s.broker.SetLogLevel(level)
	}
	// The broker's publisher opens and deletes logs as metadata changes;
	// registered now, it first catches up on the replayed image.
	if err := s.loader.Register(s.broker); err != nil {
		return nil, err
	}
	if err := s.serve(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// startController runs a controller-only node: the quorum, the
// controller and its listener, nothing of a broker. It returns once the
// metadata log has a metadata.version.
func (s *Server) startController(ctx context.Context) error {
	if err := s.joinQuorum(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := s.bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap metadata: %w", err)
	}
	s.logger.Info("controller ready", "node.id", s.cfg.NodeID)
	return nil
}

// observeQuorum starts a broker-only node's metadata fetcher and waits
// until it has caught up with the quorum leader; the channel to the
// active controller follows the leader the fetcher learns.
func (s *Server) observeQuorum(ctx context.Context) error {
	voters := make(map[int32]string, len(s.cfg.ControllerQuorumVoters))
	for _, v := range s.cfg.ControllerQuorumVoters {
		voters[v.ID] = v.Addr()
	}
	s.fetcher = newMetadataFetcher(s.cfg.NodeID, voters, s.loader, s.logger)
	s.fetcher.start()
	s.channel = newChannel(s.cfg.NodeID, nil, s.fetcher, voters, s.logger)
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := s.fetcher.waitCaughtUp(ctx); err != nil {
		return err
	}
	s.logger.Info("caught up on the metadata log", "offset", s.loader.Image().Offset, "voters", len(voters))
	return nil
}

// joinQuorum opens the metadata log and its raft node — with a transport
// on the controller listener when there are other voters — and starts the
// controller and the channel brokers use to reach the active one.
func (s *Server) joinQuorum() error {
	cfg := s.cfg
	voters := make(map[int32]string, len(cfg.ControllerQuorumVoters))
	var peers []uint64
	for _, v := range cfg.ControllerQuorumVoters {
		voters[v.ID] = v.Addr()
		peers = append(peers, uint64(v.ID))
	}
	if len(peers) == 0 {
		peers = []uint64{uint64(cfg.NodeID)} // standalone dynamic quorum
	}
	rcfg := raft.Config{
		ID:      uint64(cfg.NodeID),
		Peers:   peers,
		Dir:     filepath.Join(s.metadataDir(), storage.MetadataLogDirName),
		Logger:  s.logger,
		Applier: s.loader,
	}
	// A controller-only node always serves its listener: brokers reach
	// the quorum only through it.
	if len(voters) > 1 || !cfg.HasRole("broker") {
		ln, err := s.bindController()
		if err != nil {
			return err
		}
		s.ctrlLn = newSplitListener(ln, s.logger)
	}
	if len(voters) > 1 {
		tpeers := make(map[uint64]string, len(voters))
		for id, addr := range voters {
			tpeers[uint64(id)] = addr
		}
		var err error
		s.transport, err = raft.NewTCPTransport(raft.TCPConfig{
			ID: uint64(cfg.NodeID), ClusterID: s.clusterID, Peers: tpeers,
			Listener: s.ctrlLn.raft, Logger: s.logger,
		})
		if err != nil {
			return err
		}
		rcfg.Transport = s.transport
	}
	var err error
	s.raft, err = raft.Open(rcfg)
	if err != nil {
		return fmt.Errorf("open metadata log: %w", err)
	}
	if s.transport != nil {
		s.transport.Attach(s.raft)
	}
	s.ctrl, err = controller.New(controller.Config{
		NodeID:                       cfg.NodeID,
		Raft:                         s.raft,
		Loader:                       s.loader,
		Logger:                       s.logger,
		Rand:                         rand.Reader,
		Now:                          time.Now,
		DefaultNumPartitions:         cfg.NumPartitions,
		DefaultReplicationFactor:     cfg.DefaultReplicationFactor,
		ValidateTopicConfig:          config.ValidateTopicConfig,
		SessionTimeout:               time.Duration(cfg.MustInt32("broker.session.timeout.ms")) * time.Millisecond,
		AutoLeaderRebalance:          cfg.MustBool("auto.leader.rebalance.enable"),
		LeaderImbalanceCheckInterval: time.Duration(cfg.MustInt64("leader.imbalance.check.interval.seconds")) * time.Second,
		Voters:                       voterEndpoints(cfg),
	})
	if err != nil {
		return err
	}
	s.ctrl.Start()
	if s.ctrlLn != nil {
		api := newControllerAPI(s.ctrl, s.raft)
		s.ctrlAPI = network.Serve(s.ctrlLn.kafka, network.Config{
			Listener:       cfg.ControllerListenerNames[0],
			MaxRequestSize: cfg.SocketRequestMaxBytes,
			Handler:        api,
			Versions:       api.versions,
			Logger:         s.logger,
		})
		s.logger.Info("serving the controller quorum", "listener", cfg.ControllerListenerNames[0], "addr", s.ctrlLn.ln.Addr().String(), "voters", len(voters))
	}
	if cfg.HasRole("broker") {
		s.channel = newChannel(cfg.NodeID, s.ctrl, raftLeaders{s.raft}, voters, s.logger)
	}
	return nil
}

// bindController binds this node's controller listener: the address its
// entry in controller.quorum.voters names, which other voters dial.
func (s *Server) bindController() (net.Listener, error) {
	for _, l := range s.cfg.Listeners {
		if !slices.Contains(s.cfg.ControllerListenerNames, l.Name) {
			continue
		}
		addr := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s (%s): %w", l.Name, addr, err)
		}
		return ln, nil
	}
	return nil, fmt.Errorf("listeners has no entry for controller listener %s", s.cfg.ControllerListenerNames[0])
}

// alterPartition is the replica manager's hook for ISR changes. The
// controller's answer lacks the replica set; the image has it.
func (s *Server) alterPartition(ctx context.Context, r replica.AlterPartitionRequest) (replica.PartitionState, error) {
	st, err := s.channel.alterPartition(ctx, s.lifecycle.epoch.Load(), r)
	if err != nil {
		return st, err
	}
	if t, ok := s.loader.Image().TopicByID(metadata.Uuid(r.TopicID)); ok && int(r.Partition) < len(t.Partitions) {
		st.Replicas = t.Partitions[r.Partition].Replicas
	}
	return st, nil
}

// startCoordinators creates the group and transaction coordinators. Their
// partitions are loaded later, as the broker's publisher learns which
// partitions of __consumer_offsets and __transaction_state it leads.
func (s *Server) startCoordinators() error {
	s.groups = group.New(groupConfig(s.cfg, s.loader, s.logger))
	tcfg := txnConfig(s.cfg, s.logger)
	// New producer ids come from the broker's blocks; the broker exists
	// before the first request reaches the coordinator.
	tcfg.ProducerIDs = func(ctx context.Context) (int64, error) { return s.broker.NextProducerID(ctx) }
	s.markers = txn.NewMarkerChannel(txn.MarkerChannelConfig{
		NodeID: s.cfg.NodeID, Replicas: s.replicas, Image: s.loader.Image, Groups: s.groups,
		Listener: s.cfg.InterBrokerListenerName, Logger: s.logger,
	})
	tcfg.Markers = s.markers
	tcfg.GroupPartition = func(groupID string) (string, int32) { return "__consumer_offsets", s.groups.PartitionFor(groupID) }
	if err := tcfg.Validate(); err != nil {
		return err
	}
	s.txns = txn.New(tcfg)
	return nil
}

// serve waits for an active controller (bootstrapping the metadata log if
// it is new), binds the client listeners, registers this broker, waits
// until the controller unfences it and starts answering clients.
func (s *Server) serve(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := s.bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap metadata: %w", err)
	}
	listeners, endpoints, err := s.bind()
	if err != nil {
		return err
	}
	var rack *string
	if s.cfg.BrokerRack != "" {
		rack = &s.cfg.BrokerRack
	}
	s.lifecycle = &lifecycle{
		ch: s.channel, logger: s.logger, clusterID: s.clusterID, nodeID: s.cfg.NodeID,
		endpoints: endpoints, rack: rack,
		interval:       time.Duration(s.cfg.MustInt32("broker.heartbeat.interval.ms")) * time.Millisecond,
		metadataOffset: func() int64 { return int64(s.loader.Image().Offset) },
		onEpoch:        s.broker.SetEpoch,
		sessionTimeout: time.Duration(s.cfg.MustInt32("broker.session.timeout.ms")) * time.Millisecond,
		onSession:      s.replicas.SetFenced,
	}
	s.lifecycle.start()
	err = s.lifecycle.waitUnfenced(ctx)
	if err == nil {
		err = s.waitUnfencedLocally(ctx)
	}
	if err != nil {
		for _, ln := range listeners {
			ln.Close()
		}
		return err
	}
	for name, ln := range listeners {
		s.listeners = append(s.listeners, network.Serve(ln, network.Config{
			Listener:       name,
			MaxRequestSize: s.cfg.SocketRequestMaxBytes,
			Handler:        s.broker,
			Versions:       s.broker.Versions(),
			Logger:         s.logger,
		}))
		s.logger.Info("serving Kafka clients", "listener", name, "addr", ln.Addr().String())
	}
	return nil
}

// waitUnfencedLocally waits until this node's own image shows it unfenced:
// the controller says so as soon as it commits the change, but a node
// that replays the log (a follower voter, a broker-only observer) may be a
// moment behind, and clients asking it for metadata would not find it.
func (s *Server) waitUnfencedLocally(ctx context.Context) error {
	for {
		if b, ok := s.loader.Image().Broker(s.cfg.NodeID); ok && !b.Fenced {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting to replay this broker's unfencing: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// bootstrap waits until the metadata log has a metadata.version: the
// active controller writes it into a new log; the other voters wait to
// replay it.
func (s *Server) bootstrap(ctx context.Context) error {
	if s.raft == nil {
		return nil // an observer: caught up on a log that has one
	}
	for {
		if _, ok := s.loader.Image().Features()[metadata.MetadataVersionFeature]; ok && !s.raft.IsLeader() {
			return nil
		}
		if s.raft.IsLeader() {
			err := s.ctrl.Bootstrap(ctx)
			if err == nil {
				return nil
			}
			if !errors.Is(err, kerr.NotController) {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no active controller among controller.quorum.voters: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// format makes sure every data directory has a meta.properties of one
// cluster, generating the cluster id on the very first start.
func (s *Server) format() error {
	dirs := s.allDirs()
	for _, d := range dirs {
		mp, err := storage.ReadMetaProperties(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		s.clusterID = mp.ClusterID
		break
	}
	if s.clusterID != "" && s.cfg.ClusterID != "" && s.clusterID != s.cfg.ClusterID {
		return fmt.Errorf("data directories belong to cluster %s, not %s", s.clusterID, s.cfg.ClusterID)
	}
	if s.clusterID == "" && s.cfg.ClusterID != "" {
		s.clusterID = s.cfg.ClusterID
		s.logger.Info("formatting data directories", "cluster.id", s.clusterID, "dirs", dirs)
	}
	if s.clusterID == "" {
		if len(s.cfg.ControllerQuorumVoters) > 1 || !s.cfg.HasRole("controller") {
			return errors.New("these data directories are not formatted and this node is one of several (controller.quorum.voters lists several voters, or process.roles=broker): every node needs the same cluster id; start each with --cluster-id (generate one with `samsa cluster new-id`)")
		}
		id, err := metadata.RandomUuid(rand.Reader)
		if err != nil {
			return err
		}
		s.clusterID = id.String()
		s.logger.Info("formatting data directories", "cluster.id", s.clusterID, "dirs", dirs)
	}
	return storage.FormatDirs(dirs, s.clusterID, s.cfg.NodeID)
}

func (s *Server) metadataDir() string {
	if s.cfg.MetadataLogDir != "" {
		return s.cfg.MetadataLogDir
	}
	return s.cfg.LogDirs[0]
}

func (s *Server) allDirs() []string {
	dirs := slices.Clone(s.cfg.LogDirs)
	if !slices.Contains(dirs, s.metadataDir()) {
		dirs = append(dirs, s.metadataDir())
	}
	return dirs
}

// bind opens the client listeners (all but the controller listeners) and
// returns them with the endpoints to register: advertised where set, else
// the bound address (so port 0 registers the real port).
func (s *Server) bind() (map[string]net.Listener, []metadata.Endpoint, error) {
	listeners := make(map[string]net.Listener)
	var endpoints []metadata.Endpoint
	for _, l := range s.cfg.Listeners {
		if slices.Contains(s.cfg.ControllerListenerNames, l.Name) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		if err != nil {
			for _, open := range listeners {
				open.Close()
			}
			return nil, nil, fmt.Errorf("listen on %s (%s): %w", l.Name, net.JoinHostPort(l.Host, strconv.Itoa(l.Port)), err)
		}
		listeners[l.Name] = ln
		host, port := l.Host, ln.Addr().(*net.TCPAddr).Port
		for _, a := range s.cfg.AdvertisedListeners {
			if a.Name == l.Name && a.Port != 0 {
				host, port = a.Host, a.Port
			}
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		endpoints = append(endpoints, metadata.Endpoint{
			Name:             l.Name,
			Host:             host,
			Port:             uint16(port),
			SecurityProtocol: securityProtocol(s.cfg, l.Name),
		})
	}
	if len(listeners) == 0 {
		return nil, nil, errors.New("no broker listener: every entry of listeners is a controller listener")
	}
	return listeners, endpoints, nil
}

// Addr returns the bound address of the named listener, e.g. PLAINTEXT.
func (s *Server) Addr(listener string) string {
	for _, l := range s.listeners {
		if l.Name() == listener {
			return l.Addr().String()
		}
	}
	return ""
}

// ClusterID is the cluster id from meta.properties.
func (s *Server) ClusterID() string { return s.clusterID }

// Close moves this broker's leadership away (controlled shutdown), stops
// serving, then the metadata quorum, then flushes and checkpoints the
// logs. It is safe on a partly started server.
func (s *Server) Close() error {
	var errs []error
	if s.lifecycle != nil {
		timeout := 10 * time.Second
		if len(s.cfg.ControllerQuorumVoters) <= 1 && s.cfg.HasRole("controller") {
			timeout = 0 // nobody to hand leadership to
		}
		s.lifecycle.shutdown(timeout)
	}
	for _, l := range s.listeners {
		errs = append(errs, l.Close())
	}
	if s.fetchers != nil {
		s.fetchers.Close()
	}
	// Transactions first: their marker writers report to the groups.
	if s.txns != nil {
		s.txns.Close()
	}
	if s.markers != nil {
		s.markers.Close()
	}
	if s.groups != nil {
		s.groups.Close()
	}
	if s.replicas != nil {
		s.replicas.Close()
	}
	if s.ctrl != nil {
		s.ctrl.Close()
	}
	if s.ctrlAPI != nil {
		errs = append(errs, s.ctrlAPI.Close())
	}
	if s.fetcher != nil {
		s.fetcher.close()
	}
	if s.channel != nil {
		s.channel.Close()
	}
	if s.raft != nil {
		errs = append(errs, s.raft.Close())
	}
	if s.transport != nil {
		errs = append(errs, s.transport.Close())
	}
	if s.ctrlLn != nil {
		errs = append(errs, s.ctrlLn.Close())
	}
	if s.logs != nil {
		errs = append(errs, s.logs.Close())
	}
	return errors.Join(errs...)
}

// securityProtocol is the wire number of a listener's security protocol
// (Kafka's SecurityProtocol ids).
func securityProtocol(cfg *config.Config, listener string) int16 {
	switch cfg.ListenerSecurityProtocolMap[listener] {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	default:
		return 0 // PLAINTEXT
	}
}

// checkSupported refuses configurations that Kafka accepts but Samsa does
// not run yet, rather than silently running something else. Without
// controller.quorum.voters (Kafka 4's dynamic quorum configured through
// controller.quorum.bootstrap.servers) a combined node is the only voter,
// as after Kafka's `kafka-storage format --standalone`; controller-only and
// broker-only nodes need the static voter list to find each other.
func checkSupported(cfg *config.Config) error {
	broker, ctrl := cfg.HasRole("broker"), cfg.HasRole("controller")
	for _, r := range cfg.ProcessRoles {
		if r != "broker" && r != "controller" {
			return fmt.Errorf("invalid value %q for process.roles: want broker, controller or broker,controller", strings.Join(cfg.ProcessRoles, ","))
		}
	}
	if !broker && !ctrl {
		return errors.New("process.roles is required: want broker, controller or broker,controller")
	}
	if (!broker || !ctrl) && len(cfg.ControllerQuorumVoters) == 0 {
		return fmt.Errorf("process.roles=%s needs controller.quorum.voters: Samsa does not discover a dynamic quorum through controller.quorum.bootstrap.servers yet", strings.Join(cfg.ProcessRoles, ","))
	}
	isVoter := slices.ContainsFunc(cfg.ControllerQuorumVoters, func(v config.Voter) bool { return v.ID == cfg.NodeID })
	switch {
	case ctrl && !isVoter && len(cfg.ControllerQuorumVoters) > 0:
		return fmt.Errorf("node.id %d must be in controller.quorum.voters when process.roles contains controller", cfg.NodeID)
	case !ctrl && isVoter:
		return fmt.Errorf("node.id %d is in controller.quorum.voters but process.roles=broker: a broker-only node cannot be a voter", cfg.NodeID)
	}
	return nil
}

// groupConfig maps the broker's group.* and offsets.* keys onto the group
// coordinator.
func groupConfig(cfg *config.Config, loader *metadata.Loader, logger *slog.Logger) group.Config {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	delay := ms(cfg.GroupInitialRebalanceDelayMs)
	if delay == 0 {
		delay = -1 // the coordinator reads 0 as "default"; the key says none
	}
	return group.Config{
		NumPartitions:          cfg.OffsetsTopicNumPartitions,
		MinSessionTimeout:      ms(cfg.GroupMinSessionTimeoutMs),
		MaxSessionTimeout:      ms(cfg.GroupMaxSessionTimeoutMs),
		InitialRebalanceDelay:  delay,
		MaxGroupSize:           int(cfg.GroupMaxSize),
		OffsetsRetention:       time.Duration(cfg.OffsetsRetentionMinutes) * time.Minute,
		RetentionCheckInterval: ms(cfg.OffsetsRetentionCheckIntervalMs),
		OffsetMetadataMaxBytes: int(cfg.OffsetMetadataMaxBytes),
		Logger:                 logger,

		ConsumerSessionTimeout:    ms(int64(cfg.MustInt32("group.consumer.session.timeout.ms"))),
		ConsumerHeartbeatInterval: ms(int64(cfg.MustInt32("group.consumer.heartbeat.interval.ms"))),
		ConsumerMaxGroupSize:      int(cfg.MustInt32("group.consumer.max.size")),
		Topics: func() map[string]group.TopicInfo {
			topics := loader.Image().Topics()
			out := make(map[string]group.TopicInfo, len(topics))
			for _, t := range topics {
				out[t.Name] = group.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions))}
			}
			return out
		},
		PartitionExists: func(topic string, partition int32) bool {
			t, ok := loader.Image().Topic(topic)
			return ok && partition >= 0 && int(partition) < len(t.Partitions)
		},
		TopicName: func(id [16]byte) (string, bool) {
			t, ok := loader.Image().TopicByID(metadata.Uuid(id))
			if !ok {
				return "", false
			}
			return t.Name, true
		},
		TopicID: func(name string) ([16]byte, bool) {
			t, ok := loader.Image().Topic(name)
			if !ok {
				return [16]byte{}, false
			}
			return t.ID, true
		},
	}
}

// txnConfig maps the broker's transaction.* keys onto the transaction
// coordinator; the caller adds the hooks into the broker.
func txnConfig(cfg *config.Config, logger *slog.Logger) txn.Config {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return txn.Config{
		NumPartitions:         cfg.TransactionStateLogNumPartitions,
		MaxTimeout:            ms(cfg.TransactionMaxTimeoutMs),
		AbortTimedOutInterval: ms(int64(cfg.MustInt32("transaction.abort.timed.out.transaction.cleanup.interval.ms"))),
		IDExpiration:          ms(cfg.TransactionalIDExpirationMs),
		RemoveExpiredInterval: ms(int64(cfg.MustInt32("transaction.remove.expired.transaction.cleanup.interval.ms"))),
		Logger:                logger,
	}
}

// managerConfig maps the broker's log.* keys onto the log manager.
func managerConfig(cfg *config.Config, defaults storage.LogConfig, logger *slog.Logger) storage.ManagerConfig {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	threads := int(cfg.MustInt32("log.cleaner.threads"))
	if !cfg.LogCleanerEnable || threads == 0 {
		threads = -1 // the log manager reads 0 as its default of one thread
	}
	return storage.ManagerConfig{
		Dirs:                    cfg.LogDirs,
		DefaultLogConfig:        defaults,
		Logger:                  logger,
		CheckpointInterval:      ms(cfg.LogFlushOffsetCheckpointIntervalMs),
		RetentionCheckInterval:  ms(cfg.LogRetentionCheckIntervalMs),
		CleanerThreads:          threads,
		CleanerDedupeBufferSize: cfg.MustInt64("log.cleaner.dedupe.buffer.size"),
		CleanerBackoff:          ms(cfg.MustInt64("log.cleaner.backoff.ms")),
	}
}

// voterEndpoints are the controller endpoints of controller.quorum.voters,
// named after the first controller listener.
func voterEndpoints(cfg *config.Config) map[int32]metadata.Endpoint {
	out := make(map[int32]metadata.Endpoint, len(cfg.ControllerQuorumVoters))
	for _, v := range cfg.ControllerQuorumVoters {
		out[v.ID] = metadata.Endpoint{Name: cfg.ControllerListenerNames[0], Host: v.Host, Port: uint16(v.Port),
			SecurityProtocol: securityProtocol(cfg, cfg.ControllerListenerNames[0])}
	}
	return out
}

// decompressionBudget is the memory that decompressing produced batches
// may hold at once: queued.max.request.bytes when set, otherwise (Kafka's
// -1, no limit on queued requests) MaxDecompressedSize, room for the
// largest batch Samsa accepts. It is a budget of its own, not shared with
// request bytes, so a request holding its bytes can never wait on itself.
func decompressionBudget(queuedMaxRequestBytes int64) int64 {
	if queuedMaxRequestBytes > 0 {
		return queuedMaxRequestBytes
	}
	return record.MaxDecompressedSize
}
