package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/controllerchannel"
	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/coordinator/share"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/storage"
)

// component is one part of a node. Start brings it up, using the parts
// started before it, and may wait (for a controller, say) until ctx ends;
// a Start that fails leaves nothing of its part running. Close takes down
// a part whose Start succeeded.
type component interface {
	Start(ctx context.Context) error
	Close() error
}

// part is a component made of two functions; either may be nil.
type part struct {
	start func(ctx context.Context) error
	close func() error
}

func (p part) Start(ctx context.Context) error {
	if p.start == nil {
		return nil
	}
	return p.start(ctx)
}

func (p part) Close() error {
	if p.close == nil {
		return nil
	}
	return p.close()
}

// closer adapts a Close without an error.
func closer(f func()) func() error { return func() error { f(); return nil } }

// components lists the node's parts in start order, as process.roles
// says; Close takes them down in reverse. A new service (the registry,
// metrics) is one more entry.
//
// The list ends with the client listeners, the broker's lifecycle and
// then the opening of those listeners: registering needs the bound ports,
// clients are served only once the controller has unfenced this broker,
// and on the way down the controlled shutdown (lifecycle) runs while the
// listeners still serve.
func (s *Server) components() []component {
	cfg := s.cfg
	// The JWKS of OAUTHBEARER listeners are loaded as those listeners
	// are bound (by the controller listener's part and bindClients) and
	// stop refreshing after everything else has closed.
	cs := []component{part{close: s.closeJWKS}, part{s.startHTTP, s.closeHTTP}} // http.go
	if cfg.HasRole("broker") {
		cs = append(cs, part{s.openLogs, s.closeLogs})
	}
	if cfg.HasRole("controller") {
		cs = append(cs, s.quorum()...)
		if cfg.HasRole("broker") {
			// A combined node joining a quorum (join_combined.go).
			cs = append(cs, part{s.observeUntilJoined, closer(func() {
				if s.gate != nil {
					s.gate.close()
				}
			})})
		}
	} else {
		cs = append(cs, part{s.observe, closer(func() { s.observer.Close() })})
	}
	if !cfg.HasRole("broker") {
		return append(cs, part{start: s.observeMetrics}, part{start: s.controllerReady}, part{start: s.markReady})
	}
	return append(cs,
		part{start: s.waitLogs},
		part{s.openChannel, closer(func() { s.channel.Close() })},
		part{s.startReplicas, closer(func() { s.replicas.Close() })},
		part{s.startShares, closer(func() { s.sharePersister.Close(); s.shares.Close() })},
		part{s.startGroups, closer(func() { s.groups.Close() })},
		part{s.startMarkers, closer(func() { s.markers.Close() })},
		part{s.startTxns, closer(func() { s.txns.Close() })},
		part{s.startBroker, closer(func() { s.fetchers.Close() })},
		part{start: s.observeMetrics},
		part{s.bindClients, s.closeClients},
		part{s.register, s.shutdown},
		part{start: s.serveClients},
		part{start: s.markReady},
	)
}

// quorum are the parts of a voter: the controller listener (shared by
// the raft transport and Kafka requests) and the transport when anyone
// needs to reach it, the raft node, the
// controller and its request handlers on the controller listener.
func (s *Server) quorum() []component {
	cfg := s.cfg
	var cs []component
	// A controller-only node always serves its listener: brokers reach
	// the quorum only through it.
	listen := len(cfg.ControllerQuorumVoters) > 1 || !cfg.HasRole("broker") || s.dynamicQuorum()
	if listen {
		// With a listener there is a transport, even for a sole static
		// voter: an upgrade to kraft.version 1 may add voters.
		cs = append(cs,
			part{s.bindControllerListener, func() error { return s.ctrlLn.Close() }},
			part{s.startTransport, func() error { return s.transport.Close() }})
	}
	cs = append(cs,
		part{s.openRaft, s.closeRaft},
		part{s.startController, func() error { return s.ctrl.Close() }},
	)
	if listen {
		cs = append(cs, part{s.serveController, func() error { return s.ctrlAPI.Close() }},
			part{s.startVoterUpdates, closer(s.stopVoterUpdates)}) // voter_update.go
	}
	return cs
}

// voters are the controllers' addresses by id: controller.quorum.voters,
// or in a dynamic quorum the voters the metadata log records now.
func (s *Server) voters() map[int32]string {
	voters := make(map[int32]string, len(s.cfg.ControllerQuorumVoters))
	for _, v := range s.cfg.ControllerQuorumVoters {
		voters[v.ID] = v.Addr()
	}
	for id, addr := range s.discovered {
		voters[id] = addr
	}
	if s.dynamicQuorum() && s.raft != nil {
		vs, _, _ := s.raft.Voters(context.Background())
		for _, v := range vs {
			if len(v.Endpoints) > 0 {
				voters[int32(v.ID)] = v.Endpoints[0].Addr()
			}
		}
	}
	return voters
}

// openLogs recovers the partition logs.
func (s *Server) openLogs(context.Context) error {
	defaults, err := broker.PartitionConfig(s.cfg, nil)
	if err != nil {
		return err
	}
	defaults.Log.Fault = s.hooks.Fault
	defaults.Log.Files = storage.NewFileCache(s.cfg.SamsaLogMaxOpenFiles)
	mcfg := managerConfig(s.cfg, defaults.Log, s.logger)
	mcfg.OnDirFailure = func(dir string, err error, online int) {
		if online == 0 {
			// Kafka halts a broker whose every log directory failed; the
			// owner of this node stops it (a controlled shutdown first, so
			// its leaderships move at once).
			s.fail(fmt.Errorf("every log directory has failed (last: %s): %w", dir, err))
		}
	}
	logs, err := storage.NewLogManager(mcfg)
	if err != nil {
		return err
	}
	s.logs = logs
	// The logs load while the metadata log is opened and replayed (the
	// parts up to waitLogs need no partition log): on a node with many
	// partitions both take seconds.
	s.logsLoaded = make(chan struct{})
	go func() {
		defer close(s.logsLoaded)
		if err := s.logs.Load(); err != nil {
			s.logsErr = fmt.Errorf("load logs: %w", err)
		}
	}()
	return nil
}

// waitLogs waits until openLogs has loaded the partition logs, which the
// parts after it use.
func (s *Server) waitLogs(ctx context.Context) error {
	select {
	case <-s.logsLoaded:
		return s.logsErr
	case <-ctx.Done():
		return fmt.Errorf("loading logs: %w", context.Cause(ctx))
	}
}

// closeLogs waits for the logs to finish loading, then flushes and closes
// them, marking a clean shutdown. A load that failed has closed what it
// opened and must not be marked clean.
func (s *Server) closeLogs() error {
	<-s.logsLoaded
	if s.logsErr != nil {
		return nil
	}
	return s.logs.Close()
}

func (s *Server) bindControllerListener(ctx context.Context) error {
	ln, err := s.bindController()
	if err != nil {
		return err
	}
	name := s.cfg.ControllerListenerNames[0]
	var sc *network.SASLConfig
	if isSASL(s.cfg.ListenerSecurityProtocolMap[name]) {
		var warnings []string
		if sc, warnings, err = saslListener(s.cfg, name, s.saslDeps(ctx)); err != nil {
			ln.Close()
			return err
		}
		for _, w := range warnings {
			s.logger.Warn(w)
		}
		s.logger.Info("SASL authentication", "listener", name, "mechanisms", strings.Join(sc.Mechanisms, ","))
	}
	s.ctrlLn = newSplitListener(ln, s.logger, s.tls.servers[name], name, sc, s.authorizer)
	return nil
}

func (s *Server) startTransport(context.Context) error {
	tpeers := make(map[uint64]string, len(s.cfg.ControllerQuorumVoters))
	for id, addr := range s.voters() {
		tpeers[uint64(id)] = addr
	}
	t, err := raft.NewTCPTransport(raft.TCPConfig{
		ID: uint64(s.cfg.NodeID), ClusterID: s.clusterID, Peers: tpeers,
		Listener: s.ctrlLn.raft, Logger: s.logger, Dial: s.dial.controller.raw(),
	})
	if err != nil {
		return err
	}
	s.transport = t
	return nil
}

// openRaft opens the metadata log and its raft node, whose applier is the
// Loader.
func (s *Server) openRaft(context.Context) error {
	var peers []uint64
	for _, v := range s.cfg.ControllerQuorumVoters {
		peers = append(peers, uint64(v.ID))
	}
	rcfg := raft.Config{
		ID:      uint64(s.cfg.NodeID),
		Peers:   peers,
		Dir:     filepath.Join(s.metadataDir(), storage.MetadataLogDirName),
		Logger:  s.logger,
		Applier: s.loader,
		Fault:   s.hooks.Fault,
		// A restart loads the image instead of replaying every change
		// since the last snapshot (a restart of a node with many
		// partitions writes a change of leader for each, twice).
		SnapshotOnClose: true,
	}
	rcfg.OnVoters = s.onVoters
	if s.dynamicQuorum() {
		rcfg.Peers, rcfg.Voters, rcfg.Join = s.initialVoters()
		if hasMetadataLog(rcfg.Dir) {
			// The log knows the voters (this node may be one): the
			// format flags and discovery are for a new log only.
			rcfg.Join = false
		}
		if rcfg.Join && s.cfg.HasRole("broker") && !s.cfg.Quorum.NoInitialControllers {
			return fmt.Errorf("controller.quorum.bootstrap.servers=%s names other controllers and this node has no metadata log: start the first controllers with --initial-controllers (or one with --standalone); a node that joins them is formatted with --no-initial-controllers",
				strings.Join(s.cfg.ControllerQuorumBootstrapServers, ","))
		}
		if rcfg.Join && s.cfg.HasRole("broker") {
			// Its broker side observes the quorum until it is added.
			s.gate = newJoinGate(s.loader)
			rcfg.Applier = raftSide{s.gate}
		}
	}
	if s.transport != nil {
		rcfg.Transport = s.transport
	}
	n, err := raft.Open(rcfg)
	if err != nil {
		return fmt.Errorf("open metadata log: %w", err)
	}
	s.raft = n
	if s.transport != nil {
		s.transport.Attach(s.raft)
	}
	if rcfg.Join {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopJoin, s.joinDone = cancel, make(chan struct{})
		go s.discoverVoters(ctx)
	}
	return nil
}

func (s *Server) startController(context.Context) error {
	cfg := s.cfg
	boot, err := scramBootstrapRecords(cfg.AddScram)
	if err != nil {
		return err
	}
	// The controller measures controller_mutation_rate with a quota
	// manager of its own, as Kafka's controller has its QuotaManagers.
	quotas := security.NewQuotaManager(cfg.QuotaWindowSize, cfg.QuotaWindowNum)
	if err := s.loader.Register(security.QuotaPublisher{M: quotas}); err != nil {
		return err
	}
	features, err := metadata.InitialFeatures(cfg.ReleaseVersion, cfg.Features)
	if err != nil {
		return err
	}
	if s.dynamicQuorum() {
		// The quorum's own level: a dynamic quorum is kraft.version 1
		// (KIP-853), recorded with the other levels when the log is new.
		features[metadata.KRaftVersionFeature] = 1
	}
	c, err := controller.New(controller.Config{
		NodeID:                       cfg.NodeID,
		Raft:                         s.raft,
		Loader:                       s.loader,
		Logger:                       s.logger,
		Rand:                         rand.Reader,
		Now:                          time.Now,
		DefaultNumPartitions:         cfg.NumPartitions,
		DefaultReplicationFactor:     cfg.DefaultReplicationFactor,
		ValidateTopicConfig:          config.ValidateTopicConfig,
		ValidateGroupConfigs:         cfg.ValidateGroupConfigs,
		SessionTimeout:               time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		AutoLeaderRebalance:          cfg.AutoLeaderRebalanceEnable,
		UncleanLeaderElectionEnable:  cfg.UncleanLeaderElectionEnable,
		MinInsyncReplicas:            cfg.MinInsyncReplicas,
		LeaderImbalanceCheckInterval: time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		Voters:                       voterEndpoints(cfg),
		DynamicQuorum:                s.dynamicQuorum(),
		ControllerListener:           cfg.ControllerListenerNames[0],
		BootstrapRecords:             boot,
		InitialFeatures:              features,
		Quotas:                       quotas,
		Tokens: controller.TokenConfig{
			SecretKey:           cfg.DelegationTokenSecretKey,
			MaxLifetime:         time.Duration(cfg.DelegationTokenMaxLifetimeMs) * time.Millisecond,
			ExpiryTime:          time.Duration(cfg.DelegationTokenExpiryTimeMs) * time.Millisecond,
			ExpiryCheckInterval: time.Duration(cfg.DelegationTokenExpiryCheckIntervalMs) * time.Millisecond,
		},
	})
	if err != nil {
		return err
	}
	s.ctrl = c
	s.ctrl.Start()
	// The controller listener authorizes the nodes (mux.go) with the
	// ACLs of the image this node has applied.
	if err := s.publishACLs(); err != nil {
		s.ctrl.Close()
		return err
	}
	return nil
}

// serveController serves Kafka requests on the controller listener
// (mux.go).
func (s *Server) serveController(context.Context) error {
	api := newControllerMux(s.ctrl, s.raft, s.ctrlLn.sasl != nil, s.authorizer)
	ncfg := network.Config{
		Listener:       s.cfg.ControllerListenerNames[0],
		MaxRequestSize: s.cfg.SocketRequestMaxBytes,
		Handler:        api,
		Versions:       api.versions,
		Requests:       s.metrics.RequestMetrics(),
		Logger:         s.logger,
	}
	if srv := s.tls.servers[ncfg.Listener]; srv != nil {
		// The split listener ran the handshake; the connections arrive
		// under TLS and only their principal is left to set.
		ncfg.TLSPrincipal = srv.Principal
	}
	ncfg.SASL = s.ctrlLn.sasl
	s.ctrlAPI = network.Serve(s.ctrlLn.kafka, ncfg)
	s.logger.Info("serving the controller quorum", "listener", s.cfg.ControllerListenerNames[0], "addr", s.ctrlLn.ln.Addr().String(), "voters", len(s.cfg.ControllerQuorumVoters))
	return nil
}

// controllerReady waits, on a controller-only node, until the metadata
// log has a metadata.version.
func (s *Server) controllerReady(ctx context.Context) error {
	if s.stopJoin != nil {
		// A joining controller is ready to be added; it waits for no
		// leader (discoverVoters said so in the log).
		s.logger.Info("controller ready to join the quorum", "node.id", s.cfg.NodeID, "directory.id", storage.UUIDString(s.metadataDirID))
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := s.bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap metadata: %w", err)
	}
	s.logger.Info("controller ready", "node.id", s.cfg.NodeID)
	return nil
}

// observe starts a broker-only node's metadata observer and waits until
// it has caught up with the quorum leader.
func (s *Server) observe(ctx context.Context) error { return s.observeWith(ctx, s.loader) }

// observeWith is observe with the observer feeding applier.
func (s *Server) observeWith(ctx context.Context, applier raft.Applier) error {
	if s.dynamicQuorum() {
		// No controller.quorum.voters: learn them from the bootstrap
		// servers (controller.quorum.bootstrap.servers).
		dctx, cancel := context.WithTimeout(ctx, startupTimeout)
		err := s.discoverObserverVoters(dctx)
		cancel()
		if err != nil {
			return err
		}
	}
	voters := s.voters()
	s.observer = raft.NewObserver(raft.ObserverConfig{
		NodeID: s.cfg.NodeID, Voters: voters, Listener: s.cfg.ControllerListenerNames[0], Applier: applier, Logger: s.logger, Dialer: s.dial.controller.kclient(),
		Ready: func() bool {
			_, ok := s.loader.Image().Features()[metadata.MetadataVersionFeature]
			return ok
		},
	})
	s.observer.Start()
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := s.observer.WaitCaughtUp(ctx); err != nil {
		s.observer.Close()
		return err
	}
	s.logger.Info("caught up on the metadata log", "offset", s.loader.Image().Offset, "voters", len(voters))
	return nil
}

// openChannel opens the channel to the active controller: the local one
// when it leads, on a voter; the leader the observer learns, otherwise.
func (s *Server) openChannel(context.Context) error {
	ccfg := controllerchannel.Config{NodeID: s.cfg.NodeID, Voters: s.voters(), Logger: s.logger, Dialer: s.dial.controller.kclient()}
	if s.ctrl != nil {
		leaders := controllerchannel.RaftLeaders{Node: s.raft}
		if s.transport != nil {
			// The transport follows the voter set (onVoters).
			leaders.Peers = s.transport.Peers
		}
		ccfg.Local, ccfg.Leaders = s.ctrl, leaders
		if s.observer != nil {
			// A combined node joining the quorum (join_combined.go).
			ccfg.Leaders = joinLeaders{raft: leaders, observer: s.observer}
		}
	} else {
		ccfg.Leaders = s.observer
	}
	s.channel = controllerchannel.New(ccfg)
	return nil
}

func (s *Server) startReplicas(context.Context) error {
	cfg := s.cfg
	s.replicas = replica.NewManager(replica.Config{
		NodeID:                          cfg.NodeID,
		DecompressionBudget:             record.NewBudget(decompressionBudget(cfg.QueuedMaxRequestBytes)),
		Logs:                            s.logs,
		Logger:                          s.logger,
		ProducerIDExpirationMs:          cfg.ProducerIDExpirationMs,
		ReplicaLagTimeMax:               time.Duration(cfg.ReplicaLagTimeMaxMs) * time.Millisecond,
		HighWatermarkCheckpointInterval: time.Duration(cfg.ReplicaHighWatermarkCheckpointIntervalMs) * time.Millisecond,
		AlterPartition:                  s.alterPartition,
		ReplicaEligible: func(id int32) bool {
			b, ok := s.loader.Image().Broker(id)
			return ok && b.Eligible()
		},
	})
	return nil
}

// alterPartition is the replica manager's hook for ISR changes. The
// controller's answer lacks the replica set; the image has it.
func (s *Server) alterPartition(ctx context.Context, r replica.AlterPartitionRequest) (replica.PartitionState, error) {
	st, err := s.channel.AlterPartition(ctx, s.lifecycle.Epoch(), r)
	if err != nil {
		return st, err
	}
	if t, ok := s.loader.Image().TopicByID(metadata.Uuid(r.TopicID)); ok && int(r.Partition) < len(t.Partitions) {
		st.Replicas = t.Partitions[r.Partition].Replicas
	}
	return st, nil
}

// The group and transaction coordinators load their partitions later, as
// the broker's publisher learns which partitions of __consumer_offsets
// and __transaction_state it leads.

func (s *Server) startGroups(context.Context) error {
	gcfg := groupConfig(s.cfg, s.loader, s.logger)
	s.shareGroupConfig(&gcfg) // shares.go
	s.groups = group.New(gcfg)
	return nil
}

func (s *Server) startMarkers(context.Context) error {
	mcfg := txn.MarkerChannelConfig{
		NodeID: s.cfg.NodeID, Replicas: s.replicas, Image: s.loader.Image, Groups: s.groups,
		Listener: s.cfg.InterBrokerListenerName, Logger: s.logger,
	}
	if d := s.dial.interBroker; !d.plain() {
		clientID := fmt.Sprintf("samsa-txn-markers-%d", s.cfg.NodeID)
		mcfg.Dial = func(ctx context.Context, addr string) (txn.PeerConn, error) {
			c, err := d.dial(ctx, addr, clientID)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	s.markers = txn.NewMarkerChannel(mcfg)
	return nil
}

func (s *Server) startTxns(context.Context) error {
	tcfg := txnConfig(s.cfg, s.logger)
	// New producer ids come from the broker's blocks; the broker exists
	// before the first request reaches the coordinator.
	tcfg.ProducerIDs = func(ctx context.Context) (int64, error) { return s.broker.NextProducerID(ctx) }
	tcfg.Markers = s.markers
	tcfg.GroupPartition = func(groupID string) (string, int32) { return "__consumer_offsets", s.groups.PartitionFor(groupID) }
	tcfg.TransactionVersion = func() int16 { return s.loader.Image().Features()[metadata.TransactionVersionFeature] }
	if err := tcfg.Validate(); err != nil {
		return err
	}
	s.txns = txn.New(tcfg)
	return nil
}

// startShares starts the share coordinator, whose partitions the
// broker's publisher loads, and the Persister through which this node
// reaches the share coordinator of any share partition. It comes before
// the group coordinator and the broker, which use the Persister, and
// closes after them.
func (s *Server) startShares(context.Context) error {
	cfg := s.cfg
	scfg := share.Config{
		NumPartitions:                    cfg.ShareCoordinatorStateTopicNumPartitions,
		SnapshotUpdateRecordsPerSnapshot: int(cfg.ShareCoordinatorSnapshotUpdateRecordsPerSnapshot),
		PruneInterval:                    time.Duration(cfg.ShareCoordinatorStateTopicPruneIntervalMs) * time.Millisecond,
		TopicPartitions: func(id [16]byte) (int32, bool) {
			t, ok := s.loader.Image().TopicByID(metadata.Uuid(id))
			if !ok {
				return 0, false
			}
			return int32(len(t.Partitions)), true
		},
		Logger: s.logger,
	}
	if err := scfg.Validate(); err != nil {
		return err
	}
	s.shares = share.New(scfg)
	pcfg := share.PersisterConfig{
		NodeID: cfg.NodeID, Local: s.shares, Image: s.loader.Image, Listener: cfg.InterBrokerListenerName, Logger: s.logger,
		// The broker exists before the first share partition asks.
		EnsureTopic: func(ctx context.Context) error {
			_, err := s.broker.EnsureShareStateTopic(ctx)
			return err
		},
	}
	if d := s.dial.interBroker; !d.plain() {
		clientID := fmt.Sprintf("samsa-share-persister-%d", cfg.NodeID)
		pcfg.Dial = func(ctx context.Context, addr string) (replica.PeerConn, error) {
			c, err := d.dial(ctx, addr, clientID)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	s.sharePersister = share.NewPersister(pcfg)
	return nil
}

// SharePersister is how this node reads and writes the state of share
// partitions (share.NewPersister over its share coordinator); nil on a
// controller-only node.
func (s *Server) SharePersister() share.Persister {
	if s.sharePersister == nil {
		return nil
	}
	return s.sharePersister
}

func (s *Server) startBroker(context.Context) error {
	activeController := func() int32 {
		if id := s.raft.Leader(); id != 0 {
			return int32(id)
		}
		return -1
	}
	if s.observer != nil {
		activeController = s.observer.Known
	}
	fcfg := fetcherConfig(s.cfg, s.logger)
	fcfg.BrokerEpoch = func() int64 { return s.broker.Epoch() }
	fcfg.Image, fcfg.Replicas = s.loader.Image, s.replicas
	if d := s.dial.interBroker; !d.plain() {
		clientID := fmt.Sprintf("samsa-replica-fetcher-%d", s.cfg.NodeID)
		fcfg.Dial = func(ctx context.Context, addr string) (replica.PeerConn, error) {
			c, err := d.dial(ctx, addr, clientID)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	s.fetchers = replica.NewFetcherManager(fcfg)
	s.quotas = security.NewQuotaManager(s.cfg.QuotaWindowSize, s.cfg.QuotaWindowNum)
	s.broker = broker.New(broker.Config{
		NodeID:     s.cfg.NodeID,
		Static:     s.cfg,
		Controller: s.channel,
		Image:      s.loader.Image,
		Replicas:   s.replicas,
		Fetchers:   s.fetchers,
		Groups:     s.groups,
		Txns:       s.txns,
		Shares:     s.shares,
		ShareParts: s.shareParts,
		TxnPartitions: txn.NewPartitionAdder(txn.PartitionAdderConfig{NodeID: s.cfg.NodeID, Image: s.loader.Image,
			Coordinator: s.txns, Channel: s.markers, Logger: s.logger,
			RetryBackoff: time.Duration(s.cfg.AddPartitionsToTxnRetryBackoffMs) * time.Millisecond,
			RetryMax:     time.Duration(s.cfg.AddPartitionsToTxnRetryBackoffMaxMs) * time.Millisecond}),
		Quotas:           s.quotas,
		Authorizer:       s.authorizer,
		Metrics:          s.metrics.TopicMetrics(),
		Logger:           s.logger,
		ActiveController: activeController,
	})
	if s.level != nil {
		s.broker.SetLogLevel(s.level)
	}
	// The authorizer's ACLs and the client quotas follow the image,
	// registered before the broker so that all first see the replayed
	// image.
	if err := s.loader.Register(security.QuotaPublisher{M: s.quotas}); err != nil {
		s.fetchers.Close()
		return err
	}
	if err := s.publishACLs(); err != nil {
		s.fetchers.Close()
		return err
	}
	// The broker's publisher opens and deletes logs as metadata changes;
	// registered now, it first catches up on the replayed image.
	if err := s.loader.Register(s.broker); err != nil {
		s.fetchers.Close()
		return err
	}
	// Dynamic connection limits reach the listeners' quotas.
	s.connections = s.newConnectionQuotas()
	if err := s.loader.Register(&connectionLimitsPublisher{static: s.cfg, nodeID: s.cfg.NodeID, quotas: s.connections, logger: s.logger}); err != nil {
		s.fetchers.Close()
		return err
	}
	// Dynamic listener.name.<l>.ssl.* changes reload the TLS material.
	if err := s.loader.Register(&tlsReloader{static: s.cfg, nodeID: s.cfg.NodeID, tls: s.tls, logger: s.logger}); err != nil {
		s.fetchers.Close()
		return err
	}
	return nil
}

// publishACLs has the node's authorizer follow the metadata image's
// ACLs, once: a combined node's controller registers it before its broker
// would.
func (s *Server) publishACLs() error {
	if s.authorizer == nil || s.aclsPublished {
		return nil
	}
	if err := s.loader.Register(security.ACLPublisher{A: s.authorizer}); err != nil {
		return err
	}
	s.aclsPublished = true
	return nil
}

// newAuthorizer is the node's authorizer (Kafka's StandardAuthorizer,
// checkAuthorizer made sure), or nil when authorizer.class.name is unset.
func newAuthorizer(cfg *config.Config) (*security.Authorizer, error) {
	if cfg.AuthorizerClassName == "" {
		return nil, nil
	}
	return security.NewAuthorizer(security.Config{SuperUsers: cfg.SuperUsers, AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound})
}

// bindClients waits for an active controller (bootstrapping the metadata
// log if it is new) and binds the client listeners, not serving them yet.
func (s *Server) bindClients(ctx context.Context) error {
	s.readyBy = time.Now().Add(startupTimeout)
	ctx, cancel := context.WithDeadline(ctx, s.readyBy)
	defer cancel()
	if err := s.bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap metadata: %w", err)
	}
	var err error
	if s.sasl, err = s.saslListeners(ctx); err != nil {
		return err
	}
	s.bound, s.endpoints, err = s.bind()
	return err
}

// closeClients stops serving clients, or closes the listeners not served
// yet.
func (s *Server) closeClients() error {
	var errs []error
	if s.listeners == nil {
		for _, ln := range s.bound {
			ln.Close()
		}
	}
	for _, l := range s.listeners {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// register registers this broker with the active controller and waits
// until the controller unfences it and this node has replayed that.
func (s *Server) register(ctx context.Context) error {
	ctx, cancel := context.WithDeadline(ctx, s.readyBy)
	defer cancel()
	var rack *string
	if s.cfg.BrokerRack != "" {
		rack = &s.cfg.BrokerRack
	}
	s.lifecycle = controllerchannel.NewLifecycle(controllerchannel.LifecycleConfig{
		Channel: s.channel, Logger: s.logger, ClusterID: s.clusterID, NodeID: s.cfg.NodeID,
		Endpoints: s.endpoints, Rack: rack,
		Interval:       time.Duration(s.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond,
		MetadataOffset: func() int64 { return int64(s.loader.Image().Offset) },
		OnEpoch: func(epoch int64) {
			s.broker.SetEpoch(epoch)
			s.logs.SetBrokerEpoch(epoch)
		},
		PreviousBrokerEpoch: s.logs.PreviousBrokerEpoch(),
		SessionTimeout:      time.Duration(s.cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		OnSession:           s.replicas.SetFenced,
	})
	s.lifecycle.Start()
	err := s.lifecycle.WaitUnfenced(ctx)
	if err == nil {
		err = s.waitUnfencedLocally(ctx)
	}
	if err != nil {
		s.shutdown()
	}
	return err
}

// shutdown moves this broker's leadership away (controlled shutdown).
func (s *Server) shutdown() error {
	timeout := 10 * time.Second
	if len(s.voters()) <= 1 && s.cfg.HasRole("controller") {
		timeout = 0 // nobody to hand leadership to
	}
	s.lifecycle.Shutdown(timeout)
	return nil
}

// serveClients starts answering clients on the bound listeners.
func (s *Server) serveClients(context.Context) error {
	budget := record.NewBudget(requestBudget(s.cfg.QueuedMaxRequestBytes, s.cfg.SocketRequestMaxBytes))
	for name, ln := range s.bound {
		ncfg := network.Config{
			Listener:       name,
			MaxRequestSize: s.cfg.SocketRequestMaxBytes,
			RequestBudget:  budget,
			SASL:           s.sasl[name],
			Connections:    s.connections,
			Requests:       s.metrics.RequestMetrics(),
			Handler:        s.broker,
			Versions:       s.broker.Versions(),
			Logger:         s.logger,
		}
		protocol := s.cfg.ListenerSecurityProtocolMap[name]
		if srv := s.tls.servers[name]; srv != nil {
			// On SASL_SSL the SASL exchange then sets the principal.
			ncfg.TLS, ncfg.TLSPrincipal = srv.Config(), srv.Principal
		}
		s.listeners = append(s.listeners, network.Serve(ln, ncfg))
		s.logger.Info("serving Kafka clients", "listener", name, "addr", ln.Addr().String(), "security.protocol", protocol)
	}
	return nil
}
