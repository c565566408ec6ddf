package broker

// DescribeLogDirs, versions 1-5.
//
// Behavior:
//   - Answers for this broker only (clients ask every broker): each log
//     directory of log.dirs with the partitions hosted in it, their size on
//     disk (the sum of their segments) and OffsetLag, Kafka's
//     max(HW - LEO, 0), which is 0 for any current replica.
//   - A replica moving to another log directory (AlterReplicaLogDirs) is
//     listed in its destination too, with IsFuture set and OffsetLag the
//     offsets it still has to copy (current LEO - future LEO), as Kafka.
//   - A log directory taken offline by an I/O failure answers
//     KAFKA_STORAGE_ERROR and no partitions, as Kafka's. (The metadata
//     log's own directory, metadata.log.dir, is not listed when it is
//     not one of log.dirs.)
//   - Null topics describes every partition; named topics and partitions
//     that are not hosted here are left out.
//   - v4: TotalBytes and UsableBytes of the directory's file system
//     (statfs; -1 when it fails).
//   - v5: IsCordoned, always false: Samsa does not cordon log directories
//     (KIP-1066's log.dirs.cordoned, which keeps new partitions off a
//     directory).
//   - Without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED and no
//     directories.

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/storage"
)

func handleDescribeLogDirs(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.Version = req.Version
	if !b.authz(c).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var dirs []string
	if b.cfg.Static != nil {
		for _, d := range b.cfg.Static.LogDirs {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, t := range b.cfg.Image().Topics() {
		if b.cfg.Replicas == nil {
			break
		}
		parts := make([]int32, 0, len(t.Partitions))
		if req.Topics == nil {
			for i := range t.Partitions {
				parts = append(parts, int32(i))
			}
		} else {
			for _, rt := range req.Topics {
				if rt.Topic == t.Name {
					parts = append(parts, rt.Partitions...)
				}
			}
		}
		for _, i := range parts {
			p, ok := b.cfg.Replicas.Partition(t.Name, i)
			if !ok {
				continue
			}
			add := func(log *storage.Log, lag int64, future bool) {
				dir := filepath.Dir(filepath.Clean(log.Dir()))
				if !slices.Contains(dirs, dir) {
					dirs = append(dirs, dir)
				}
				rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				rp.Partition, rp.OffsetLag, rp.IsFuture = i, lag, future
				for _, s := range log.Segments() {
					rp.Size += s.Size
				}
				if byDir[dir] == nil {
					byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
				}
				byDir[dir][t.Name] = append(byDir[dir][t.Name], rp)
			}
			off := p.Offsets()
			add(p.Log(), max(off.HighWatermark-off.LogEndOffset, 0), false)
			if fut, lag, moving := p.FutureLog(); moving {
				add(fut, lag, true)
			}
		}
	}
	var offline []string
	if b.cfg.Replicas != nil {
		for _, d := range b.cfg.Replicas.OfflineLogDirs() {
			offline = append(offline, filepath.Clean(d))
		}
	}
	for _, dir := range dirs {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = dir
		if slices.Contains(offline, dir) {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		topics := byDir[dir]
		names := make([]string, 0, len(topics))
		for name := range topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic, rt.Partitions = name, topics[name]
			rd.Topics = append(rd.Topics, rt)
		}
		if req.Version >= 4 {
			rd.TotalBytes, rd.UsableBytes = diskSpace(dir)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}

// diskSpace is the size and the space available to us of the file system
// holding dir, or -1, -1.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs
}
