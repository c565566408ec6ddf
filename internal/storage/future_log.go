package storage

// Future logs: moving a partition between this broker's log directories
// (Kafka's AlterReplicaLogDirs, KIP-113).
//
// A move creates a future log "<topic>-<partition>.<id>-future" in the
// destination directory. The partition layer copies the current log into it
// while the current log keeps serving, and once both end at the same offset
// it calls ReplaceCurrentWithFuture with appends stopped:
//
//  1. the future log is flushed and closed;
//  2. the current log is closed and renamed "<topic>-<partition>.<id>-delete";
//  3. the future directory is renamed "<topic>-<partition>" and reopened;
//  4. the deleted directory is removed in the background.
//
// Recovery (Load): a future directory beside a current log is loaded as
// the future log again, and the move resumes when the partition is hosted
// (Kafka resumes its ReplicaAlterLogDirsThread). A future directory without
// a current log can only be a crash between steps 2 and 3: the future log
// was complete and flushed, so it becomes the current log.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/wire"
)

// ErrLogDirNotFound is a log directory that is not one of log.dirs
// (LOG_DIR_NOT_FOUND).
var ErrLogDirNotFound = &wire.Error{Code: kerr.LogDirNotFound}

const futureSuffix = "-future"

// parseFutureDirName splits "<topic>-<partition>.<32 hex>-future".
func parseFutureDirName(name string) (TopicPartition, bool) {
	rest, ok := strings.CutSuffix(name, futureSuffix)
	i := strings.LastIndexByte(rest, '.')
	if !ok || i < 0 || len(rest)-i-1 != 32 {
		return TopicPartition{}, false
	}
	if _, err := hex.DecodeString(rest[i+1:]); err != nil {
		return TopicPartition{}, false
	}
	topic, p, err := ParseLogDirName(rest[:i])
	if err != nil {
		return TopicPartition{}, false
	}
	return TopicPartition{topic, p}, true
}

// suffixedDirName is Kafka's "<topic>-<partition>.<unique id><suffix>".
func suffixedDirName(tp TopicPartition, suffix string) string {
	id := RandomUUID()
	return fmt.Sprintf("%s.%s%s", tp, hex.EncodeToString(id[:]), suffix)
}

// Dirs are the configured log directories (log.dirs).
func (m *LogManager) Dirs() []string { return append([]string(nil), m.cfg.Dirs...) }

// DirOf is the log directory holding a partition's current log.
func (m *LogManager) DirOf(topic string, partition int32) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.mu.dirOf[TopicPartition{topic, partition}]
	return d, ok
}

// ResolveDir is the configured log directory that dir names (compared as
// absolute paths): ErrLogDirNotFound when none does, ErrStorage when it
// is offline.
func (m *LogManager) ResolveDir(dir string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resolveDirLocked(dir)
}

func (m *LogManager) resolveDirLocked(dir string) (string, error) {
	want, err := filepath.Abs(dir)
	if err != nil || dir == "" {
		return "", fmt.Errorf("%w: failed to find log dir %q", ErrLogDirNotFound, dir)
	}
	for _, d := range m.cfg.Dirs {
		if abs, err := filepath.Abs(d); err == nil && abs == want {
			if _, off := m.mu.offline[d]; off {
				return "", fmt.Errorf("%w: log directory %s is offline", ErrStorage, d)
			}
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: failed to find log dir %s", ErrLogDirNotFound, dir)
}

// SetPreferredDir makes the next GetOrCreate of a partition not hosted yet
// place it in dir (Kafka's preferred log directory, which AlterReplicaLogDirs
// records for a replica that is about to arrive). dir must be a
// configured log directory.
func (m *LogManager) SetPreferredDir(topic string, partition int32, dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.preferred == nil {
		m.mu.preferred = map[TopicPartition]string{}
	}
	m.mu.preferred[TopicPartition{topic, partition}] = dir
}

// Future is a partition's future log and the log directory it is in.
func (m *LogManager) Future(topic string, partition int32) (*Log, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tp := TopicPartition{topic, partition}
	l, ok := m.mu.futures[tp]
	return l, m.mu.futureDirOf[tp], ok
}

// CreateFuture starts moving a hosted partition to the log directory dir (a
// configured one, see ResolveDir): it creates the empty future log there
// and returns it with created true. A future log already in dir is
// returned with created false; one in another directory is deleted first.
// When dir already holds the current log, any future log is deleted and
// the result is nil. As in Kafka, no future log is created while a log
// directory is offline (ErrStorage), so that a partition never has future
// logs in two directories.
func (m *LogManager) CreateFuture(topic string, partition int32, dir string) (future *Log, created bool, err error) {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	cur, ok := m.mu.logs[tp]
	curDir := m.mu.dirOf[tp]
	old, oldDir := m.mu.futures[tp], m.mu.futureDirOf[tp]
	switch {
	case m.mu.closed:
		err = ErrClosed
	case !ok:
		err = fmt.Errorf("%w: no log of %s here", ErrClosed, tp)
	case len(m.mu.offline) > 0:
		err = fmt.Errorf("%w: cannot create a future log for %s while log directories are offline", ErrStorage, tp)
	case old != nil && oldDir == dir:
		m.mu.Unlock()
		return old, false, nil
	}
	m.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	if old != nil {
		if err := m.DropFuture(topic, partition); err != nil {
			return nil, false, err
		}
	}
	if curDir == dir {
		return nil, false, nil
	}
	l, err := OpenWithOptions(filepath.Join(dir, suffixedDirName(tp, futureSuffix)), cur.Config(), m.logger, OpenOptions{})
	if err != nil {
		return nil, false, err
	}
	if id, has := cur.TopicID(); has {
		if err := l.SetTopicID(id); err != nil {
			return nil, false, errors.Join(err, l.Delete())
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed || m.mu.logs[tp] != cur || m.mu.futures[tp] != nil {
		// Deleted, closed or raced with another move meanwhile.
		return nil, false, errors.Join(fmt.Errorf("%w: %s changed while creating its future log", ErrClosed, tp), l.Delete())
	}
	m.watch(l, dir)
	m.mu.futures[tp], m.mu.futureDirOf[tp] = l, dir
	m.logger.Info("created future log", "partition", tp.String(), "dir", dir)
	return l, true, nil
}

// DropFuture deletes a partition's future log, if any (a move cancelled or
// failed).
func (m *LogManager) DropFuture(topic string, partition int32) error {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	l, ok := m.mu.futures[tp]
	delete(m.mu.futures, tp)
	delete(m.mu.futureDirOf, tp)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	m.logger.Info("deleting future log", "partition", tp.String(), "dir", l.Dir())
	if err := l.shutdown(false); err != nil {
		m.logger.Warn("closing future log before delete", "partition", tp.String(), "err", err)
	}
	// Renamed first, as Delete does: a future log half removed by a crash
	// must not be resumed with a hole in it.
	parent := filepath.Dir(l.Dir())
	doomed := filepath.Join(parent, suffixedDirName(tp, "-delete"))
	if err := errors.Join(os.Rename(l.Dir(), doomed), syncDir(parent)); err != nil {
		return err
	}
	return os.RemoveAll(doomed)
}

// ReplaceCurrentWithFuture makes the partition's future log its current
// log (see the file comment for the steps) and returns it. The caller must
// have stopped every write to both logs and checked that the future log
// ends where the current one does. Reads of the old log fail with
// ErrClosed from step 2 on.
func (m *LogManager) ReplaceCurrentWithFuture(topic string, partition int32) (*Log, error) {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	cur, curDir := m.mu.logs[tp], m.mu.dirOf[tp]
	fut, futDir := m.mu.futures[tp], m.mu.futureDirOf[tp]
	m.mu.Unlock()
	if cur == nil || fut == nil {
		return nil, fmt.Errorf("%w: %s has no current and future log", ErrClosed, tp)
	}
	cfg := cur.Config()
	leo, start := fut.LogEndOffset(), fut.LogStartOffset()
	if err := fut.Close(); err != nil {
		// A failed flush has taken the destination offline already.
		return nil, errors.Join(fmt.Errorf("close future log of %s: %w", tp, err), m.DropFuture(topic, partition))
	}
	if err := cur.shutdown(false); err != nil {
		m.logger.Warn("closing log replaced by its future log", "partition", tp.String(), "err", err)
	}
	// From here on a failure is an I/O error on a log directory: like
	// Kafka, take it offline (the partition answers KAFKA_STORAGE_ERROR);
	// the next start finds the logs where the failed step left them, and
	// Load completes or resumes the move.
	doomed := filepath.Join(curDir, suffixedDirName(tp, "-delete"))
	if err := errors.Join(os.Rename(cur.Dir(), doomed), syncDir(curDir)); err != nil {
		return nil, m.swapFailed(curDir, fmt.Errorf("rename %s to %s: %w", cur.Dir(), doomed, err))
	}
	dest := filepath.Join(futDir, tp.String())
	if err := errors.Join(os.Rename(fut.Dir(), dest), syncDir(futDir)); err != nil {
		return nil, m.swapFailed(futDir, fmt.Errorf("rename %s to %s: %w", fut.Dir(), dest, err))
	}
	l, err := OpenWithOptions(dest, cfg, m.logger, OpenOptions{RecoveryPoint: leo, LogStartOffset: start, CleanShutdown: true})
	if err != nil {
		return nil, m.swapFailed(futDir, err)
	}
	m.mu.Lock()
	m.watch(l, futDir)
	m.mu.logs[tp], m.mu.dirOf[tp] = l, futDir
	delete(m.mu.futures, tp)
	delete(m.mu.futureDirOf, tp)
	m.mu.Unlock()
	m.logger.Info("replaced log with its future log", "partition", tp.String(), "from", curDir, "to", futDir)
	for _, d := range []string{curDir, futDir} {
		if err := m.writeCleanerCheckpoint(d); err != nil {
			m.logger.Error("writing cleaner checkpoint", "dir", d, "err", err)
		}
	}
	m.deletions.Add(1)
	go func() {
		defer m.deletions.Done()
		if err := os.RemoveAll(doomed); err != nil {
			m.logger.Warn("removing replaced log", "dir", doomed, "err", err)
		}
	}()
	return l, nil
}

// swapFailed takes dir offline after err and returns err as ErrStorage.
func (m *LogManager) swapFailed(dir string, err error) error {
	m.mu.Lock()
	if !m.mu.closed {
		m.dirFailures.Add(1)
		go func() {
			defer m.dirFailures.Done()
			m.dirFailed(dir, err)
		}()
	}
	m.mu.Unlock()
	return fmt.Errorf("%w: moving a log to %s: %w", ErrStorage, dir, err)
}

// adoptFuturesLocked files the future logs found by Load: beside a current
// log it stays a future log; alone, it was complete when a crash stopped
// the swap, and becomes the current log.
func (m *LogManager) adoptFuturesLocked(futures map[TopicPartition]*Log, dirOf map[TopicPartition]string) error {
	var err error
	for tp, f := range futures {
		dir := dirOf[tp]
		if _, ok := m.mu.logs[tp]; ok {
			m.watch(f, dir)
			m.mu.futures[tp], m.mu.futureDirOf[tp] = f, dir
			continue
		}
		leo, start := f.LogEndOffset(), f.LogStartOffset()
		cfg := f.Config()
		dest := filepath.Join(dir, tp.String())
		if e := errors.Join(f.Close(), os.Rename(f.Dir(), dest), syncDir(dir)); e != nil {
			err = errors.Join(err, e)
			continue
		}
		l, e := OpenWithOptions(dest, cfg, m.logger, OpenOptions{RecoveryPoint: leo, LogStartOffset: start, CleanShutdown: true})
		if e != nil {
			err = errors.Join(err, e)
			continue
		}
		m.logger.Warn("completed a log directory move interrupted by a crash", "partition", tp.String(), "dir", dir)
		m.watch(l, dir)
		m.mu.logs[tp], m.mu.dirOf[tp] = l, dir
	}
	return err
}
