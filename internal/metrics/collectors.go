package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coordinator/group"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/replica"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	partitionCountDesc  = desc("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker (PartitionCount).")
	leaderCountDesc     = desc("kafka_server_replicamanager_leadercount", "Partitions this broker leads (LeaderCount).")
	underReplicatedDesc = desc("kafka_server_replicamanager_underreplicatedpartitions", "Partitions this broker leads whose ISR is smaller than their replica set (UnderReplicatedPartitions).")
	underMinISRDesc     = desc("kafka_server_replicamanager_underminisrpartitioncount", "Partitions this broker leads whose ISR is smaller than min.insync.replicas: acks=all writes to them fail (UnderMinIsrPartitionCount).")

	logSizeDesc     = desc("kafka_log_log_size", "Bytes of a partition's log segments on this broker (Log Size).", "topic", "partition")
	logStartDesc    = desc("kafka_log_log_logstartoffset", "A partition's log start offset on this broker (LogStartOffset).", "topic", "partition")
	logEndDesc      = desc("kafka_log_log_logendoffset", "A partition's log end offset on this broker (LogEndOffset).", "topic", "partition")
	logSegmentsDesc = desc("kafka_log_log_numlogsegments", "Segments of a partition's log on this broker (NumLogSegments).", "topic", "partition")

	activeControllerDesc  = desc("kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller, 0 on the other nodes (ActiveControllerCount).")
	offlinePartitionsDesc = desc("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader; reported by the active controller, 0 elsewhere (OfflinePartitionsCount).")
	globalTopicsDesc      = desc("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster; reported by the active controller, 0 elsewhere (GlobalTopicCount).")
	globalPartitionsDesc  = desc("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster; reported by the active controller, 0 elsewhere (GlobalPartitionCount).")
	fencedBrokersDesc     = desc("kafka_controller_kafkacontroller_fencedbrokercount", "Registered brokers that are fenced; reported by the active controller, 0 elsewhere (FencedBrokerCount).")
	activeBrokersDesc     = desc("kafka_controller_kafkacontroller_activebrokercount", "Registered brokers that are not fenced; reported by the active controller, 0 elsewhere (ActiveBrokerCount).")

	groupLagDesc    = desc("kafka_consumergroup_lag", "Records between a group's committed offset and the partition's high watermark, for the groups this node coordinates and the partitions it holds a log of (kafka_exporter's name).", "consumergroup", "topic", "partition")
	groupOffsetDesc = desc("kafka_consumergroup_current_offset", "A group's committed offset, for the groups this node coordinates (kafka_exporter's name).", "consumergroup", "topic", "partition")
)

// BrokerSource is what the broker's scrape-time metrics read: the
// metadata image and the node's partitions.
type BrokerSource struct {
	NodeID   int32
	Image    func() *metadata.Image
	Replicas *replica.Manager
}

// BrokerCollector computes kafka.server:type=ReplicaManager's gauges and
// kafka.log:type=Log's per partition when scraped.
type BrokerCollector struct{ src BrokerSource }

// NewBrokerCollector returns the collector of src.
func NewBrokerCollector(src BrokerSource) *BrokerCollector { return &BrokerCollector{src} }

func (c *BrokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{partitionCountDesc, leaderCountDesc, underReplicatedDesc, underMinISRDesc,
		logSizeDesc, logStartDesc, logEndDesc, logSegmentsDesc} {
		ch <- d
	}
}

func (c *BrokerCollector) Collect(ch chan<- prometheus.Metric) {
	me := c.src.NodeID
	refs := c.src.Image().PartitionsWithReplica(me)
	var leaders, under, underMin int
	for _, r := range refs {
		pi := r.Partition
		p, local := c.src.Replicas.Partition(r.Topic.Name, pi.Partition)
		if pi.Leader == me {
			leaders++
			if len(pi.ISR) < len(pi.Replicas) {
				under++
			}
			if minISR := 1; local {
				minISR = max(minISR, p.Config().MinInsyncReplicas)
				if len(pi.ISR) < minISR {
					underMin++
				}
			}
		}
		if !local {
			continue
		}
		l := p.Log()
		if l == nil {
			continue
		}
		var size int64
		segs := l.Segments()
		for _, s := range segs {
			size += s.Size
		}
		labels := []string{r.Topic.Name, strconv.Itoa(int(pi.Partition))}
		ch <- prometheus.MustNewConstMetric(logSizeDesc, prometheus.GaugeValue, float64(size), labels...)
		ch <- prometheus.MustNewConstMetric(logStartDesc, prometheus.GaugeValue, float64(l.LogStartOffset()), labels...)
		ch <- prometheus.MustNewConstMetric(logEndDesc, prometheus.GaugeValue, float64(l.LogEndOffset()), labels...)
		ch <- prometheus.MustNewConstMetric(logSegmentsDesc, prometheus.GaugeValue, float64(len(segs)), labels...)
	}
	ch <- prometheus.MustNewConstMetric(partitionCountDesc, prometheus.GaugeValue, float64(len(refs)))
	ch <- prometheus.MustNewConstMetric(leaderCountDesc, prometheus.GaugeValue, float64(leaders))
	ch <- prometheus.MustNewConstMetric(underReplicatedDesc, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(underMinISRDesc, prometheus.GaugeValue, float64(underMin))
}

// ControllerCollector computes kafka.controller:type=KafkaController's
// gauges from the metadata image when scraped. The cluster-wide counts
// are the active controller's, so that their sum over the nodes is the
// cluster's (Kafka's ActiveControllerCount works the same way).
type ControllerCollector struct {
	image  func() *metadata.Image
	active func() bool
}

// NewControllerCollector returns the collector of a controller; active
// reports whether it is the active one.
func NewControllerCollector(image func() *metadata.Image, active func() bool) *ControllerCollector {
	return &ControllerCollector{image, active}
}

func (c *ControllerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{activeControllerDesc, offlinePartitionsDesc, globalTopicsDesc, globalPartitionsDesc, fencedBrokersDesc, activeBrokersDesc} {
		ch <- d
	}
}

func (c *ControllerCollector) Collect(ch chan<- prometheus.Metric) {
	var active, offline, topics, partitions, fenced, unfenced float64
	if c.active() {
		active = 1
		img := c.image()
		for _, t := range img.Topics() {
			topics++
			for _, p := range t.Partitions {
				partitions++
				if p.Leader < 0 {
					offline++
				}
			}
		}
		for _, b := range img.Brokers() {
			if b.Fenced {
				fenced++
			} else {
				unfenced++
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(activeControllerDesc, prometheus.GaugeValue, active)
	ch <- prometheus.MustNewConstMetric(offlinePartitionsDesc, prometheus.GaugeValue, offline)
	ch <- prometheus.MustNewConstMetric(globalTopicsDesc, prometheus.GaugeValue, topics)
	ch <- prometheus.MustNewConstMetric(globalPartitionsDesc, prometheus.GaugeValue, partitions)
	ch <- prometheus.MustNewConstMetric(fencedBrokersDesc, prometheus.GaugeValue, fenced)
	ch <- prometheus.MustNewConstMetric(activeBrokersDesc, prometheus.GaugeValue, unfenced)
}

// GroupLagCollector computes consumer groups' committed offsets and lag
// when scraped, for the groups whose coordinator this node is: each
// committed offset, and its distance to the high watermark of the
// partitions this node holds a log of (exact where it leads them).
type GroupLagCollector struct {
	groups   *group.Coordinator
	replicas *replica.Manager
}

// NewGroupLagCollector returns the collector of a group coordinator.
func NewGroupLagCollector(groups *group.Coordinator, replicas *replica.Manager) *GroupLagCollector {
	return &GroupLagCollector{groups, replicas}
}

func (c *GroupLagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- groupLagDesc
	ch <- groupOffsetDesc
}

func (c *GroupLagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lreq := kmsg.NewPtrListGroupsRequest()
	groups := c.groups.ListGroups(ctx, lreq)
	if groups.ErrorCode != 0 || len(groups.Groups) == 0 {
		return
	}
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 9
	for _, g := range groups.Groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g.Group
		freq.Groups = append(freq.Groups, rg)
	}
	resp := c.groups.OffsetFetch(ctx, freq)
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			continue
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Offset < 0 {
					continue
				}
				labels := []string{g.Group, t.Topic, strconv.Itoa(int(p.Partition))}
				ch <- prometheus.MustNewConstMetric(groupOffsetDesc, prometheus.GaugeValue, float64(p.Offset), labels...)
				if rp, ok := c.replicas.Partition(t.Topic, p.Partition); ok {
					lag := max(rp.Offsets().HighWatermark-p.Offset, 0)
					ch <- prometheus.MustNewConstMetric(groupLagDesc, prometheus.GaugeValue, float64(lag), labels...)
				}
			}
		}
	}
}

// ISRChanges are kafka.server:type=ReplicaManager's IsrShrinksPerSec and
// IsrExpandsPerSec, counted from the metadata log by Publisher.
type ISRChanges struct{ shrinks, expands prometheus.Counter }

func newISRChanges() *ISRChanges {
	return &ISRChanges{
		shrinks: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrshrinks_total",
			Help: "Times the ISR of a partition this broker leads shrank under the same leader epoch (IsrShrinksPerSec)."}),
		expands: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_replicamanager_isrexpands_total",
			Help: "Times the ISR of a partition this broker leads grew under the same leader epoch (IsrExpandsPerSec)."}),
	}
}

func (c *ISRChanges) Describe(ch chan<- *prometheus.Desc) {
	c.shrinks.Describe(ch)
	c.expands.Describe(ch)
}

func (c *ISRChanges) Collect(ch chan<- prometheus.Metric) {
	c.shrinks.Collect(ch)
	c.expands.Collect(ch)
}

// Publisher is the metadata publisher of a broker's metrics: it counts
// the ISR changes of the partitions nodeID leads and drops the
// BrokerTopicMetrics series of deleted topics.
func (r *Registry) Publisher(nodeID int32) metadata.Publisher {
	return metadata.PublisherFunc(func(d *metadata.Delta, img *metadata.Image) {
		for _, t := range d.DeletedTopics {
			r.topics.Forget(t.Name)
		}
		if d.Full || d.Prev == nil {
			return
		}
		for id, parts := range d.ChangedPartitions {
			t, ok := img.TopicByID(id)
			prev, had := d.Prev.TopicByID(id)
			if !ok || !had {
				continue
			}
			for _, i := range parts {
				if int(i) >= len(t.Partitions) || int(i) >= len(prev.Partitions) {
					continue
				}
				now, was := t.Partitions[i], prev.Partitions[i]
				if now.Leader != nodeID || was.Leader != nodeID || now.LeaderEpoch != was.LeaderEpoch {
					continue
				}
				switch {
				case len(now.ISR) < len(was.ISR):
					r.isr.shrinks.Inc()
				case len(now.ISR) > len(was.ISR):
					r.isr.expands.Inc()
				}
			}
		}
	})
}

var (
	raftLeaderDesc      = desc("kafka_server_raftmetrics_current_leader", "Node id of the metadata quorum's leader as this voter knows it, -1 when none (raft-metrics current-leader).")
	raftEpochDesc       = desc("kafka_server_raftmetrics_current_epoch", "The metadata quorum's epoch (Raft term) as this voter knows it (raft-metrics current-epoch).")
	metadataAppliedDesc = desc("kafka_server_brokermetadatametrics_last_applied_record_offset", "Offset of the last metadata log record this node applied to its image (broker-metadata-metrics last-applied-record-offset).")
)

// RaftCollector reports a voter's view of the metadata quorum and how far
// the node applied the metadata log.
type RaftCollector struct {
	leader  func() uint64 // 0: none
	epoch   func() uint64
	applied func() uint64
}

// NewRaftCollector returns the collector of a node: leader and epoch are
// nil on a node that is no voter; applied is the offset of its image.
func NewRaftCollector(leader, epoch, applied func() uint64) *RaftCollector {
	return &RaftCollector{leader, epoch, applied}
}

func (c *RaftCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- metadataAppliedDesc
	if c.leader != nil {
		ch <- raftLeaderDesc
		ch <- raftEpochDesc
	}
}

func (c *RaftCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(metadataAppliedDesc, prometheus.GaugeValue, float64(c.applied()))
	if c.leader == nil {
		return
	}
	leader := float64(c.leader())
	if leader == 0 {
		leader = -1
	}
	ch <- prometheus.MustNewConstMetric(raftLeaderDesc, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(raftEpochDesc, prometheus.GaugeValue, float64(c.epoch()))
}
