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
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
)

// Server is a running node.
type Server struct {
	cfg    *config.Config
	logger *slog.Logger

	logs      *storage.LogManager
	loader    *metadata.Loader
	raft      *raft.Node
	ctrl      *controller.Controller
	replicas  *replica.Manager
	broker    *broker.Broker
	groups    *group.Coordinator
	txns      *txn.Coordinator
	listeners []*network.Server
	clusterID string
}

// Start formats the data directories if this is the first start, recovers
// the logs, replays the metadata log, registers the broker and starts
// serving clients. On error everything already started is closed. level,
// when not nil, is the level of logger's handler: BROKER_LOGGER configs
// change it at runtime.
func Start(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (_ *Server, err error) {
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
	s.replicas = replica.NewManager(replica.Config{NodeID: cfg.NodeID, Logs: s.logs, Logger: logger, ProducerIDExpirationMs: cfg.ProducerIDExpirationMs})

	s.loader = metadata.NewLoader(s.clusterID, logger)
	s.raft, err = raft.Open(raft.Config{
		ID:      uint64(cfg.NodeID),
		Dir:     filepath.Join(s.metadataDir(), storage.MetadataLogDirName),
		Logger:  logger,
		Applier: s.loader,
	})
	if err != nil {
		return nil, fmt.Errorf("open metadata log: %w", err)
	}
	s.ctrl, err = controller.New(controller.Config{
		NodeID:                   cfg.NodeID,
		Raft:                     s.raft,
		Loader:                   s.loader,
		Logger:                   logger,
		Rand:                     rand.Reader,
		Now:                      time.Now,
		DefaultNumPartitions:     cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		ValidateTopicConfig:      config.ValidateTopicConfig,
	})
	if err != nil {
		return nil, err
	}
	if err := s.startCoordinators(); err != nil {
		return nil, err
	}
	s.broker = broker.New(broker.Config{
		NodeID:     cfg.NodeID,
		Static:     cfg,
		Controller: s.ctrl,
		Image:      s.loader.Image,
		Replicas:   s.replicas,
		Groups:     s.groups,
		Txns:       s.txns,
		Logger:     logger,
	})
	if level != nil {
		s.broker.SetLogLevel(level)
	}
	// The broker's publisher opens and deletes logs as metadata changes;
	// registered now, it first catches up on the replayed image.
	if err := s.loader.Register(s.broker); err != nil {
		return nil, err
	}
	if err := s.serve(); err != nil {
		return nil, err
	}
	return s, nil
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
	tcfg.Markers = broker.NewMarkerWriter(s.replicas, s.loader.Image, s.groups, s.logger)
	tcfg.GroupPartition = func(groupID string) (string, int32) { return "__consumer_offsets", s.groups.PartitionFor(groupID) }
	if err := tcfg.Validate(); err != nil {
		return err
	}
	s.txns = txn.New(tcfg)
	return nil
}

// serve bootstraps the metadata log if it is new, binds the client
// listeners, registers this broker with the controller and starts
// answering clients.
func (s *Server) serve() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ctrl.Bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap metadata: %w", err)
	}
	incarnation, err := metadata.RandomUuid(rand.Reader)
	if err != nil {
		return err
	}
	listeners, endpoints, err := s.bind()
	if err != nil {
		return err
	}
	var rack *string
	if s.cfg.BrokerRack != "" {
		rack = &s.cfg.BrokerRack
	}
	epoch, err := s.ctrl.RegisterBroker(ctx, s.cfg.NodeID, incarnation, endpoints, rack)
	if err != nil {
		for _, ln := range listeners {
			ln.Close()
		}
		return fmt.Errorf("register broker: %w", err)
	}
	s.broker.SetEpoch(epoch)
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
	if s.clusterID == "" {
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

// Close stops serving, then the metadata quorum, then flushes and
// checkpoints the logs. It is safe on a partly started server.
func (s *Server) Close() error {
	var errs []error
	for _, l := range s.listeners {
		errs = append(errs, l.Close())
	}
	// Transactions first: their marker writers report to the groups.
	if s.txns != nil {
		s.txns.Close()
	}
	if s.groups != nil {
		s.groups.Close()
	}
	if s.raft != nil {
		errs = append(errs, s.raft.Close())
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
// not run yet, rather than silently running something else.
func checkSupported(cfg *config.Config) error {
	if !cfg.HasRole("broker") || !cfg.HasRole("controller") {
		return fmt.Errorf("process.roles=%s is not supported yet: Samsa runs combined broker,controller nodes only", strings.Join(cfg.ProcessRoles, ","))
	}
	if len(cfg.ControllerQuorumVoters) > 1 {
		return fmt.Errorf("controller.quorum.voters lists %d voters: multi-node quorums are not supported yet, use one voter (this node)", len(cfg.ControllerQuorumVoters))
	}
	for _, v := range cfg.ControllerQuorumVoters {
		if v.ID != cfg.NodeID {
			return fmt.Errorf("controller.quorum.voters names node %d, but node.id is %d: the only voter must be this node", v.ID, cfg.NodeID)
		}
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
