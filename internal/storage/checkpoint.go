package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Checkpoint file names in each log directory, as Kafka names them.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	CleanShutdownFile            = ".kafka_cleanshutdown"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return LogDirName(tp.Topic, tp.Partition) }

// WriteCheckpoint writes offsets in Kafka's OffsetCheckpointFile format,
// sorted by topic and partition, atomically:
//
//	0                       version
//	2                       number of entries
//	orders 0 1234           <topic> <partition> <offset>
//	orders 1 99
func WriteCheckpoint(path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&buf, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeFileAtomic(path, buf.Bytes())
}

// ReadCheckpoint reads a file written by WriteCheckpoint (or by Kafka). A
// missing file is an empty checkpoint.
func ReadCheckpoint(path string) (map[TopicPartition]int64, error) {
	out := map[TopicPartition]int64{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	bad := func(what string) error { return fmt.Errorf("malformed checkpoint %s: %s", path, what) }
	if v, ok := line(); !ok || v != "0" {
		return nil, bad(fmt.Sprintf("version %q, want 0", v))
	}
	v, ok := line()
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 {
		return nil, bad(fmt.Sprintf("entry count %q", v))
	}
	for i := 0; i < n; i++ {
		v, ok := line()
		fields := strings.Fields(v)
		if !ok || len(fields) != 3 {
			return nil, bad(fmt.Sprintf("entry %d %q: want <topic> <partition> <offset>", i, v))
		}
		p, err1 := strconv.ParseInt(fields[1], 10, 32)
		off, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, bad(fmt.Sprintf("entry %d %q", i, v))
		}
		out[TopicPartition{fields[0], int32(p)}] = off
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if v, ok := line(); ok && v != "" {
		return nil, bad(fmt.Sprintf("%d entries announced but more follow", n))
	}
	return out, nil
}

// writeFileAtomic replaces path with content so that a crash leaves either
// the old or the new file: write a temporary file, fsync it, rename it over
// path, fsync the directory.
func writeFileAtomic(path string, content []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// writeFileUnsynced replaces path with content by a temporary file renamed
// over it, without any fsync: a process crash leaves the old or the new
// file, a power loss may also leave the old one, an empty one or (never
// seen, as the files are far below a page) a mangled one. Only for files
// that syncFile makes durable before anything depends on them
// (Log.syncMetaFilesLocked).
func writeFileUnsynced(path string, content []byte) error {
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, content, 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// syncFile fsyncs the file at path (its directory is the caller's).
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
