package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Worker is a running Connect worker: its stores, the reconciler and the
// REST listeners.
type Worker struct {
	cfg       *WorkerConfig
	logger    *slog.Logger
	herder    *herder
	admin     *kgo.Client
	clusterID string
	logs      []logStore
	lns       []net.Listener
	servers   []*http.Server
	cancel    context.CancelFunc
	done      chan struct{}
	group     *groupMember  // distributed only
	forwarder *http.Client  // REST requests forwarded to other workers
	groupDone chan struct{} // closed when the group member's goroutine ends
}

// Options are what the caller adds to a WorkerConfig.
type Options struct {
	Logger *slog.Logger
	// ClientOpts are extra franz-go options for every client (TLS, SASL).
	ClientOpts []kgo.Opt
	// Distributed selects the config/offset/status topics; otherwise the
	// worker is standalone (memory configs, offsets in a file).
	Distributed bool
	// Connectors are standalone mode's connector configs.
	Connectors []map[string]string
	// LogLevel, when set, is the level of Logger that PUT
	// /admin/loggers/root changes.
	LogLevel *slog.LevelVar
}

// Start binds the listeners, reads the stores and starts the connectors.
func Start(ctx context.Context, cfg *WorkerConfig, o Options) (_ *Worker, err error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.BootstrapServers...)}, o.ClientOpts...)
	w := &Worker{cfg: cfg, logger: logger, done: make(chan struct{}), forwarder: &http.Client{Timeout: 90 * time.Second}}
	defer func() {
		if err != nil {
			w.closeStores()
			for _, l := range w.lns {
				l.Close()
			}
		}
	}()
	for _, l := range cfg.Listeners {
		ln, err := net.Listen("tcp", strings.TrimPrefix(l, "http://"))
		if err != nil {
			return nil, fmt.Errorf("connect: listeners: %w", err)
		}
		w.lns = append(w.lns, ln)
	}
	cfg.advertise(w.lns[0].Addr())
	h := newHerder(cfg, logger, opts)
	h.loggers = newLoggers(o.LogLevel)
	h.workerID = strings.TrimPrefix(strings.TrimPrefix(cfg.AdvertisedURL, "http://"), "https://")
	w.herder = h
	if w.admin, err = kgo.NewClient(opts...); err != nil {
		return nil, err
	}
	if meta, err := kadm.NewClient(w.admin).BrokerMetadata(ctx); err == nil {
		w.clusterID = meta.Cluster
	} else {
		return nil, fmt.Errorf("connect: reaching the cluster at %s: %w", strings.Join(cfg.BootstrapServers, ","), err)
	}
	var offsetLog logStore
	if o.Distributed {
		h.configLog = &kafkaLog{opts: opts, topic: cfg.ConfigTopic, partitions: 1, rf: cfg.ConfigRF}
		offsetLog = &kafkaLog{opts: opts, topic: cfg.OffsetTopic, partitions: cfg.OffsetPartitions, rf: cfg.OffsetRF}
		h.statusLog = &kafkaLog{opts: opts, topic: cfg.StatusTopic, partitions: cfg.StatusPartitions, rf: cfg.StatusRF}
	} else {
		h.configLog = &memLog{}
		offsetLog = &memLog{file: cfg.OffsetFile}
	}
	h.offsets = &offsetStore{log: offsetLog, m: map[string]offsetEntry{}}
	if err := offsetLog.Start(ctx, h.offsets.apply); err != nil {
		return nil, fmt.Errorf("connect: offsets: %w", err)
	}
	w.logs = append(w.logs, offsetLog)
	if h.statusLog != nil {
		if err := h.statusLog.Start(ctx, h.applyStatus); err != nil {
			return nil, fmt.Errorf("connect: status topic: %w", err)
		}
		w.logs = append(w.logs, h.statusLog)
	}
	if err := h.configLog.Start(ctx, h.applyConfig); err != nil {
		return nil, fmt.Errorf("connect: config topic: %w", err)
	}
	w.logs = append(w.logs, h.configLog)
	h.mu.Lock()
	h.mu.replayed = true
	h.mu.Unlock()

	runCtx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() {
		defer close(w.done)
		h.run(runCtx)
	}()
	if o.Distributed {
		w.group = newGroupMember(h, w.admin, cfg)
		w.groupDone = make(chan struct{})
		go func() {
			defer close(w.groupDone)
			w.group.run(runCtx)
		}()
	} else {
		h.setAssignment(ctx, true, nil)
	}
	for _, c := range o.Connectors {
		if _, _, err := w.putConnector(ctx, c["name"], c, "", true); err != nil {
			w.Close()
			return nil, fmt.Errorf("connect: connector %s: %w", c["name"], err)
		}
	}
	for _, ln := range w.lns {
		s := &http.Server{Handler: w.routes(), ReadHeaderTimeout: 30 * time.Second}
		w.servers = append(w.servers, s)
		go func() {
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("connect: REST listener", "listener", ln.Addr().String(), "err", err)
			}
		}()
		logger.Info("connect: REST API listening", "listener", "http://"+ln.Addr().String(), "worker_id", h.workerID)
	}
	return w, nil
}

// URL is the REST API's base URL on the first listener.
func (w *Worker) URL() string { return "http://" + w.lns[0].Addr().String() }

// Close stops the REST API, every task and connector, and the stores.
func (w *Worker) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range w.servers {
		s.Shutdown(ctx)
	}
	if w.cancel != nil {
		w.cancel()
		<-w.done
		if w.groupDone != nil {
			<-w.groupDone
			// Leave only now that every task stopped, so the member
			// that takes over never runs a task beside ours.
			w.group.leave()
		}
	}
	w.closeStores()
}

func (w *Worker) closeStores() {
	for _, l := range w.logs {
		l.Close()
	}
	w.logs = nil
	if w.admin != nil {
		w.admin.Close()
		w.admin = nil
	}
}
