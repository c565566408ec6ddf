package raft

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	frameHeaderLen = 8
	bodyFixedLen   = 8 + 8 + 1
	// maxFrameLen bounds a frame so a corrupt length cannot make recovery
	// allocate gigabytes; metadata entries are tiny.
	maxFrameLen      = 64 << 20
	segmentSuffix    = ".log"
	checkpointSuffix = ".checkpoint"
	hardStateFile    = "quorum-state"
	snapMagic        = "SMSS"
	snapVersion      = 1
)

// segment is one entry file. positions[i] is the file offset of the frame of
// entry first+i; size is the end of the last valid frame.
type segment struct {
	first     uint64
	path      string
	positions []int64
	size      int64
}

func (s *segment) last() uint64 { return s.first + uint64(len(s.positions)) - 1 }

// diskLog owns the files of one metadata log directory. It is used only by
// the Node goroutine (and by Open before that goroutine starts).
type diskLog struct {
	dir    string
	logger *slog.Logger
	segs   []*segment // ordered by first; the last one is active
	active *os.File
	fault  func(op, path string) error // Config.Fault; nil in production
}

type persistedHardState struct {
	Term   uint64 `json:"term"`
	Vote   uint64 `json:"vote"`
	Commit uint64 `json:"commit"`
}

func segmentName(first uint64) string { return fmt.Sprintf("%020d%s", first, segmentSuffix) }

func checkpointName(index, term uint64) string {
	return fmt.Sprintf("%020d-%010d%s", index, term, checkpointSuffix)
}

// recovered is what openDiskLog found on disk.
type recovered struct {
	snap    *pb.Snapshot // nil if the directory is fresh
	hard    *pb.HardState
	entries []*pb.Entry // entries after the snapshot
}

// openDiskLog reads the directory, truncating a torn tail. Entries at or
// below the snapshot index are dropped.
func openDiskLog(dir string, logger *slog.Logger, fault func(op, path string) error) (*diskLog, *recovered, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("create metadata log dir: %w", err)
	}
	l := &diskLog{dir: dir, logger: logger, fault: fault}
	rec := &recovered{hard: &pb.HardState{}}
	snap, err := l.loadLatestCheckpoint()
	if err != nil {
		return nil, nil, err
	}
	rec.snap = snap
	if err := l.loadHardState(rec.hard); err != nil {
		return nil, nil, err
	}
	entries, err := l.loadSegments()
	if err != nil {
		return nil, nil, err
	}
	snapIndex := snap.GetMetadata().GetIndex()
	for len(entries) > 0 && entries[0].GetIndex() <= snapIndex {
		entries = entries[1:]
	}
	if len(entries) > 0 && entries[0].GetIndex() != snapIndex+1 {
		return nil, nil, fmt.Errorf("metadata log in %s has a gap: snapshot at %d, first entry %d", dir, snapIndex, entries[0].GetIndex())
	}
	rec.entries = entries
	next := snapIndex + 1
	if len(entries) > 0 {
		next = entries[len(entries)-1].GetIndex() + 1
	}
	if err := l.openActive(next); err != nil {
		return nil, nil, err
	}
	return l, rec, nil
}

func (l *diskLog) listFiles(suffix string) ([]string, error) {
	des, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("read metadata log dir: %w", err)
	}
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), suffix) && !de.IsDir() {
			names = append(names, de.Name())
		}
	}
	slices.Sort(names) // zero-padded names sort numerically
	return names, nil
}

func (l *diskLog) loadSegments() ([]*pb.Entry, error) {
	names, err := l.listFiles(segmentSuffix)
	if err != nil {
		return nil, err
	}
	var all []*pb.Entry
	for i, name := range names {
		first, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil {
			l.logger.Warn("ignoring unexpected file in metadata log dir", "file", name)
			continue
		}
		path := filepath.Join(l.dir, name)
		if len(all) > 0 && first != all[len(all)-1].GetIndex()+1 {
			// A previous segment was torn short: everything after is unreachable.
			l.logger.Warn("deleting metadata segment after a torn one", "file", name)
			if err := l.removeFrom(names[i:]); err != nil {
				return nil, err
			}
			break
		}
		seg, ents, torn, err := readSegment(path, first)
		if err != nil {
			return nil, err
		}
		l.segs = append(l.segs, seg)
		all = append(all, ents...)
		if torn {
			l.logger.Warn("truncated torn tail of metadata log", "file", name, "valid_bytes", seg.size, "entries", len(ents))
			if err := truncateAndSync(path, seg.size); err != nil {
				return nil, err
			}
			if err := l.removeFrom(names[i+1:]); err != nil {
				return nil, err
			}
			break
		}
	}
	// Drop empty segments other than the last so positions stay meaningful.
	kept := l.segs[:0]
	for i, s := range l.segs {
		if len(s.positions) == 0 && i != len(l.segs)-1 {
			if err := os.Remove(s.path); err != nil {
				return nil, err
			}
			continue
		}
		kept = append(kept, s)
	}
	l.segs = kept
	return all, nil
}

func (l *diskLog) removeFrom(names []string) error {
	for _, n := range names {
		if err := os.Remove(filepath.Join(l.dir, n)); err != nil {
			return fmt.Errorf("remove metadata segment: %w", err)
		}
	}
	return syncDir(l.dir)
}

// readSegment parses frames until the end or the first invalid frame; torn
// reports whether bytes after the valid prefix were found.
func readSegment(path string, first uint64) (*segment, []*pb.Entry, bool, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read metadata segment: %w", err)
	}
	seg := &segment{first: first, path: path}
	var ents []*pb.Entry
	pos := int64(0)
	for int64(len(buf))-pos >= frameHeaderLen {
		n := int64(binary.BigEndian.Uint32(buf[pos:]))
		sum := binary.BigEndian.Uint32(buf[pos+4:])
		if n < bodyFixedLen || n > maxFrameLen || pos+frameHeaderLen+n > int64(len(buf)) {
			break
		}
		body := buf[pos+frameHeaderLen : pos+frameHeaderLen+n]
		if crc32.Checksum(body, castagnoli) != sum {
			break
		}
		e := decodeEntryBody(body)
		if e.GetIndex() != first+uint64(len(ents)) {
			break
		}
		ents = append(ents, e)
		seg.positions = append(seg.positions, pos)
		pos += frameHeaderLen + n
	}
	seg.size = pos
	return seg, ents, pos != int64(len(buf)), nil
}

func decodeEntryBody(body []byte) *pb.Entry {
	typ := pb.EntryType(body[16])
	data := slices.Clone(body[bodyFixedLen:])
	if len(data) == 0 {
		data = nil
	}
	return &pb.Entry{
		Term:  new(binary.BigEndian.Uint64(body[0:])),
		Index: new(binary.BigEndian.Uint64(body[8:])),
		Type:  &typ,
		Data:  data,
	}
}

func appendFrame(dst []byte, e *pb.Entry) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(bodyFixedLen+len(e.Data)))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, e.GetTerm())
	dst = binary.BigEndian.AppendUint64(dst, e.GetIndex())
	dst = append(dst, byte(e.GetType()))
	dst = append(dst, e.Data...)
	sum := crc32.Checksum(dst[start+frameHeaderLen:], castagnoli)
	binary.BigEndian.PutUint32(dst[start+4:], sum)
	return dst
}

// openActive opens the last segment for appending, or creates one whose
// first index is next when there is none (or the last is empty and misnamed).
func (l *diskLog) openActive(next uint64) error {
	if n := len(l.segs); n > 0 {
		s := l.segs[n-1]
		if len(s.positions) > 0 || s.first == next {
			f, err := os.OpenFile(s.path, os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("open metadata segment: %w", err)
			}
			if _, err := f.Seek(s.size, io.SeekStart); err != nil {
				f.Close()
				return err
			}
			l.active = f
			return nil
		}
		if err := os.Remove(s.path); err != nil {
			return err
		}
		l.segs = l.segs[:n-1]
	}
	return l.newSegment(next)
}

func (l *diskLog) newSegment(first uint64) error {
	path := filepath.Join(l.dir, segmentName(first))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create metadata segment: %w", err)
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	l.active = f
	l.segs = append(l.segs, &segment{first: first, path: path})
	return nil
}

func (l *diskLog) lastIndex() (uint64, bool) {
	for i := len(l.segs) - 1; i >= 0; i-- {
		if len(l.segs[i].positions) > 0 {
			return l.segs[i].last(), true
		}
	}
	return 0, false
}

// append writes entries durably. Entries that overlap the log replace its
// tail from their first index, as raft requires after a leader change.
func (l *diskLog) append(ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	first := ents[0].GetIndex()
	if last, ok := l.lastIndex(); ok && first <= last {
		if err := l.truncateFrom(first); err != nil {
			return err
		}
	}
	act := l.segs[len(l.segs)-1]
	if len(act.positions) == 0 && act.first != first {
		// Empty active segment named for a different index (e.g. after a
		// snapshot was installed): rename it by recreating.
		l.active.Close()
		if err := os.Remove(act.path); err != nil {
			return err
		}
		l.segs = l.segs[:len(l.segs)-1]
		if err := l.newSegment(first); err != nil {
			return err
		}
		act = l.segs[len(l.segs)-1]
	} else if len(act.positions) > 0 && act.last()+1 != first {
		return fmt.Errorf("metadata log append at %d does not follow last index %d", first, act.last())
	}
	var buf []byte
	pos := act.size
	for _, e := range ents {
		act.positions = append(act.positions, pos+int64(len(buf)))
		buf = appendFrame(buf, e)
	}
	if err := l.injectFault("write", act.path); err != nil {
		return fmt.Errorf("write metadata log: %w", err)
	}
	if _, err := l.active.Write(buf); err != nil {
		return fmt.Errorf("write metadata log: %w", err)
	}
	act.size += int64(len(buf))
	if err := l.injectFault("sync", act.path); err != nil {
		return fmt.Errorf("fsync metadata log: %w", err)
	}
	if err := l.active.Sync(); err != nil {
		return fmt.Errorf("fsync metadata log: %w", err)
	}
	return nil
}

// truncateFrom removes entries with index >= from.
func (l *diskLog) truncateFrom(from uint64) error {
	removed := false
	for len(l.segs) > 0 {
		s := l.segs[len(l.segs)-1]
		if s.first < from || len(l.segs) == 1 {
			break
		}
		l.active.Close()
		if err := os.Remove(s.path); err != nil {
			return err
		}
		l.segs = l.segs[:len(l.segs)-1]
		removed = true
		f, err := os.OpenFile(l.segs[len(l.segs)-1].path, os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		l.active = f
	}
	if removed {
		// A removed segment that comes back after a crash would bring
		// back the entries cut here (recovery answers their proposals
		// ErrStorage once this returns).
		if err := syncDir(l.dir); err != nil {
			return err
		}
	}
	s := l.segs[len(l.segs)-1]
	if from < s.first {
		from = s.first
	}
	if keep := int(from - s.first); keep < len(s.positions) {
		s.size = s.positions[keep]
		s.positions = s.positions[:keep]
		if err := l.active.Truncate(s.size); err != nil {
			return fmt.Errorf("truncate metadata log: %w", err)
		}
	}
	// Also when a segment was reopened above (its offset is 0): the next
	// append must land after its last entry, not over its first.
	if _, err := l.active.Seek(s.size, io.SeekStart); err != nil {
		return err
	}
	return l.active.Sync()
}

func (l *diskLog) saveHardState(hs *pb.HardState) error {
	b, err := json.Marshal(persistedHardState{Term: hs.GetTerm(), Vote: hs.GetVote(), Commit: hs.GetCommit()})
	if err != nil {
		return err
	}
	return l.writeFileAtomic(hardStateFile, b)
}

// injectFault runs the test hook Config.Fault.
func (l *diskLog) injectFault(op, path string) error {
	if l.fault != nil {
		return l.fault(op, path)
	}
	return nil
}

// writeFileAtomic is writeFileAtomic with the fault hook.
func (l *diskLog) writeFileAtomic(name string, data []byte) error {
	if err := l.injectFault("write", filepath.Join(l.dir, name+".tmp")); err != nil {
		return err
	}
	return writeFileAtomic(l.dir, name, data)
}

func (l *diskLog) loadHardState(hs *pb.HardState) error {
	b, err := os.ReadFile(filepath.Join(l.dir, hardStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read quorum-state: %w", err)
	}
	var p persistedHardState
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("parse %s: %w", filepath.Join(l.dir, hardStateFile), err)
	}
	hs.Term, hs.Vote, hs.Commit = new(p.Term), new(p.Vote), new(p.Commit)
	return nil
}

// saveSnapshot writes a checkpoint, rolls the active segment so the old
// ones can go, and removes files the checkpoint makes redundant.
func (l *diskLog) saveSnapshot(s *pb.Snapshot) error {
	md := s.GetMetadata()
	cs, err := proto.Marshal(md.GetConfState())
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(snapMagic)
	b.WriteByte(snapVersion)
	b.Write(binary.BigEndian.AppendUint64(nil, md.GetIndex()))
	b.Write(binary.BigEndian.AppendUint64(nil, md.GetTerm()))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(cs))))
	b.Write(cs)
	b.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s.Data))))
	b.Write(s.Data)
	b.Write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(b.Bytes(), castagnoli)))
	if err := l.writeFileAtomic(checkpointName(md.GetIndex(), md.GetTerm()), b.Bytes()); err != nil {
		return err
	}
	return l.compact(md.GetIndex())
}

// compact deletes segments wholly at or below index and older checkpoints,
// and starts a fresh active segment when the active one is wholly covered.
func (l *diskLog) compact(index uint64) error {
	last, ok := l.lastIndex()
	if !ok || last <= index {
		// Every entry is covered: the log restarts after the snapshot.
		l.active.Close()
		for _, s := range l.segs {
			if err := os.Remove(s.path); err != nil {
				return err
			}
		}
		l.segs = nil
		if err := l.newSegment(index + 1); err != nil {
			return err
		}
	} else {
		if len(l.segs[len(l.segs)-1].positions) > 0 {
			// Roll so the current segment can be deleted by a later snapshot.
			if err := l.active.Close(); err != nil {
				return err
			}
			if err := l.newSegment(last + 1); err != nil {
				return err
			}
		}
		kept := l.segs[:0]
		for _, s := range l.segs {
			if len(s.positions) > 0 && s.last() <= index {
				if err := os.Remove(s.path); err != nil {
					return err
				}
				continue
			}
			kept = append(kept, s)
		}
		l.segs = kept
	}
	names, err := l.listFiles(checkpointSuffix)
	if err != nil {
		return err
	}
	current := checkpointName(index, 0)[:20]
	for _, n := range names {
		if n[:20] < current {
			if err := os.Remove(filepath.Join(l.dir, n)); err != nil {
				return err
			}
		}
	}
	return syncDir(l.dir)
}

func (l *diskLog) loadLatestCheckpoint() (*pb.Snapshot, error) {
	names, err := l.listFiles(checkpointSuffix)
	if err != nil {
		return nil, err
	}
	for i := len(names) - 1; i >= 0; i-- {
		s, err := readCheckpoint(filepath.Join(l.dir, names[i]))
		if err == nil {
			return s, nil
		}
		// Written atomically, so this is disk corruption; try an older one.
		l.logger.Error("ignoring unreadable metadata checkpoint", "file", names[i], "err", err)
	}
	return nil, nil
}

func readCheckpoint(path string) (*pb.Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const fixed = 4 + 1 + 8 + 8 + 4
	if len(b) < fixed+8+4 || string(b[:4]) != snapMagic || b[4] != snapVersion {
		return nil, errors.New("bad checkpoint header")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("checkpoint CRC mismatch")
	}
	index := binary.BigEndian.Uint64(b[5:])
	term := binary.BigEndian.Uint64(b[13:])
	csLen := int(binary.BigEndian.Uint32(b[21:]))
	if fixed+csLen+8 > len(body) {
		return nil, errors.New("checkpoint truncated")
	}
	cs := &pb.ConfState{}
	if err := proto.Unmarshal(b[fixed:fixed+csLen], cs); err != nil {
		return nil, fmt.Errorf("checkpoint conf state: %w", err)
	}
	dataLen := binary.BigEndian.Uint64(b[fixed+csLen:])
	data := body[fixed+csLen+8:]
	if uint64(len(data)) != dataLen {
		return nil, errors.New("checkpoint data length mismatch")
	}
	return &pb.Snapshot{
		Data:     slices.Clone(data),
		Metadata: &pb.SnapshotMetadata{Index: &index, Term: &term, ConfState: cs},
	}, nil
}

func (l *diskLog) close() error {
	if l.active == nil {
		return nil
	}
	err := l.active.Close()
	l.active = nil
	return err
}

func writeFileAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		// A partial temporary file would only hold on to space a full
		// disk needs back.
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func truncateAndSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
