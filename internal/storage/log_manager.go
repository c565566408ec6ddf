package storage

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/metadata"
)

// DefaultCheckpointInterval is Kafka's log.flush.offset.checkpoint.interval.ms.
const DefaultCheckpointInterval = 60 * time.Second

// ManagerConfig configures a LogManager.
type ManagerConfig struct {
	// Dirs are the log directories (log.dirs); at least one.
	Dirs []string
	// DefaultLogConfig fills the zero fields of per-topic configs and is
	// used for logs found by Load.
	DefaultLogConfig LogConfig
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock for logs whose config has none. Default time.Now.
	Now func() time.Time
	// CheckpointInterval (log.flush.offset.checkpoint.interval.ms) is how
	// often a background goroutine writes the checkpoints and applies
	// flush.ms. Default 60 s; negative disables the goroutine, leaving
	// CheckpointAll to the owner.
	CheckpointInterval time.Duration

	// RetentionCheckInterval (log.retention.check.interval.ms) is how often
	// a background goroutine applies retention to every log
	// (Log.DeleteOldSegments). Default 5 min; negative disables it.
	RetentionCheckInterval time.Duration

	// CleanerThreads (log.cleaner.threads) is the number of log cleaner
	// goroutines compacting logs whose cleanup.policy includes compact.
	// Default 1; negative disables the cleaner (log.cleaner.enable=false).
	CleanerThreads int
	// CleanerDedupeBufferSize (log.cleaner.dedupe.buffer.size) is the
	// memory of the cleaners' offset maps, shared among the threads: 24
	// bytes per distinct key per pass. Default 128 MiB.
	CleanerDedupeBufferSize int64
	// CleanerBackoff (log.cleaner.backoff.ms) is how long a cleaner
	// sleeps when no log needs cleaning. Default 15 s.
	CleanerBackoff time.Duration

	// OnDirFailure, when set, is told when a log directory goes offline
	// (the first failed write or fsync of any log in it, as Kafka takes a
	// log directory offline on its first IOException) and how many
	// directories are still online. It runs on a goroutine of its own,
	// which Close waits for: it must not block on, or call, Close.
	OnDirFailure func(dir string, err error, online int)
}

// Defaults of the retention and cleaner settings.
const (
	DefaultRetentionCheckInterval  = 5 * time.Minute  // log.retention.check.interval.ms
	DefaultCleanerDedupeBufferSize = 128 << 20        // log.cleaner.dedupe.buffer.size
	DefaultCleanerBackoff          = 15 * time.Second // log.cleaner.backoff.ms
)

// LogManager owns the log directories and the partition logs in them
// (Kafka's LogManager): it loads them at start, creates and deletes them,
// and writes the checkpoints and the clean-shutdown marker.
type LogManager struct {
	cfg    ManagerConfig
	logger *slog.Logger

	mu struct {
		sync.Mutex
		logs    map[TopicPartition]*Log
		dirOf   map[TopicPartition]string // log directory holding each log
		closed  bool
		offline map[string]error // failed log directories, until restart

		// futures are the logs being filled for a move to another log
		// directory (future_log.go), futureDirOf their directories;
		// preferred is where a partition not hosted yet will be created.
		futures     map[TopicPartition]*Log
		futureDirOf map[TopicPartition]string
		preferred   map[TopicPartition]string

		cleanerCheckpoints map[TopicPartition]int64 // cleaner-offset-checkpoint of every dir
		cleaning           map[TopicPartition]bool  // a cleaner is on it
		uncleanable        map[TopicPartition]bool  // a pass failed: skipped until restart
		cleaningDone       *sync.Cond               // on mu: signalled when a pass ends
	}
	stop chan struct{}
	done chan struct{}
	// background holds the retention task and the cleaner threads, which
	// stop on stopBackground; Close joins them before closing the logs.
	background     sync.WaitGroup
	stopBackground chan struct{}
	// dirFailures joins the goroutines handling a failed directory.
	dirFailures sync.WaitGroup
	// previousEpoch is the broker epoch the clean-shutdown files of the
	// last stop named (-1: not a clean stop, or not the same in every
	// directory); brokerEpoch, the one Close writes into them.
	previousEpoch int64
	brokerEpoch   atomic.Int64
	// deletions joins the removal of logs replaced by their future logs.
	deletions sync.WaitGroup
}

// NewLogManager checks cfg; call Load next.
func NewLogManager(cfg ManagerConfig) (*LogManager, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("log.dirs: want at least one directory")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultLogConfig.Now == nil {
		cfg.DefaultLogConfig.Now = cfg.Now
	}
	if err := cfg.DefaultLogConfig.Validate(); err != nil {
		return nil, err
	}
	if cfg.CheckpointInterval == 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	if cfg.RetentionCheckInterval == 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if cfg.CleanerThreads == 0 {
		cfg.CleanerThreads = 1
	}
	if cfg.CleanerDedupeBufferSize == 0 {
		cfg.CleanerDedupeBufferSize = DefaultCleanerDedupeBufferSize
	}
	if cfg.CleanerDedupeBufferSize < 1<<10 {
		return nil, fmt.Errorf("invalid value %d for log.cleaner.dedupe.buffer.size: want at least 1024", cfg.CleanerDedupeBufferSize)
	}
	if cfg.CleanerBackoff <= 0 {
		cfg.CleanerBackoff = DefaultCleanerBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &LogManager{cfg: cfg, logger: cfg.Logger, previousEpoch: -1}
	m.brokerEpoch.Store(-1)
	m.mu.logs = map[TopicPartition]*Log{}
	m.mu.dirOf = map[TopicPartition]string{}
	m.mu.futures = map[TopicPartition]*Log{}
	m.mu.futureDirOf = map[TopicPartition]string{}
	m.mu.cleanerCheckpoints = map[TopicPartition]int64{}
	m.mu.cleaning = map[TopicPartition]bool{}
	m.mu.uncleanable = map[TopicPartition]bool{}
	m.mu.cleaningDone = sync.NewCond(&m.mu.Mutex)
	return m, nil
}

// Load opens every partition directory in every log directory, one
// goroutine per log directory (Kafka's num.recovery.threads.per.data.dir
// default), using the checkpoints and the clean-shutdown marker to skip
// recovery where it can; then it removes the marker, since a crash from now
// on must trigger recovery, and starts the checkpoint goroutine.
func (m *LogManager) Load() error {
	type result struct {
		dir           string
		logs, futures map[TopicPartition]*Log
		err           error
	}
	results := make(chan result, len(m.cfg.Dirs))
	for _, dir := range m.cfg.Dirs {
		go func() {
			logs, futures, err := m.loadDir(dir)
			results <- result{dir, logs, futures, err}
		}()
	}
	var err error
	futures, futureDirOf := map[TopicPartition]*Log{}, map[TopicPartition]string{}
	m.mu.Lock()
	for range m.cfg.Dirs {
		r := <-results
		err = errors.Join(err, r.err)
		for tp, f := range r.futures {
			if other, dup := futureDirOf[tp]; dup {
				err = errors.Join(err, fmt.Errorf("partition %s has future logs in both %s and %s", tp, other, r.dir))
				f.Close()
				continue
			}
			futures[tp], futureDirOf[tp] = f, r.dir
		}
		for tp, l := range r.logs {
			if other, dup := m.mu.dirOf[tp]; dup {
				err = errors.Join(err, fmt.Errorf("partition %s is in both %s and %s", tp, other, r.dir))
				l.Close()
				continue
			}
			m.mu.logs[tp], m.mu.dirOf[tp] = l, r.dir
		}
	}
	if err == nil {
		err = m.adoptFuturesLocked(futures, futureDirOf)
	} else {
		for _, f := range futures {
			f.Close()
		}
	}
	m.mu.Unlock()
	err = errors.Join(err, m.loadCleanerCheckpoints())
	if err != nil {
		m.closeLogs()
		return err
	}
	m.previousEpoch = readCleanShutdownEpoch(m.cfg.Dirs)
	for _, dir := range m.cfg.Dirs {
		if err := os.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if m.cfg.CheckpointInterval > 0 {
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		go m.run()
	}
	m.startBackground()
	return nil
}

// MetadataLogDirName is the folder of the cluster metadata log (Kafka's
// __cluster_metadata-0). LogManager never opens it as a partition log.
const MetadataLogDirName = metadata.MetadataTopicName + "-0"

func (m *LogManager) loadDir(dir string) (logs, futures map[TopicPartition]*Log, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	_, err = os.Stat(filepath.Join(dir, CleanShutdownFile))
	clean := err == nil
	recoveryPoints, err := ReadCheckpoint(filepath.Join(dir, RecoveryPointCheckpointFile))
	if err != nil {
		return nil, nil, err
	}
	startOffsets, err := ReadCheckpoint(filepath.Join(dir, LogStartOffsetCheckpointFile))
	if err != nil {
		return nil, nil, err
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	logs, futures = map[TopicPartition]*Log{}, map[TopicPartition]*Log{}
	// Opening is reading checkpoints and indexes, and recovering after a
	// crash: logs open in parallel, like closeLogs closes them.
	type opening struct {
		tp     TopicPartition
		name   string
		opts   OpenOptions
		future bool
	}
	var opens []opening
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == MetadataLogDirName {
			// The metadata log lives beside the partition logs but is
			// the raft package's, in its own format.
			continue
		}
		if strings.HasSuffix(name, "-delete") {
			// A delete interrupted by a crash: finish it.
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return logs, futures, err
			}
			continue
		}
		if tp, ok := parseFutureDirName(name); ok {
			// Recovered in full: no checkpoint covers future logs.
			opens = append(opens, opening{tp: tp, name: name, future: true})
			continue
		}
		topic, p, err := ParseLogDirName(name)
		if err != nil || strings.HasSuffix(name, "-future") || strings.HasSuffix(name, "-stray") {
			m.logger.Warn("ignoring directory that is not a partition log", "dir", filepath.Join(dir, name))
			continue
		}
		tp := TopicPartition{topic, p}
		rp, hasRP := recoveryPoints[tp]
		opts := OpenOptions{RecoveryPoint: rp, LogStartOffset: startOffsets[tp], CleanShutdown: clean && hasRP}
		opens = append(opens, opening{tp: tp, name: name, opts: opts})
	}
	var mu sync.Mutex
	parallel(len(opens), closeParallelism, func(i int) {
		o := opens[i]
		l, oerr := OpenWithOptions(filepath.Join(dir, o.name), m.cfg.DefaultLogConfig, m.logger, o.opts)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case oerr != nil:
			err = errors.Join(err, oerr)
		case o.future:
			futures[o.tp] = l
		default:
			m.watch(l, dir)
			logs[o.tp] = l
		}
	})
	if err != nil {
		return logs, futures, err
	}
	m.logger.Info("loaded log directory", "dir", dir, "logs", len(logs), "future_logs", len(futures), "clean_shutdown", clean)
	return logs, futures, nil
}

func (m *LogManager) run() {
	defer close(m.done)
	t := time.NewTicker(m.cfg.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			for _, l := range m.Logs() {
				if err := l.flushIfDue(); err != nil {
					m.logger.Error("scheduled flush", "dir", l.Dir(), "err", err)
				}
			}
			if err := m.CheckpointAll(); err != nil {
				m.logger.Error("writing checkpoints", "err", err)
			}
		}
	}
}

// Get returns the log of a partition hosted here.
func (m *LogManager) Get(topic string, partition int32) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.mu.logs[TopicPartition{topic, partition}]
	return l, ok
}

// Logs returns every log, in no particular order.
func (m *LogManager) Logs() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		out = append(out, l)
	}
	return out
}

// GetOrCreate returns the partition's log, creating it in the log directory
// with the fewest partitions. A non-zero topicID is recorded in
// partition.metadata; an existing log with a different topic id is an error
// (the topic was deleted and recreated while this broker missed it).
// Zero fields of cfg take the manager's defaults.
func (m *LogManager) GetOrCreate(topic string, partition int32, topicID [16]byte, cfg LogConfig) (*Log, error) {
	if err := metadata.ValidateTopicName(topic); err != nil {
		return nil, err
	}
	if partition < 0 {
		return nil, fmt.Errorf("invalid partition %d", partition)
	}
	if LogDirName(topic, partition) == MetadataLogDirName {
		return nil, fmt.Errorf("partition %s-%d would be the metadata log's directory", topic, partition)
	}
	cfg = mergeConfig(cfg, m.cfg.DefaultLogConfig)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrClosed
	}
	tp := TopicPartition{topic, partition}
	if l, ok := m.mu.logs[tp]; ok {
		if id, has := l.TopicID(); has && topicID != ([16]byte{}) && id != topicID {
			return nil, fmt.Errorf("partition %s has topic id %s, not %s", tp, UUIDString(id), UUIDString(topicID))
		}
		if topicID != ([16]byte{}) {
			if err := l.SetTopicID(topicID); err != nil {
				return nil, err
			}
		}
		// A log loaded at start-up has the broker defaults until its
		// topic's configuration arrives here.
		if err := l.SetConfig(cfg); err != nil {
			return nil, err
		}
		return l, nil
	}
	logDir, ok := m.leastLoadedDirLocked()
	if d, pref := m.mu.preferred[tp]; pref {
		if _, off := m.mu.offline[d]; !off {
			logDir, ok = d, true
		}
		delete(m.mu.preferred, tp)
	}
	if !ok {
		return nil, fmt.Errorf("%w: every log directory is offline", ErrStorage)
	}
	l, err := OpenWithOptions(filepath.Join(logDir, tp.String()), cfg, m.logger, OpenOptions{})
	if err != nil {
		return nil, err
	}
	m.watch(l, logDir)
	if topicID != ([16]byte{}) {
		if err := l.SetTopicID(topicID); err != nil {
			l.Delete()
			return nil, err
		}
	}
	m.mu.logs[tp], m.mu.dirOf[tp] = l, logDir
	m.logger.Info("created log", "partition", tp.String(), "dir", logDir)
	return l, nil
}

// leastLoadedDirLocked is the online log directory with the fewest logs;
// false when every directory is offline.
func (m *LogManager) leastLoadedDirLocked() (string, bool) {
	if len(m.cfg.Dirs) == 1 {
		// No need to count (a pass over every log per log created).
		_, off := m.mu.offline[m.cfg.Dirs[0]]
		return m.cfg.Dirs[0], !off
	}
	count := map[string]int{}
	for _, d := range m.mu.dirOf {
		count[d]++
	}
	best := ""
	for _, d := range m.cfg.Dirs {
		if _, off := m.mu.offline[d]; !off && (best == "" || count[d] < count[best]) {
			best = d
		}
	}
	return best, best != ""
}

// watch has l report its failure: the first failed write or fsync of a log
// takes its whole directory offline (dirFailed).
func (m *LogManager) watch(l *Log, dir string) {
	fn := func(err error) {
		// Called with l's locks possibly held: the work happens on a
		// goroutine of its own, which Close joins.
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.mu.closed {
			return
		}
		m.dirFailures.Add(1)
		go func() {
			defer m.dirFailures.Done()
			m.dirFailed(dir, err)
		}()
	}
	l.onFail.Store(&fn)
}

// dirFailed takes dir offline until restart: every log in it answers
// ErrStorage from now on, no new log is placed there, and
// ManagerConfig.OnDirFailure is told.
func (m *LogManager) dirFailed(dir string, err error) {
	m.mu.Lock()
	if _, done := m.mu.offline[dir]; done {
		m.mu.Unlock()
		return
	}
	if m.mu.offline == nil {
		m.mu.offline = map[string]error{}
	}
	m.mu.offline[dir] = err
	var logs []*Log
	for tp, d := range m.mu.dirOf {
		if d == dir {
			logs = append(logs, m.mu.logs[tp])
		}
	}
	for tp, d := range m.mu.futureDirOf {
		if d == dir {
			logs = append(logs, m.mu.futures[tp])
		}
	}
	online := len(m.cfg.Dirs) - len(m.mu.offline)
	m.mu.Unlock()
	for _, l := range logs {
		l.takeOffline(fmt.Errorf("%w: log directory %s is offline after: %w", ErrStorage, dir, err))
	}
	m.logger.Error("log directory offline until restart", "dir", dir, "logs", len(logs), "online_dirs", online, "err", err)
	if m.cfg.OnDirFailure != nil {
		m.cfg.OnDirFailure(dir, err, online)
	}
}

// OfflineDirs lists the log directories taken offline by a failure.
func (m *LogManager) OfflineDirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.mu.offline))
}

// mergeConfig fills the zero fields of cfg from def.
func mergeConfig(cfg, def LogConfig) LogConfig {
	fill := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&cfg.SegmentBytes, def.SegmentBytes)
	fill(&cfg.FlushMessages, def.FlushMessages)
	fill(&cfg.FlushMs, def.FlushMs)
	fill(&cfg.RetentionMs, def.RetentionMs)
	fill(&cfg.RetentionBytes, def.RetentionBytes)
	fill(&cfg.FileDeleteDelayMs, def.FileDeleteDelayMs)
	fill(&cfg.DeleteRetentionMs, def.DeleteRetentionMs)
	fill(&cfg.MinCompactionLagMs, def.MinCompactionLagMs)
	fill(&cfg.MaxCompactionLagMs, def.MaxCompactionLagMs)
	if cfg.CleanupPolicy == 0 {
		cfg.CleanupPolicy = def.CleanupPolicy
	}
	if cfg.MinCleanableDirtyRatio == 0 {
		cfg.MinCleanableDirtyRatio = def.MinCleanableDirtyRatio
	}
	if cfg.SegmentMs == 0 {
		cfg.SegmentMs = def.SegmentMs
	}
	if cfg.SegmentIndexBytes == 0 {
		cfg.SegmentIndexBytes = def.SegmentIndexBytes
	}
	if cfg.IndexIntervalBytes == 0 {
		cfg.IndexIntervalBytes = def.IndexIntervalBytes
	}
	if cfg.Now == nil {
		cfg.Now = def.Now
	}
	if cfg.Fault == nil {
		cfg.Fault = def.Fault
	}
	if cfg.Files == nil {
		cfg.Files = def.Files
	}
	return cfg
}

// Delete removes a partition's log: it is renamed to
// "<topic>-<partition>.<id>-delete", as Kafka does, so a crash in the middle
// of removing the files leaves a name Load recognises and finishes deleting.
func (m *LogManager) Delete(topic string, partition int32) error {
	tp := TopicPartition{topic, partition}
	// The future log goes first: a future log without a current one is
	// taken for a finished move at the next start.
	if err := m.DropFuture(topic, partition); err != nil {
		m.logger.Warn("deleting future log", "partition", tp.String(), "err", err)
	}
	m.mu.Lock()
	l, ok := m.mu.logs[tp]
	logDir := m.mu.dirOf[tp]
	delete(m.mu.logs, tp)
	delete(m.mu.dirOf, tp)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if err := l.shutdown(false); err != nil {
		m.logger.Warn("closing log before delete", "partition", tp.String(), "err", err)
	}
	// A cleaner pass on the log aborts once it sees it closed.
	m.forgetCleaning(tp, logDir)
	id := RandomUUID()
	doomed := filepath.Join(logDir, fmt.Sprintf("%s.%s-delete", tp, hex.EncodeToString(id[:])))
	if err := os.Rename(l.Dir(), doomed); err != nil {
		return err
	}
	if err := syncDir(logDir); err != nil {
		return err
	}
	return os.RemoveAll(doomed)
}

// CheckpointAll writes recovery-point-offset-checkpoint and
// log-start-offset-checkpoint in every log directory. As in Kafka, a log
// start offset is written only when it is past the first segment's base
// offset, since otherwise the segments say it already.
func (m *LogManager) CheckpointAll() error {
	m.mu.Lock()
	byDir := map[string]map[TopicPartition]*Log{}
	for _, d := range m.cfg.Dirs {
		byDir[d] = map[TopicPartition]*Log{}
	}
	for tp, l := range m.mu.logs {
		byDir[m.mu.dirOf[tp]][tp] = l
	}
	m.mu.Unlock()
	var err error
	for dir, logs := range byDir {
		rps, starts := map[TopicPartition]int64{}, map[TopicPartition]int64{}
		for tp, l := range logs {
			rps[tp] = l.RecoveryPoint()
			if segs := l.segments(); l.LogStartOffset() > segs[0].baseOffset {
				starts[tp] = l.LogStartOffset()
			}
		}
		err = errors.Join(err,
			WriteCheckpoint(filepath.Join(dir, RecoveryPointCheckpointFile), rps),
			WriteCheckpoint(filepath.Join(dir, LogStartOffsetCheckpointFile), starts))
	}
	return err
}

// PreviousBrokerEpoch is the broker epoch the node had when it last
// stopped cleanly, from the .kafka_cleanshutdown file of every log
// directory, or -1 when the last stop was not clean in all of them or
// they disagree (Kafka's readBrokerEpochFromCleanShutdownFiles). The
// broker registers with it (KIP-966): a controller takes a broker
// registering without it for one whose log may have lost acknowledged
// records.
func (m *LogManager) PreviousBrokerEpoch() int64 { return m.previousEpoch }

// SetBrokerEpoch records the node's broker epoch, for the clean-shutdown
// files Close writes.
func (m *LogManager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

// cleanShutdownContent is a .kafka_cleanshutdown file as Kafka's
// CleanShutdownFileHandler writes it.
func cleanShutdownContent(epoch int64) []byte {
	b, _ := json.Marshal(struct {
		Version     int   `json:"version"`
		BrokerEpoch int64 `json:"brokerEpoch"`
	}{0, epoch})
	return b
}

// readCleanShutdownEpoch is PreviousBrokerEpoch from the files of dirs.
func readCleanShutdownEpoch(dirs []string) int64 {
	epoch := int64(-1)
	for i, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, CleanShutdownFile))
		if err != nil {
			return -1
		}
		var f struct {
			BrokerEpoch *int64 `json:"brokerEpoch"`
		}
		if json.Unmarshal(b, &f) != nil || f.BrokerEpoch == nil || *f.BrokerEpoch < 0 {
			return -1 // empty (written before it held the epoch) or unreadable
		}
		if i > 0 && *f.BrokerEpoch != epoch {
			return -1
		}
		epoch = *f.BrokerEpoch
	}
	return epoch
}

// Close stops the checkpoint goroutine, flushes and closes every log,
// writes the checkpoints, and marks each log directory whose logs all
// closed cleanly with .kafka_cleanshutdown so the next Load skips recovery.
func (m *LogManager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	m.mu.Unlock()
	m.dirFailures.Wait()
	m.deletions.Wait()
	if m.stop != nil {
		close(m.stop)
		<-m.done
	}
	m.stopBackgroundTasks()
	failed := m.closeLogs()
	err := m.CheckpointAll()
	for _, dir := range m.cfg.Dirs {
		if failed[dir] || err != nil {
			continue
		}
		err = errors.Join(err, writeFileAtomic(filepath.Join(dir, CleanShutdownFile), cleanShutdownContent(m.brokerEpoch.Load())))
	}
	if len(failed) > 0 {
		err = errors.Join(err, fmt.Errorf("logs failed to close in %d log directories", len(failed)))
	}
	return err
}

// closeLogs closes every log and returns the log directories where one
// failed.
//
// The logs close in parallel: closing is mostly waiting for fsyncs, which
// the file system's journal commits together, so a node with many
// partitions stops in a fraction of the time one at a time takes.
func (m *LogManager) closeLogs() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	type closing struct {
		tp     TopicPartition
		l      *Log
		dir    string
		future bool
	}
	var all []closing
	for tp, l := range m.mu.logs {
		all = append(all, closing{tp, l, m.mu.dirOf[tp], false})
	}
	for tp, l := range m.mu.futures {
		all = append(all, closing{tp, l, m.mu.futureDirOf[tp], true})
	}
	var mu sync.Mutex
	failed := map[string]bool{}
	parallel(len(all), closeParallelism, func(i int) {
		c := all[i]
		if err := c.l.Close(); err != nil {
			what := "closing log"
			if c.future {
				what = "closing future log"
			}
			m.logger.Error(what, "partition", c.tp.String(), "err", err)
			mu.Lock()
			failed[c.dir] = true
			mu.Unlock()
		}
	})
	return failed
}

// closeParallelism is how many logs loadDir opens and closeLogs closes
// at once.
const closeParallelism = 16

// parallel calls fn(0) ... fn(n-1) from at most workers goroutines and
// returns when every call has.
func parallel(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
