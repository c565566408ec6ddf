package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/controllerchannel"
	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/coordinator/share"
	"github.com/samsa-io/samsa/internal/coordinator/txn"
	"github.com/samsa-io/samsa/internal/httpapi"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/record"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/sharepartition"
	"github.com/samsa-io/samsa/internal/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Server is a running node.
type Server struct {
	cfg    *config.Config
	logger *slog.Logger
	level  *slog.LevelVar

	// parts are the node's components in start order (parts.go); the
	// first started of them are up.
	parts   []component
	started int

	// failed is closed, with failure set, when the node can no longer
	// serve (every log directory failed); its owner should Close it.
	failed   chan struct{}
	failOnce sync.Once
	failure  error

	clusterID string
	// metadataDirID is the directory.id of the metadata log directory:
	// this controller's directory id in a dynamic quorum (KIP-853).
	metadataDirID [16]byte
	// stopJoin ends discoverVoters (dynamic_quorum.go); nil unless joining.
	stopJoin context.CancelFunc
	// discovered are the voters' controller addresses a broker-only node
	// of a dynamic quorum learned from its bootstrap servers.
	discovered map[int32]string
	joinDone   chan struct{}
	loader     *metadata.Loader
	logs       *storage.LogManager
	// logsLoaded is closed when the logs have loaded (openLogs), with
	// logsErr set if that failed.
	logsLoaded chan struct{}
	logsErr    error
	ctrlLn     *splitListener
	transport  *raft.TCPTransport
	raft       *raft.Node
	ctrl       *controller.Controller
	ctrlAPI    *network.Server
	observer   *raft.Observer // broker-only nodes
	channel    *controllerchannel.Channel
	replicas   *replica.Manager
	groups     *group.Coordinator
	markers    *txn.MarkerChannel
	txns       *txn.Coordinator
	broker     *broker.Broker
	fetchers   *replica.FetcherManager // replica fetchers

	// stopUpdates ends the loop of voter_update.go.
	stopUpdates func()
	// gate, on a combined node joining a quorum, hands the Loader from
	// its observer to raft (join_combined.go); nil otherwise.
	gate *joinGate

	// bound are the client listeners, open but not served until this
	// broker is unfenced; endpoints are what it registers.
	bound     map[string]net.Listener
	endpoints []metadata.Endpoint
	// sasl are the authenticators of the SASL client listeners, by name.
	sasl map[string]*network.SASLConfig
	// jwks are the key sets of OAUTHBEARER's JWKS validator on this
	// node's listeners (oauthbearer.go).
	jwks      []*security.JWKS
	listeners []*network.Server
	// quotas measures the broker's clients (Kafka's QuotaManagers),
	// connections limits their connections (Kafka's ConnectionQuotas).
	quotas      *security.QuotaManager
	connections *network.ConnectionQuotas
	lifecycle   *controllerchannel.Lifecycle
	// readyBy bounds the waits between bootstrap and unfencing.
	readyBy time.Time
	hooks   Hooks
	// shareParts serves share partitions; nil without a share persister
	// (shares.go).
	shareParts *sharepartition.Manager
	// tls is the material of the SSL listeners and of the clients of
	// other nodes' SSL listeners (tls.go).
	tls *nodeTLS
	// dial is how this node dials the others (TLS, SASL; sasl_client.go).
	dial nodeDialers
	// authorizer is nil when authorizer.class.name is unset; it decides
	// for the broker's handlers and the controller listener (mux.go).
	authorizer    *security.Authorizer
	aclsPublished bool

	// shares is the share coordinator (KIP-932); sharePersister is how
	// this node's share partitions and group coordinator reach it.
	shares         *share.Coordinator
	sharePersister *share.StatePersister

	// metrics are the node's Prometheus metrics and http its HTTP
	// listener (http.go), nil without http.listeners; probe is what its
	// /readyz reads.
	metrics *metrics.Registry
	http    *httpapi.Server
	probe   atomic.Pointer[probe]
}

// Hooks are a node's injection points for tests; production passes none.
type Hooks struct {
	// Fault is called before each write and fsync of the segment files
	// of the partition logs and of the metadata log, with the operation
	// and the path; an error it returns is that operation's failure
	// (storage.LogConfig.Fault, raft.Config.Fault). internal/powerloss
	// uses it to model a power failure.
	Fault func(op, path string) error
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
// metadata log from the quorum leader (raft.Observer) instead.
func Start(cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (*Server, error) {
	return StartContext(context.Background(), cfg, logger, level)
}

// StartContext is Start that gives up when ctx is done (a SIGTERM during
// start-up): every wait of start-up — for a controller, for this broker's
// registration and unfencing — returns, what was started is closed, and
// the error wraps ctx's cause.
func StartContext(ctx context.Context, cfg *config.Config, logger *slog.Logger, level *slog.LevelVar) (_ *Server, err error) {
	return StartWithHooks(ctx, cfg, logger, level, Hooks{})
}

// StartWithHooks is StartContext with test hooks.
func StartWithHooks(ctx context.Context, cfg *config.Config, logger *slog.Logger, level *slog.LevelVar, hooks Hooks) (_ *Server, err error) {
	if err := checkSupported(cfg); err != nil {
		return nil, err
	}
	// Before anything is written: missing or bad TLS material stops the
	// node here, naming the key.
	nodeTLS, err := newNodeTLS(cfg)
	if err != nil {
		return nil, err
	}
	dial, err := newNodeDialers(cfg, nodeTLS)
	if err != nil {
		return nil, err
	}
	authorizer, err := newAuthorizer(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: logger, level: level, hooks: hooks, failed: make(chan struct{}), tls: nodeTLS, dial: dial, authorizer: authorizer}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.checkPortsFree(); err != nil {
		return nil, err
	}
	if err := s.format(); err != nil {
		return nil, err
	}
	s.loader = metadata.NewLoader(s.clusterID, logger)
	s.parts = s.components()
	for _, c := range s.parts {
		t0 := time.Now()
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
		s.logSlow("started", c, t0)
		s.started++
	}
	return s, nil
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
		if _, _, join := s.initialVoters(); s.dynamicQuorum() && (join || len(s.cfg.Quorum.InitialControllers) > 0) {
			return errors.New("these data directories are not formatted and this controller is one of several (--initial-controllers, or joining the quorum of controller.quorum.bootstrap.servers): every node needs the same cluster id; start each with --cluster-id (generate one with `samsa cluster new-id`)")
		}
		id, err := metadata.RandomUuid(rand.Reader)
		if err != nil {
			return err
		}
		s.clusterID = id.String()
		s.logger.Info("formatting data directories", "cluster.id", s.clusterID, "dirs", dirs)
	}
	if s.dynamicQuorum() {
		if err := s.formatMetadataDir(); err != nil {
			return err
		}
	}
	if err := storage.FormatDirs(dirs, s.clusterID, s.cfg.NodeID); err != nil {
		return err
	}
	mp, err := storage.ReadMetaProperties(s.metadataDir())
	if err != nil {
		return err
	}
	s.metadataDirID = mp.DirectoryID
	return nil
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

// Failed is closed when the node can no longer serve and should be
// closed: every log directory failed, as Kafka halts such a broker. Err
// then says why.
func (s *Server) Failed() <-chan struct{} { return s.failed }

// Err is why Failed was closed, nil before.
func (s *Server) Err() error {
	select {
	case <-s.failed:
		return s.failure
	default:
		return nil
	}
}

func (s *Server) fail(err error) {
	s.failOnce.Do(func() {
		s.logger.Error("node cannot serve any more; stopping", "err", err)
		s.failure = err
		close(s.failed)
	})
}

// ClusterID is the cluster id from meta.properties.
func (s *Server) ClusterID() string { return s.clusterID }

// Close moves this broker's leadership away (controlled shutdown), stops
// serving, then the metadata quorum, then flushes and checkpoints the
// logs: the started components in reverse order (components). It is safe
// on a partly started server.
func (s *Server) Close() error {
	var errs []error
	for i := s.started - 1; i >= 0; i-- {
		t0 := time.Now()
		errs = append(errs, s.parts[i].Close())
		s.logSlow("stopped", s.parts[i], t0)
	}
	return errors.Join(errs...)
}

// slowPart is how long a part's start or stop may take before the node
// logs it: with many partitions, opening and closing the logs and
// publishing them are what an operator waits for.
const slowPart = 200 * time.Millisecond

// logSlow logs a part's start or stop that took slowPart or more, naming
// it by its function.
func (s *Server) logSlow(what string, c component, t0 time.Time) {
	d := time.Since(t0)
	if d < slowPart {
		return
	}
	s.logger.Info(what+" node part", "part", partName(c, what == "started"), "took", d.Round(time.Millisecond))
}

// partName is the name of the function behind a part's Start or Close
// (its method name, as in "openLogs").
func partName(c component, start bool) string {
	p, ok := c.(part)
	if !ok {
		return fmt.Sprintf("%T", c)
	}
	fn := any(p.close)
	if start {
		fn = p.start
	}
	v := reflect.ValueOf(fn)
	if v.IsNil() {
		return "-"
	}
	name := runtime.FuncForPC(v.Pointer()).Name()
	name = name[strings.LastIndexByte(name, '.')+1:]
	return strings.TrimSuffix(name, "-fm")
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
// controller.quorum.voters, the quorum is dynamic (KIP-853,
// dynamic_quorum.go): controllers and broker-only nodes find it through
// controller.quorum.bootstrap.servers.
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
	if len(cfg.AddScram) > 0 && !ctrl {
		return errors.New("--add-scram needs process.roles to contain controller: the controllers bootstrap the metadata log")
	}
	if err := checkQuorumFormat(cfg); err != nil {
		return err
	}
	isVoter := slices.ContainsFunc(cfg.ControllerQuorumVoters, func(v config.Voter) bool { return v.ID == cfg.NodeID })
	switch {
	case ctrl && !isVoter && len(cfg.ControllerQuorumVoters) > 0:
		return fmt.Errorf("node.id %d must be in controller.quorum.voters when process.roles contains controller", cfg.NodeID)
	case !ctrl && isVoter:
		return fmt.Errorf("node.id %d is in controller.quorum.voters but process.roles=broker: a broker-only node cannot be a voter", cfg.NodeID)
	}
	return checkSecurity(cfg)
}

// checkSecurity fails closed: a security setting Samsa cannot honour yet
// stops start-up rather than leave the node less protected than its
// configuration says. Each security protocol is one case: PLAINTEXT, SSL
// (its key and trust stores are loaded and checked by newNodeTLS, tls.go),
// SASL_PLAINTEXT and SASL_SSL (checkSASL, sasl.go: supported mechanisms,
// PLAIN's users, not on the controller listener; the credentials this
// node dials the others with, sasl_client.go; SASL_SSL's stores as
// SSL's). The controller listener a broker-only node dials counts too.
func checkSecurity(cfg *config.Config) error {
	listeners := make([]string, 0, len(cfg.Listeners)+1)
	for _, l := range cfg.Listeners {
		listeners = append(listeners, l.Name)
	}
	if len(cfg.ControllerListenerNames) > 0 && !slices.Contains(listeners, cfg.ControllerListenerNames[0]) {
		listeners = append(listeners, cfg.ControllerListenerNames[0])
	}
	for _, name := range listeners {
		switch p := cfg.ListenerSecurityProtocolMap[name]; p {
		case "PLAINTEXT":
		case "SSL":
		case "SASL_PLAINTEXT", "SASL_SSL":
			if err := checkSASL(cfg, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("listener %s (listeners) has security protocol %s (listener.security.protocol.map), which Samsa does not serve: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", name, p)
		}
	}
	// How this node logs in to the others' SASL listeners. Its nodes
	// never log in with OAUTHBEARER, which Samsa serves to clients only:
	// refused whenever set, even on a node that dials no other yet.
	for _, kv := range [][2]string{
		{"sasl.mechanism.inter.broker.protocol", cfg.SASLMechanismInterBrokerProtocol},
		{"sasl.mechanism.controller.protocol", cfg.SASLMechanismControllerProtocol},
	} {
		if key, m := kv[0], kv[1]; m == security.MechanismOAuthBearer {
			return fmt.Errorf("%s=%s: Samsa serves OAUTHBEARER to clients only; its nodes authenticate to each other with PLAIN or SCRAM-SHA-256/512 (set %s to one of them)", key, m, key)
		}
	}
	if _, err := newNodeDialers(cfg, &nodeTLS{}); err != nil {
		return err
	}
	return checkAuthorizer(cfg.AuthorizerClassName)
}

// StandardAuthorizer is the authorizer.class.name of Kafka's KRaft
// authorizer, the one Samsa implements (ACLs in the metadata log).
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// checkAuthorizer accepts no authorizer or StandardAuthorizer. Any other
// class would be code Samsa cannot load; starting without it would leave
// every request unauthorized, so the node does not start.
func checkAuthorizer(class string) error {
	switch class {
	case "", StandardAuthorizer:
		return nil
	case "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer":
		return fmt.Errorf("authorizer.class.name=%s is the ZooKeeper-based authorizer that Kafka 4 removed; a KRaft cluster (Samsa is one) uses %s, which keeps ACLs in the metadata log", class, StandardAuthorizer)
	}
	return fmt.Errorf("authorizer.class.name=%s: Samsa cannot load custom authorizers; use %s, or remove the key to run without authorization", class, StandardAuthorizer)
}

// bootstrapsItself reports whether every controller.quorum.bootstrap.servers
// entry is this node's own controller listener (Kafka 4's single-node
// server.properties: localhost:9093), so a quorum of one is what is meant.
func bootstrapsItself(cfg *config.Config) bool {
	ports := map[string]bool{}
	for _, l := range cfg.Listeners {
		if slices.Contains(cfg.ControllerListenerNames, l.Name) {
			ports[strconv.Itoa(l.Port)] = true
		}
	}
	for _, hp := range cfg.ControllerQuorumBootstrapServers {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || !ports[port] {
			return false
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && !ownHost(cfg, host) {
			return false
		}
	}
	return true
}

// ownHost reports whether host is one this node's listeners bind or
// advertise.
func ownHost(cfg *config.Config, host string) bool {
	for _, l := range append(slices.Clone(cfg.Listeners), cfg.AdvertisedListeners...) {
		if l.Host == host {
			return true
		}
	}
	return false
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

		ConsumerSessionTimeout:    ms(int64(cfg.GroupConsumerSessionTimeoutMs)),
		ConsumerHeartbeatInterval: ms(int64(cfg.GroupConsumerHeartbeatIntervalMs)),
		ConsumerMaxGroupSize:      int(cfg.GroupConsumerMaxSize),
		Streams: group.StreamsConfig{
			SessionTimeout:        ms(int64(cfg.GroupStreams.SessionTimeoutMs)),
			HeartbeatInterval:     ms(int64(cfg.GroupStreams.HeartbeatIntervalMs)),
			MaxGroupSize:          int(cfg.GroupStreams.MaxSize),
			NumStandbyReplicas:    int(cfg.GroupStreams.NumStandbyReplicas),
			InitialRebalanceDelay: streamsDelay(cfg.GroupStreams.InitialRebalanceDelayMs),
			TaskOffsetInterval:    ms(int64(cfg.GroupStreams.TaskOffsetIntervalMs)),
			AcceptableRecoveryLag: cfg.GroupStreams.AcceptableRecoveryLag,
		},
		Share: group.ShareConfig{
			SessionTimeout:    ms(int64(cfg.GroupShareSessionTimeoutMs)),
			HeartbeatInterval: ms(int64(cfg.GroupShareHeartbeatIntervalMs)),
			MaxGroupSize:      int(cfg.GroupShareMaxSize),
		},
		ConsumerAssignors: cfg.GroupConsumerAssignors,
		// A group's GROUP configs (kafka-configs --entity-type groups)
		// over the broker's group.* values, as the metadata image has them.
		PerGroup: func(groupID string, g *group.GroupSettings) {
			gc := cfg.GroupConfig(loader.Image().Configs(metadata.ResourceGroup, groupID))
			g.ConsumerSessionTimeout, g.ConsumerHeartbeatInterval = gc.ConsumerSessionTimeout, gc.ConsumerHeartbeatInterval
			g.Share.SessionTimeout, g.Share.HeartbeatInterval = gc.ShareSessionTimeout, gc.ShareHeartbeatInterval
			g.Streams.SessionTimeout, g.Streams.HeartbeatInterval = gc.StreamsSessionTimeout, gc.StreamsHeartbeatInterval
			g.Streams.NumStandbyReplicas = gc.StreamsNumStandbyReplicas
			g.Streams.InitialRebalanceDelay = streamsDelay(int32(gc.StreamsInitialRebalanceDelay / time.Millisecond))
			g.Streams.TaskOffsetInterval = gc.StreamsTaskOffsetInterval
			g.Streams.AcceptableRecoveryLag = gc.StreamsAcceptableRecoveryLag
		},
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
		AbortTimedOutInterval: ms(int64(cfg.TransactionAbortTimedOutCleanupIntervalMs)),
		IDExpiration:          ms(cfg.TransactionalIDExpirationMs),
		RemoveExpiredInterval: ms(int64(cfg.TransactionRemoveExpiredCleanupIntervalMs)),
		Logger:                logger,
	}
}

// managerConfig maps the broker's log.* keys onto the log manager.
func managerConfig(cfg *config.Config, defaults storage.LogConfig, logger *slog.Logger) storage.ManagerConfig {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	threads := int(cfg.LogCleanerThreads)
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
		CleanerDedupeBufferSize: cfg.LogCleanerDedupeBufferSize,
		CleanerBackoff:          ms(cfg.LogCleanerBackoffMs),
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

// requestBudget is the memory that requests read and not yet answered may
// hold at once across the client listeners: queued.max.request.bytes when
// set; otherwise (Kafka's -1, no limit) 256 MiB, or one request of
// socket.request.max.bytes if that is larger, so that a bound holds by
// default and the largest request still fits.
func requestBudget(queuedMaxRequestBytes int64, socketRequestMaxBytes int32) int64 {
	if queuedMaxRequestBytes > 0 {
		return queuedMaxRequestBytes
	}
	return max(256<<20, int64(socketRequestMaxBytes))
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

// streamsDelay is group.streams.initial.rebalance.delay.ms for the group
// coordinator, which reads 0 as its default: the key's 0 means none.
func streamsDelay(ms int32) time.Duration {
	if ms == 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}
