package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckpointFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), RecoveryPointCheckpointFile)
	in := map[TopicPartition]int64{{"orders", 1}: 99, {"orders", 0}: 1234, {"a-b.c", 10}: 0}
	if err := WriteCheckpoint(path, in); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "0\n3\na-b.c 10 0\norders 0 1234\norders 1 99\n"
	if string(got) != want {
		t.Fatalf("checkpoint file:\n%q\nwant\n%q", got, want)
	}
	out, err := ReadCheckpoint(path)
	if err != nil || len(out) != 3 || out[TopicPartition{"orders", 0}] != 1234 {
		t.Fatalf("ReadCheckpoint = %v, %v", out, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\norders 0 1\n", "0\n1\norders x 1\n", "0\n1\norders 0 1\nextra 0 1\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadCheckpoint(path); err == nil {
			t.Errorf("ReadCheckpoint(%q) accepted a malformed file", bad)
		}
	}
	if m, err := ReadCheckpoint(filepath.Join(t.TempDir(), "none")); err != nil || len(m) != 0 {
		t.Errorf("missing checkpoint: %v, %v", m, err)
	}
}

func newManager(t *testing.T, dirs []string) *LogManager {
	t.Helper()
	m, err := NewLogManager(ManagerConfig{Dirs: dirs, CheckpointInterval: -1,
		DefaultLogConfig: LogConfig{SegmentBytes: 1 << 20, SegmentIndexBytes: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLogManagerLifecycle(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := newManager(t, dirs)
	id := RandomUUID()
	placed := map[string]int{}
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreate("orders", p, id, LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		placed[filepath.Dir(l.Dir())]++
		for i := int32(0); i <= p; i++ {
			mustAppend(t, l, makeBatch(t, 2, 1, 10))
		}
	}
	if placed[dirs[0]] != 2 || placed[dirs[1]] != 2 {
		t.Fatalf("placement %v, want 2 per dir", placed)
	}
	l, _ := m.Get("orders", 3)
	if again, err := m.GetOrCreate("orders", 3, id, LogConfig{}); err != nil || again != l {
		t.Fatalf("GetOrCreate of an existing log: %v", err)
	}
	if _, err := m.GetOrCreate("orders", 3, RandomUUID(), LogConfig{}); err == nil {
		t.Fatalf("GetOrCreate with another topic id succeeded")
	}
	meta, _ := os.ReadFile(filepath.Join(l.Dir(), partitionMetadataFile))
	if string(meta) != "version: 0\ntopic_id: "+UUIDString(id)+"\n" {
		t.Fatalf("partition.metadata = %q", meta)
	}
	for _, bad := range []string{"../x", "a/b", "", "..", strings.Repeat("x", 250)} {
		if _, err := m.GetOrCreate(bad, 0, id, LogConfig{}); err == nil {
			t.Errorf("topic name %q accepted", bad)
		}
	}
	if err := l.IncrementLogStartOffset(4); err != nil {
		t.Fatal(err)
	}
	// Delete: gone from the manager and the disk.
	doomed, _ := m.Get("orders", 2)
	if err := m.Delete("orders", 2); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get("orders", 2); ok {
		t.Fatal("deleted log still managed")
	}
	if _, err := os.Stat(doomed.Dir()); !os.IsNotExist(err) {
		t.Fatalf("deleted log dir still there: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Checkpoints and clean-shutdown markers, per log directory. Placement
	// alternates (ties go to the first dir): p0, p2 in dirs[0]; p1, p3 in
	// dirs[1]; p2 was deleted. Only orders-3's log start offset is past its
	// first segment.
	wantFiles := map[string]string{
		filepath.Join(dirs[0], RecoveryPointCheckpointFile):  "0\n1\norders 0 2\n",
		filepath.Join(dirs[1], RecoveryPointCheckpointFile):  "0\n2\norders 1 4\norders 3 8\n",
		filepath.Join(dirs[0], LogStartOffsetCheckpointFile): "0\n0\n",
		filepath.Join(dirs[1], LogStartOffsetCheckpointFile): "0\n1\norders 3 4\n",
	}
	for path, want := range wantFiles {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", path, got, err, want)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); err != nil {
			t.Fatalf("no clean shutdown marker in %s: %v", d, err)
		}
	}

	// Reload: same logs, offsets and topic id; the markers are consumed.
	m2 := newManager(t, dirs)
	defer m2.Close()
	if n := len(m2.Logs()); n != 3 {
		t.Fatalf("reloaded %d logs, want 3", n)
	}
	l3, ok := m2.Get("orders", 3)
	if !ok || l3.LogEndOffset() != 8 || l3.LogStartOffset() != 4 {
		t.Fatalf("reloaded orders-3: ok %v LEO %d start %d; want 8 and 4", ok, l3.LogEndOffset(), l3.LogStartOffset())
	}
	if got, ok := l3.TopicID(); !ok || got != id {
		t.Fatalf("reloaded topic id %v %v", got, ok)
	}
	if off := mustAppend(t, l3, makeBatch(t, 1, 1, 10)); off != 8 {
		t.Fatalf("append after reload at %d, want 8", off)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatalf("clean shutdown marker still in %s after Load", d)
		}
	}
}

func TestLogManagerFinishesInterruptedDelete(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, "orders-0.0123456789abcdef0123456789abcdef-delete")
	os.MkdirAll(leftover, 0o755)
	os.WriteFile(filepath.Join(leftover, "00000000000000000000.log"), []byte("x"), 0o644)
	m := newManager(t, []string{dir})
	defer m.Close()
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("-delete dir survived Load: %v", err)
	}
	if len(m.Logs()) != 0 {
		t.Fatalf("loaded %d logs from a -delete dir", len(m.Logs()))
	}
}

func TestMetaProperties(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	cluster := NewClusterID()
	if len(cluster) != 22 {
		t.Fatalf("cluster id %q is not 22 characters", cluster)
	}
	if err := FormatDirs(dirs, cluster, 3); err != nil {
		t.Fatal(err)
	}
	a, err := ReadMetaProperties(dirs[0])
	if err != nil || a.Version != 1 || a.ClusterID != cluster || a.NodeID != 3 || a.DirectoryID == ([16]byte{}) {
		t.Fatalf("meta.properties = %+v, %v", a, err)
	}
	b, _ := ReadMetaProperties(dirs[1])
	if a.DirectoryID == b.DirectoryID {
		t.Fatal("two directories got the same directory.id")
	}
	raw, _ := os.ReadFile(filepath.Join(dirs[0], MetaPropertiesFile))
	for _, line := range []string{"version=1\n", "cluster.id=" + cluster + "\n", "node.id=3\n", "directory.id=" + UUIDString(a.DirectoryID) + "\n"} {
		if !strings.Contains(string(raw), line) {
			t.Errorf("meta.properties lacks %q:\n%s", line, raw)
		}
	}
	// Formatting again is a no-op; another cluster or node is refused.
	if err := FormatDirs(dirs, cluster, 3); err != nil {
		t.Fatal(err)
	}
	if again, _ := ReadMetaProperties(dirs[0]); again != a {
		t.Fatalf("reformat changed meta.properties: %+v", again)
	}
	if err := FormatDirs(dirs, NewClusterID(), 3); err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Fatalf("other cluster: %v", err)
	}
	if err := FormatDirs(dirs, cluster, 4); err == nil || !strings.Contains(err.Error(), "belongs to node") {
		t.Fatalf("other node: %v", err)
	}
	// A file Kafka wrote (Java properties, comments, any key order).
	kafka := "#\n#Thu Jan 01 00:00:00 UTC 2026\nnode.id=1\ndirectory.id=" + UUIDString(a.DirectoryID) + "\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
	os.WriteFile(filepath.Join(dirs[1], MetaPropertiesFile), []byte(kafka), 0o644)
	k, err := ReadMetaProperties(dirs[1])
	if err != nil || k.ClusterID != "MkU3OEVBNTcwNTJENDM2Qk" || k.NodeID != 1 {
		t.Fatalf("Kafka's meta.properties: %+v, %v", k, err)
	}
	if _, err := ReadMetaProperties(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unformatted dir: %v", err)
	}
}

// TestGetOrCreateAppliesConfigToLoadedLog: a log loaded at start-up runs on
// the broker defaults until GetOrCreate hands it its topic's configuration.
func TestGetOrCreateAppliesConfigToLoadedLog(t *testing.T) {
	dir := t.TempDir()
	m, err := NewLogManager(ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreate("state", 0, [16]byte{}, LogConfig{SegmentBytes: 2 << 20, CleanupPolicy: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m, err = NewLogManager(ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	l, ok := m.Get("state", 0)
	if !ok {
		t.Fatal("log not loaded")
	}
	if got := l.Config(); got.CleanupPolicy.Compact() || got.SegmentBytes == 2<<20 {
		t.Fatalf("loaded log already has the topic config: %+v", got)
	}
	again, err := m.GetOrCreate("state", 0, [16]byte{}, LogConfig{SegmentBytes: 2 << 20, CleanupPolicy: CleanupCompact})
	if err != nil || again != l {
		t.Fatalf("GetOrCreate: %v", err)
	}
	if got := l.Config(); !got.CleanupPolicy.Compact() || got.SegmentBytes != 2<<20 {
		t.Fatalf("config after GetOrCreate: policy %v segment.bytes %d", got.CleanupPolicy, got.SegmentBytes)
	}
}

// A partition whose directory would be the metadata log's is refused, so
// nothing but the raft package ever writes there.
func TestGetOrCreateRefusesMetadataLogDir(t *testing.T) {
	dir := t.TempDir()
	m, err := NewLogManager(ManagerConfig{Dirs: []string{dir}, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreate("__cluster_metadata", 0, [16]byte{}, LogConfig{}); err == nil {
		t.Fatal("GetOrCreate(__cluster_metadata, 0) succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, MetadataLogDirName)); !os.IsNotExist(err) {
		t.Fatalf("metadata log directory touched: %v", err)
	}
	if _, err := m.GetOrCreate("__cluster_metadata", 1, [16]byte{}, LogConfig{}); err != nil {
		t.Fatalf("partition 1 has its own directory: %v", err)
	}
}

// TestCleanShutdownBrokerEpoch: Close writes the broker epoch into each
// directory's .kafka_cleanshutdown as Kafka does; the next Load reads it
// back when every directory names the same one, and -1 otherwise (a
// directory not stopped cleanly, an empty file of an older Samsa, two
// different epochs).
func TestCleanShutdownBrokerEpoch(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	load := func() *LogManager { t.Helper(); return newManager(t, dirs) } // NewLogManager and Load
	m := load()
	if e := m.PreviousBrokerEpoch(); e != -1 {
		t.Fatalf("first start: previous epoch %d, want -1", e)
	}
	m.SetBrokerEpoch(42)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dirs[1], CleanShutdownFile))
	if err != nil || string(b) != `{"version":0,"brokerEpoch":42}` {
		t.Fatalf("clean-shutdown file %q, %v", b, err)
	}
	m = load()
	if e := m.PreviousBrokerEpoch(); e != 42 {
		t.Fatalf("after a clean stop at epoch 42: previous epoch %d", e)
	}
	m.Close() // no epoch set: -1 written
	m = load()
	if e := m.PreviousBrokerEpoch(); e != -1 {
		t.Fatalf("after a stop with no epoch: previous epoch %d, want -1", e)
	}
	for _, tc := range []struct{ name, a, b string }{
		{"empty file", `{"version":0,"brokerEpoch":7}`, ``},
		{"different epochs", `{"version":0,"brokerEpoch":7}`, `{"version":0,"brokerEpoch":8}`},
		{"one directory not stopped cleanly", `{"version":0,"brokerEpoch":7}`, "-"},
	} {
		m.Close()
		for i, content := range []string{tc.a, tc.b} {
			path := filepath.Join(dirs[i], CleanShutdownFile)
			if content == "-" {
				os.Remove(path)
			} else if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m = load()
		if e := m.PreviousBrokerEpoch(); e != -1 {
			t.Fatalf("%s: previous epoch %d, want -1", tc.name, e)
		}
	}
	m.Close()
}
