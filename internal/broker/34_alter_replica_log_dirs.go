package broker

// AlterReplicaLogDirs, versions 1-2.
//
// Behavior:
//   - Moves each named partition's replica on this broker to the named log
//     directory (one of log.dirs, compared as absolute paths) while it keeps
//     serving: a future log "<topic>-<partition>.<id>-future" is filled in
//     the destination and replaces the current log once caught up
//     (replica.Manager.AlterLogDir). The answer comes at once; the move
//     shows in DescribeLogDirs as a future replica until it is done.
//   - A partition named under several directories goes to the last one, as
//     Kafka's request builds a map.
//   - Errors per partition, as Kafka's ReplicaManager: LOG_DIR_NOT_FOUND for
//     a directory not in log.dirs; KAFKA_STORAGE_ERROR for an offline one,
//     or while any log directory is offline; REPLICA_NOT_AVAILABLE for a
//     partition without a replica here, which is then created in that
//     directory if it arrives; INVALID_TOPIC_EXCEPTION for a topic name too
//     long for the future directory's name. The destination already
//     holding the replica, or a move already going there, is success.
//   - Without ALTER on the cluster every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/storage"
)

func handleAlterReplicaLogDirs(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	resp.Version = req.Version
	type tp struct {
		topic     string
		partition int32
	}
	dirOf := map[tp]string{}
	var order []tp
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, seen := dirOf[k]; !seen {
					order = append(order, k)
				}
				dirOf[k] = d.Dir
			}
		}
	}
	allowed := b.authz(c).cluster(kmsg.ACLOperationAlter)
	index := map[string]int{}
	for _, k := range order {
		code := kerr.ClusterAuthorizationFailed.Code
		if allowed {
			code = b.errCode(b.alterReplicaLogDir(k.topic, k.partition, dirOf[k]), "alter replica log dir")
		}
		i, ok := index[k.topic]
		if !ok {
			i = len(resp.Topics)
			index[k.topic] = i
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = k.topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = k.partition, code
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// maxDirNameLen is the longest file name Kafka allows a future log
// directory (KAFKA-4893).
const maxDirNameLen = 255

func (b *Broker) alterReplicaLogDir(topic string, partition int32, dir string) error {
	// "<topic>-<partition>.<32 hex>-future"
	if len(storage.LogDirName(topic, partition))+1+32+len("-future") > maxDirNameLen {
		return fmt.Errorf("%w: the topic name is too long", kerr.InvalidTopicException)
	}
	if b.cfg.Replicas == nil {
		return kerr.ReplicaNotAvailable
	}
	return b.cfg.Replicas.AlterLogDir(topic, partition, dir)
}
