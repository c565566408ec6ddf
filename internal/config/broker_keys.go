package config

import "sort"

// null marks a key whose Kafka default is null: it has no value unless set.
const null = "\x00null"

const (
	maxInt  = "2147483647"
	maxLong = "9223372036854775807"
)

func k(name string, t Type, def string, v Validator, imp Importance, dyn Dynamic, doc string) *Key {
	return &Key{Name: name, Type: t, Default: def, HasDefault: def != null, Validator: v,
		Importance: imp, Dynamic: dyn, Doc: doc}
}

func internal(key *Key) *Key { key.Internal = true; return key }

var securityProtocols = oneOf{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// compressionTypes are the broker-side compression types (BrokerCompressionType).
var compressionTypes = oneOf{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// brokerKeyList is every broker key we know, with Kafka's type, default,
// validator, importance and dynamic-update mode. Docs are our own words.
var brokerKeyList = withHTTPKeys(withRestProxyKeys(withSchemaRegistryKeys([]*Key{
	// Node identity and roles.
	k("node.id", Int, "-1", nil, High, ReadOnly, "The id of this node, unique in the cluster; required when process.roles is set."),
	k("broker.id", Int, "-1", nil, High, ReadOnly, "Legacy broker id; when set it must equal node.id."),
	k("process.roles", List, "", listOf{"broker", "controller"}, High, ReadOnly, "The roles of this node: broker, controller, or both (combined)."),
	k("broker.rack", String, null, nil, Medium, ReadOnly, "The rack of this broker, used for rack-aware replica placement."),

	// Listeners.
	k("listeners", String, "PLAINTEXT://:9092", nil, High, PerBroker, "Comma-separated NAME://host:port endpoints to listen on; an empty host binds all interfaces."),
	k("advertised.listeners", String, null, nil, High, PerBroker, "Endpoints published to clients and other nodes; defaults to listeners."),
	k("listener.security.protocol.map", String, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", nil, Low, PerBroker, "Maps each listener name to its security protocol, as NAME:PROTOCOL pairs."),
	k("controller.listener.names", String, null, nil, High, ReadOnly, "Comma-separated names of the listeners used by the controller quorum."),
	k("inter.broker.listener.name", String, null, nil, Medium, ReadOnly, "Listener brokers use to talk to each other; defaults to the one named after security.inter.broker.protocol."),
	k("security.inter.broker.protocol", String, "PLAINTEXT", securityProtocols, Medium, ReadOnly, "Security protocol between brokers; set this or inter.broker.listener.name, not both."),

	// KRaft quorum.
	k("controller.quorum.voters", List, "", nil, High, ReadOnly, "Static controller quorum as id@host:port entries."),
	k("controller.quorum.bootstrap.servers", List, "", nil, High, ReadOnly, "host:port endpoints used to discover a dynamic controller quorum."),
	k("controller.quorum.election.timeout.ms", Int, "1000", nil, High, ReadOnly, "Time without a leader before a voter starts an election."),
	k("controller.quorum.fetch.timeout.ms", Int, "2000", nil, High, ReadOnly, "Time without a successful fetch from the leader before a voter becomes a candidate."),
	k("controller.quorum.election.backoff.max.ms", Int, "1000", nil, High, ReadOnly, "Maximum back-off before starting a new election."),
	k("controller.quorum.request.timeout.ms", Int, "2000", nil, Medium, ReadOnly, "Time to wait for a response to a quorum request."),
	k("controller.quorum.retry.backoff.ms", Int, "20", nil, Low, ReadOnly, "Back-off before retrying a failed quorum request."),
	k("controller.quorum.append.linger.ms", Int, "25", nil, Medium, ReadOnly, "Time the leader waits to batch writes to the metadata log."),
	k("metadata.log.dir", String, null, nil, High, ReadOnly, "Directory of the cluster metadata log; defaults to the first log directory."),
	k("metadata.log.segment.bytes", Int, "1073741824", atLeast(8*1024*1024), High, ReadOnly, "Maximum size of a metadata log segment."),
	k("metadata.log.segment.ms", Long, "604800000", nil, High, ReadOnly, "Maximum age of a metadata log segment before it is rolled."),
	k("metadata.max.retention.bytes", Long, "104857600", nil, High, ReadOnly, "Maximum size of metadata log and snapshots before old snapshots and segments are deleted."),
	k("metadata.max.retention.ms", Long, "604800000", nil, High, ReadOnly, "Time to keep metadata log segments and snapshots."),
	k("metadata.log.max.record.bytes.between.snapshots", Long, "20971520", atLeast(1), High, ReadOnly, "Metadata log bytes between the latest snapshot and the high watermark that trigger a new snapshot."),
	k("metadata.log.max.snapshot.interval.ms", Long, "3600000", atLeast(0), High, ReadOnly, "Maximum time between metadata snapshots while there are new records; 0 disables."),
	k("metadata.max.idle.interval.ms", Int, "500", atLeast(0), Low, ReadOnly, "How often the active controller writes a no-op record to show liveness."),
	k("broker.heartbeat.interval.ms", Int, "2000", nil, Medium, ReadOnly, "Interval between broker heartbeats to the controller."),
	k("broker.session.timeout.ms", Int, "9000", nil, Medium, ReadOnly, "Time without a heartbeat after which the controller fences a broker."),
	k("initial.broker.registration.timeout.ms", Int, "60000", nil, Medium, ReadOnly, "Time a starting broker waits to register with the controller before giving up."),

	// Threads and network.
	k("background.threads", Int, "10", atLeast(1), High, ClusterWide, "Threads for background tasks."),
	k("num.network.threads", Int, "3", atLeast(1), High, ClusterWide, "Threads per listener that read requests and write responses."),
	k("num.io.threads", Int, "8", atLeast(1), High, ClusterWide, "Threads that process requests, including disk I/O."),
	k("num.replica.fetchers", Int, "1", nil, High, ClusterWide, "Fetcher threads per source broker for replication."),
	k("num.recovery.threads.per.data.dir", Int, "2", atLeast(1), High, ClusterWide, "Threads per log directory for recovery at start-up and flushing at shut-down."),
	k("quota.window.num", Int, "11", atLeast(1), Low, ReadOnly, "Samples kept in memory for client quotas."),
	k("quota.window.size.seconds", Int, "1", atLeast(1), Low, ReadOnly, "Time span of each sample for client quotas."),
	k("queued.max.requests", Int, "500", atLeast(1), High, ReadOnly, "Requests queued for the I/O threads before network threads stop reading."),
	k("queued.max.request.bytes", Long, "-1", nil, Medium, ReadOnly, "Bytes of requests read and not yet answered before no more are read from sockets (requests of up to 64 KiB are not counted); -1: 256 MiB, or socket.request.max.bytes if larger. Samsa also bounds the memory that decompressing produced batches holds at once by this many bytes (256 MiB when -1)."),
	k("socket.send.buffer.bytes", Int, "102400", nil, High, ReadOnly, "SO_SNDBUF of server sockets; -1 uses the OS default."),
	k("socket.receive.buffer.bytes", Int, "102400", nil, High, ReadOnly, "SO_RCVBUF of server sockets; -1 uses the OS default."),
	k("socket.request.max.bytes", Int, "104857600", atLeast(1), High, ReadOnly, "Largest request accepted; protects against memory exhaustion."),
	k("socket.listen.backlog.size", Int, "50", atLeast(1), Medium, ReadOnly, "Backlog of pending connections on each listening socket."),
	k("connections.max.idle.ms", Long, "600000", nil, Medium, ReadOnly, "Idle time after which a connection is closed."),
	k("connections.max.reauth.ms", Long, "0", nil, Medium, ReadOnly, "Maximum session lifetime before a SASL client must re-authenticate; 0 disables."),
	k("max.connections", Int, maxInt, atLeast(0), Medium, ClusterWide, "Maximum connections to this broker at any time."),
	k("max.connections.per.ip", Int, maxInt, atLeast(0), Medium, ClusterWide, "Maximum connections from one IP address."),
	k("max.connections.per.ip.overrides", String, "", hostCounts{}, Medium, ClusterWide, "Per-IP or per-host connection limits, as host:count pairs."),
	k("max.connection.creation.rate", Int, maxInt, atLeast(0), Medium, ClusterWide, "Maximum new connections per second on the broker."),
	k("fetch.max.bytes", Int, "57671680", atLeast(1024), Medium, ReadOnly, "Most bytes returned by one fetch request."),
	k("max.incremental.fetch.session.cache.slots", Int, "1000", atLeast(0), Medium, ReadOnly, "Most incremental fetch sessions (KIP-227) kept, split evenly over 8 shards; a new session goes to the next shard in turn and may evict only from its own shard."),
	k("fetch.purgatory.purge.interval.requests", Int, "1000", nil, Medium, ReadOnly, "Purge interval, in requests, of the fetch purgatory."),
	k("producer.purgatory.purge.interval.requests", Int, "1000", nil, Medium, ReadOnly, "Purge interval, in requests, of the produce purgatory."),
	k("controlled.shutdown.enable", Boolean, "true", nil, Medium, ReadOnly, "Move leadership away before shutting down."),

	// Topics and messages.
	k("message.max.bytes", Int, "1048588", atLeast(0), High, ClusterWide, "Largest record batch accepted, after compression; topic default for max.message.bytes."),
	k("compression.type", String, "producer", compressionTypes, High, ClusterWide, "Compression of stored batches; producer keeps what the producer sent."),
	k("compression.gzip.level", Int, "-1", gzipLevel{}, Medium, ClusterWide, "Level used when compression.type is gzip."),
	k("compression.lz4.level", Int, "9", between(1, 17), Medium, ClusterWide, "Level used when compression.type is lz4."),
	k("compression.zstd.level", Int, "3", between(-131072, 22), Medium, ClusterWide, "Level used when compression.type is zstd."),
	k("auto.create.topics.enable", Boolean, "true", nil, High, ReadOnly, "Create a topic when a client asks for metadata of one that does not exist."),
	k("max.request.partition.size.limit", Int, "2000", atLeast(1), Low, ReadOnly, "Most partitions one DescribeTopicPartitions response describes (KIP-966)."),
	k("delete.topic.enable", Boolean, "true", nil, High, ReadOnly, "Allow topics to be deleted."),
	k("num.partitions", Int, "1", atLeast(1), Medium, ReadOnly, "Default number of partitions of a new topic."),
	k("default.replication.factor", Int, "1", nil, Medium, ReadOnly, "Default replication factor of a new topic."),
	k("min.insync.replicas", Int, "1", atLeast(1), High, ClusterWide, "Fewest in-sync replicas that must have a write before an acks=all produce succeeds."),
	k("unclean.leader.election.enable", Boolean, "false", nil, High, ClusterWide, "Allow an out-of-sync replica to become leader, at the risk of losing data."),
	k("auto.leader.rebalance.enable", Boolean, "true", nil, High, ReadOnly, "Move leadership back to preferred replicas periodically."),
	k("leader.imbalance.check.interval.seconds", Long, "300", atLeast(1), High, ReadOnly, "How often leader balance is checked."),
	k("create.topic.policy.class.name", Class, null, nil, Low, ReadOnly, "Class validating topic creation."),
	k("alter.config.policy.class.name", Class, null, nil, Low, ReadOnly, "Class validating config changes."),

	// Replication.
	k("replica.lag.time.max.ms", Long, "30000", nil, High, ReadOnly, "A follower that has not caught up for this long leaves the ISR."),
	k("replica.socket.timeout.ms", Int, "30000", nil, High, ReadOnly, "Socket timeout of replica fetch requests."),
	k("replica.socket.receive.buffer.bytes", Int, "65536", nil, High, ReadOnly, "SO_RCVBUF of replica fetcher sockets."),
	k("replica.fetch.max.bytes", Int, "1048576", atLeast(0), Medium, ReadOnly, "Bytes fetched per partition by a follower."),
	k("replica.fetch.wait.max.ms", Int, "500", nil, Medium, ReadOnly, "Longest a follower fetch waits for data."),
	k("replica.fetch.min.bytes", Int, "1", nil, High, ReadOnly, "Least bytes a follower fetch waits for."),
	k("replica.fetch.response.max.bytes", Int, "10485760", atLeast(0), Medium, ReadOnly, "Most bytes in one follower fetch response."),
	k("replica.fetch.backoff.ms", Int, "1000", atLeast(0), Medium, ReadOnly, "Back-off after a follower fetch error."),
	k("replica.high.watermark.checkpoint.interval.ms", Long, "5000", nil, High, ReadOnly, "How often high watermarks are saved to disk."),
	k("replica.selector.class", String, null, nil, Medium, ReadOnly, "Class choosing the replica a consumer fetches from."),

	// Logs.
	k("log.dir", String, "/tmp/kafka-logs", nil, High, ReadOnly, "Log directory, used when log.dirs is not set."),
	k("log.dirs", String, null, nil, High, ReadOnly, "Comma-separated log directories; when unset, log.dir is used."),
	k("log.segment.bytes", Int, "1073741824", atLeast(1024*1024), High, ClusterWide, "Size at which a log segment is rolled."),
	k("log.roll.ms", Long, null, nil, High, ClusterWide, "Age at which a log segment is rolled; when unset, log.roll.hours is used."),
	k("log.roll.hours", Int, "168", atLeast(1), High, ReadOnly, "Age in hours at which a log segment is rolled; secondary to log.roll.ms."),
	k("log.roll.jitter.ms", Long, null, nil, High, ClusterWide, "Most random jitter subtracted from the roll time; when unset, log.roll.jitter.hours is used."),
	k("log.roll.jitter.hours", Int, "0", atLeast(0), High, ReadOnly, "Roll jitter in hours; secondary to log.roll.jitter.ms."),
	k("log.retention.ms", Long, null, nil, High, ClusterWide, "Time to keep a log segment; -1 means forever. Wins over log.retention.minutes and log.retention.hours."),
	k("log.retention.minutes", Int, null, nil, High, ReadOnly, "Retention in minutes; used when log.retention.ms is unset, wins over log.retention.hours."),
	k("log.retention.hours", Int, "168", nil, High, ReadOnly, "Retention in hours; used when neither log.retention.ms nor log.retention.minutes is set."),
	k("log.retention.bytes", Long, "-1", nil, High, ClusterWide, "Size a partition's log may reach before old segments are deleted; -1 means no limit."),
	k("log.retention.check.interval.ms", Long, "300000", atLeast(1), Medium, ReadOnly, "How often logs are checked for segments to delete."),
	k("log.cleanup.policy", List, "delete", listOf{"compact", "delete"}, Medium, ClusterWide, "What to do with segments beyond retention: delete, compact, or both."),
	k("log.index.size.max.bytes", Int, "10485760", atLeast(4), Medium, ClusterWide, "Maximum size of an offset index file."),
	k("log.index.interval.bytes", Int, "4096", atLeast(0), Medium, ClusterWide, "Bytes of log between offset index entries."),
	k("log.flush.interval.messages", Long, maxLong, atLeast(1), High, ClusterWide, "Records appended to a partition before it is fsynced."),
	k("log.flush.interval.ms", Long, null, nil, High, ClusterWide, "Longest a record stays unflushed; when unset, log.flush.scheduler.interval.ms is used."),
	k("log.flush.scheduler.interval.ms", Long, maxLong, nil, High, ReadOnly, "How often the flusher checks whether a log needs flushing."),
	k("log.flush.offset.checkpoint.interval.ms", Int, "60000", atLeast(0), High, ReadOnly, "How often the recovery point is saved."),
	k("log.flush.start.offset.checkpoint.interval.ms", Int, "60000", atLeast(0), High, ReadOnly, "How often log start offsets are saved."),
	k("log.segment.delete.delay.ms", Long, "60000", atLeast(0), High, ClusterWide, "Delay before a deleted segment's files are removed."),
	k("log.preallocate", Boolean, "false", nil, Medium, ClusterWide, "Preallocate segment files at full size."),
	k("log.message.timestamp.type", String, "CreateTime", oneOf{"CreateTime", "LogAppendTime"}, Medium, ClusterWide, "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime)."),
	k("log.message.timestamp.before.max.ms", Long, maxLong, atLeast(0), Medium, ClusterWide, "How far in the past a CreateTime timestamp may be."),
	k("log.message.timestamp.after.max.ms", Long, "3600000", atLeast(0), Medium, ClusterWide, "How far in the future a CreateTime timestamp may be."),
	k("log.cleaner.enable", Boolean, "true", nil, Medium, ReadOnly, "Run the log cleaner (compaction)."),
	k("log.cleaner.threads", Int, "1", atLeast(0), Medium, ClusterWide, "Log cleaner threads."),
	internal(k("samsa.log.max.open.files", Int, "0", atLeast(0), Medium, ReadOnly, "Samsa only: the most segment and index files the node keeps open at once; idle ones are closed least recently used first and reopened on demand. 0 means half of the process's open-file limit (RLIMIT_NOFILE).")),
	k("log.cleaner.io.max.bytes.per.second", Double, "1.7976931348623157E308", nil, Medium, ClusterWide, "I/O throttle of the log cleaner."),
	k("log.cleaner.dedupe.buffer.size", Long, "134217728", nil, Medium, ClusterWide, "Memory for deduplication across all cleaner threads."),
	k("log.cleaner.io.buffer.size", Int, "524288", atLeast(0), Medium, ClusterWide, "I/O buffer memory across all cleaner threads."),
	k("log.cleaner.io.buffer.load.factor", Double, "0.9", nil, Medium, ClusterWide, "Load factor of the cleaner's dedupe buffer."),
	k("log.cleaner.backoff.ms", Long, "15000", atLeast(0), Medium, ClusterWide, "Sleep when there is no log to clean."),
	k("log.cleaner.min.cleanable.ratio", Double, "0.5", between(0, 1), Medium, ClusterWide, "Least dirty share of a log before it is cleaned."),
	k("log.cleaner.delete.retention.ms", Long, "86400000", atLeast(0), Medium, ClusterWide, "Time to keep tombstones in compacted logs."),
	k("log.cleaner.min.compaction.lag.ms", Long, "0", atLeast(0), Medium, ClusterWide, "Least age of a record before it may be compacted."),
	k("log.cleaner.max.compaction.lag.ms", Long, maxLong, atLeast(1), Medium, ClusterWide, "Greatest age of a record before it must be eligible for compaction."),
	k("log.local.retention.ms", Long, "-2", atLeast(-2), Medium, ClusterWide, "Local retention with tiered storage; -2 means use the total retention."),
	k("log.local.retention.bytes", Long, "-2", atLeast(-2), Medium, ClusterWide, "Local size limit with tiered storage; -2 means use the total limit."),
	k("log.dir.failure.timeout.ms", Long, "30000", atLeast(1), Low, ReadOnly, "Time to report a failed log directory to the controller before shutting down."),
	k("remote.log.storage.system.enable", Boolean, "false", nil, Medium, ReadOnly, "Enable tiered storage."),

	// Group coordinator and __consumer_offsets.
	k("offsets.topic.replication.factor", Short, "3", atLeast(1), High, ReadOnly, "Replication factor of __consumer_offsets."),
	k("offsets.topic.num.partitions", Int, "50", atLeast(1), High, ReadOnly, "Partitions of __consumer_offsets; do not change after deployment."),
	k("offsets.topic.segment.bytes", Int, "104857600", atLeast(1), High, ReadOnly, "Segment size of __consumer_offsets."),
	k("offsets.topic.compression.codec", Int, "0", nil, High, ReadOnly, "Compression codec of __consumer_offsets."),
	k("offsets.load.buffer.size", Int, "5242880", atLeast(1), High, ReadOnly, "Read batch size when loading offsets into the cache."),
	k("offsets.retention.minutes", Int, "10080", atLeast(1), High, ReadOnly, "Time committed offsets of an empty group are kept."),
	k("offsets.retention.check.interval.ms", Long, "600000", atLeast(1), High, ReadOnly, "How often stale offsets are looked for."),
	k("offsets.commit.timeout.ms", Int, "5000", atLeast(1), High, ReadOnly, "Time an offset commit waits for replication."),
	k("offset.metadata.max.bytes", Int, "4096", nil, High, ReadOnly, "Largest metadata string with an offset commit."),
	k("group.initial.rebalance.delay.ms", Int, "3000", nil, Medium, ReadOnly, "Wait for more members before the first rebalance of a classic group."),
	k("group.min.session.timeout.ms", Int, "6000", nil, Medium, ReadOnly, "Smallest session timeout a classic group member may ask for."),
	k("group.max.session.timeout.ms", Int, "1800000", nil, Medium, ReadOnly, "Largest session timeout a classic group member may ask for."),
	k("group.max.size", Int, maxInt, atLeast(1), Medium, ReadOnly, "Most members of one classic group."),
	k("group.coordinator.rebalance.protocols", List, "classic,consumer,streams", listOf{"classic", "consumer", "share", "streams"}, Medium, ReadOnly, "Rebalance protocols the group coordinator serves."),
	k("group.coordinator.num.threads", Int, "4", atLeast(1), Medium, ReadOnly, "Group coordinator threads."),
	// KIP-848 consumer groups: group.consumer.*. The min/max keys bound
	// what a GROUP config (consumer.*) may set; see group_keys.go.
	k("group.consumer.session.timeout.ms", Int, "45000", atLeast(1), Medium, ReadOnly, "Session timeout of consumer-protocol (KIP-848) members."),
	k("group.consumer.min.session.timeout.ms", Int, "45000", atLeast(1), Medium, ReadOnly, "Smallest consumer.session.timeout.ms a group may set."),
	k("group.consumer.max.session.timeout.ms", Int, "60000", atLeast(1), Medium, ReadOnly, "Largest consumer.session.timeout.ms a group may set."),
	k("group.consumer.heartbeat.interval.ms", Int, "5000", atLeast(1), Medium, ReadOnly, "Heartbeat interval of consumer-protocol (KIP-848) members."),
	k("group.consumer.min.heartbeat.interval.ms", Int, "5000", atLeast(1), Medium, ReadOnly, "Smallest consumer.heartbeat.interval.ms a group may set."),
	k("group.consumer.max.heartbeat.interval.ms", Int, "15000", atLeast(1), Medium, ReadOnly, "Largest consumer.heartbeat.interval.ms a group may set."),
	k("group.consumer.max.size", Int, maxInt, atLeast(1), Medium, ReadOnly, "Most members of one consumer-protocol group."),
	k("group.consumer.assignors", List, "uniform,range", listOf{"uniform", "range"}, Medium, ReadOnly, "Server-side assignors of consumer-protocol groups by name (uniform, range); the first is used when a member names none."),
	k("group.consumer.assignment.interval.ms", Int, "1000", atLeast(0), Medium, ClusterWide, "Least time between two assignment computations of a consumer-protocol group (accepted; Samsa assigns at once)."),
	k("group.consumer.min.assignment.interval.ms", Int, "0", atLeast(0), Medium, ReadOnly, "Smallest consumer.assignment.interval.ms a group may set."),
	k("group.consumer.max.assignment.interval.ms", Int, "15000", atLeast(0), Medium, ReadOnly, "Largest consumer.assignment.interval.ms a group may set."),
	internal(k("group.consumer.assignor.offload.enable", Boolean, "true", nil, Medium, ReadOnly, "Compute consumer-group assignments on a background thread (accepted; no effect in Samsa).")),
	// KIP-1071 streams groups: group.streams.*.
	k("group.streams.session.timeout.ms", Int, "45000", atLeast(1), Medium, ReadOnly, "Session timeout of streams-protocol (KIP-1071) members."),
	k("group.streams.min.session.timeout.ms", Int, "45000", atLeast(1), Medium, ReadOnly, "Smallest streams.session.timeout.ms a group may set."),
	k("group.streams.max.session.timeout.ms", Int, "60000", atLeast(1), Medium, ReadOnly, "Largest streams.session.timeout.ms a group may set."),
	k("group.streams.heartbeat.interval.ms", Int, "5000", atLeast(1), Medium, ReadOnly, "Heartbeat interval of streams-protocol (KIP-1071) members."),
	k("group.streams.min.heartbeat.interval.ms", Int, "5000", atLeast(1), Medium, ReadOnly, "Smallest streams.heartbeat.interval.ms a group may set."),
	k("group.streams.max.heartbeat.interval.ms", Int, "15000", atLeast(1), Medium, ReadOnly, "Largest streams.heartbeat.interval.ms a group may set."),
	k("group.streams.max.size", Int, maxInt, atLeast(1), Medium, ReadOnly, "Most members of one streams group."),
	k("group.streams.initial.rebalance.delay.ms", Int, "3000", atLeast(0), Medium, ReadOnly, "Wait for more members before the first assignment of a new streams group."),
	k("group.streams.num.standby.replicas", Int, "0", atLeast(0), Medium, ReadOnly, "Standby replicas of each task of a streams group."),
	k("group.streams.max.standby.replicas", Int, "2", atLeast(0), Medium, ReadOnly, "Largest streams.num.standby.replicas a group may set."),
	k("group.streams.assignment.interval.ms", Int, "1000", atLeast(0), Medium, ClusterWide, "Least time between two assignment computations of a streams group (accepted; Samsa assigns at once)."),
	k("group.streams.min.assignment.interval.ms", Int, "0", atLeast(0), Medium, ReadOnly, "Smallest streams.assignment.interval.ms a group may set."),
	k("group.streams.max.assignment.interval.ms", Int, "15000", atLeast(0), Medium, ReadOnly, "Largest streams.assignment.interval.ms a group may set."),
	k("group.streams.assignors", List, "sticky", listOf{"sticky"}, Medium, ReadOnly, "Server-side task assignors of streams groups by name (sticky); the first is used when a group names none."),
	k("group.streams.rack.aware.assignment.tags", List, "", nil, Low, ReadOnly, "Client tag keys over which standby tasks are spread (accepted; Samsa's assignor ignores tags)."),
	internal(k("group.streams.assignor.offload.enable", Boolean, "true", nil, Medium, ReadOnly, "Compute streams-group assignments on a background thread (accepted; no effect in Samsa).")),
	internal(k("group.streams.task.offset.interval.ms", Int, "60000", atLeast(1), Medium, ReadOnly, "How often streams members report their changelog offsets.")),
	internal(k("group.streams.min.task.offset.interval.ms", Int, "15000", atLeast(1), Medium, ReadOnly, "Smallest streams.task.offset.interval.ms a group may set.")),
	internal(k("group.streams.num.warmup.replicas", Int, "2", atLeast(0), Medium, ReadOnly, "Most warm-up task replicas of a streams group (accepted; Samsa plans no warm-up tasks).")),
	internal(k("group.streams.max.warmup.replicas", Int, "20", atLeast(0), Medium, ReadOnly, "Largest streams.num.warmup.replicas a group may set.")),
	internal(k("group.streams.acceptable.recovery.lag", Long, "10000", atLeast(0), Medium, ReadOnly, "Largest changelog lag at which a streams task counts as caught up.")),
	// KIP-932 share groups: group.share.*.
	internal(k("group.share.enable", Boolean, "false", nil, Medium, ReadOnly, "Enable share groups (early access).")),
	k("group.share.session.timeout.ms", Int, "45000", atLeast(1), Medium, ReadOnly, "Session timeout of share group members."),
	k("group.share.min.session.timeout.ms", Int, "45000", atLeast(1), Medium, ReadOnly, "Smallest share.session.timeout.ms a group may set."),
	k("group.share.max.session.timeout.ms", Int, "60000", atLeast(1), Medium, ReadOnly, "Largest share.session.timeout.ms a group may set."),
	k("group.share.heartbeat.interval.ms", Int, "5000", atLeast(1), Medium, ReadOnly, "Heartbeat interval of share group members."),
	k("group.share.min.heartbeat.interval.ms", Int, "5000", atLeast(1), Medium, ReadOnly, "Smallest share.heartbeat.interval.ms a group may set."),
	k("group.share.max.heartbeat.interval.ms", Int, "15000", atLeast(1), Medium, ReadOnly, "Largest share.heartbeat.interval.ms a group may set."),
	k("group.share.max.size", Int, "200", between(1, 1000), Medium, ReadOnly, "Most members of one share group."),
	k("group.share.assignors", List, "simple", listOf{"simple"}, Medium, ReadOnly, "The server-side assignor of share groups: exactly one name (simple)."),
	k("group.share.assignment.interval.ms", Int, "1000", atLeast(0), Medium, ClusterWide, "Least time between two assignment computations of a share group (accepted; Samsa assigns at once)."),
	k("group.share.min.assignment.interval.ms", Int, "0", atLeast(0), Medium, ReadOnly, "Smallest share.assignment.interval.ms a group may set."),
	k("group.share.max.assignment.interval.ms", Int, "15000", atLeast(0), Medium, ReadOnly, "Largest share.assignment.interval.ms a group may set."),
	internal(k("group.share.assignor.offload.enable", Boolean, "true", nil, Medium, ReadOnly, "Compute share-group assignments on a background thread (accepted; no effect in Samsa).")),
	k("group.share.record.lock.duration.ms", Int, "30000", between(1000, 3600000), Medium, ReadOnly, "How long a share group member holds the records it acquired."),
	k("group.share.min.record.lock.duration.ms", Int, "15000", between(1000, 30000), Medium, ReadOnly, "Smallest share.record.lock.duration.ms a group may set."),
	k("group.share.max.record.lock.duration.ms", Int, "60000", between(30000, 3600000), Medium, ReadOnly, "Largest share.record.lock.duration.ms a group may set."),
	k("group.share.delivery.count.limit", Int, "5", between(2, 10), Medium, ReadOnly, "Deliveries of a record to share group members before it is archived."),
	k("group.share.min.delivery.count.limit", Int, "2", between(2, 5), Medium, ReadOnly, "Smallest share.delivery.count.limit a group may set."),
	k("group.share.max.delivery.count.limit", Int, "10", between(5, 25), Medium, ReadOnly, "Largest share.delivery.count.limit a group may set."),
	k("group.share.partition.max.record.locks", Int, "2000", between(100, 10000), Medium, ReadOnly, "Most records in flight in one share partition."),
	k("group.share.min.partition.max.record.locks", Int, "100", between(100, 2000), Medium, ReadOnly, "Smallest share.partition.max.record.locks a group may set."),
	k("group.share.max.partition.max.record.locks", Int, "4000", between(2000, 10000), Medium, ReadOnly, "Largest share.partition.max.record.locks a group may set."),
	k("group.share.max.share.sessions", Int, "2000", atLeast(1), Medium, ReadOnly, "Most share sessions a broker keeps."),

	// Share coordinator and __share_group_state.
	k("share.coordinator.state.topic.replication.factor", Short, "3", atLeast(1), High, ReadOnly, "Replication factor of __share_group_state."),
	k("share.coordinator.state.topic.min.isr", Short, "2", atLeast(1), High, ReadOnly, "min.insync.replicas of __share_group_state."),
	k("share.coordinator.state.topic.num.partitions", Int, "50", atLeast(1), High, ReadOnly, "Partitions of __share_group_state."),
	k("share.coordinator.state.topic.segment.bytes", Int, "104857600", atLeast(1), High, ReadOnly, "Segment size of __share_group_state."),
	k("share.coordinator.snapshot.update.records.per.snapshot", Int, "500", between(0, 500), Medium, ReadOnly, "ShareUpdate records written for a share partition between two ShareSnapshot records."),
	k("share.coordinator.write.timeout.ms", Int, "5000", atLeast(1), High, ReadOnly, "How long a write to __share_group_state waits to be replicated."),
	k("share.coordinator.threads", Int, "1", atLeast(1), Medium, ReadOnly, "Share coordinator threads (Samsa runs each shard on the request's goroutine)."),
	k("share.coordinator.load.buffer.size", Int, "5242880", atLeast(1), High, ReadOnly, "Read batch size when loading share-group state."),
	internal(k("share.coordinator.state.topic.prune.interval.ms", Int, "300000", atLeast(1), Low, ReadOnly, "How often the share coordinator deletes the redundant records of __share_group_state.")),
	k("share.coordinator.state.topic.compression.codec", Int, "0", nil, High, ReadOnly, "Compression codec id of __share_group_state (Samsa writes it uncompressed, Kafka's default 0)."),
	k("share.coordinator.cached.buffer.max.bytes", Int, "1048588", atLeast(524288), Medium, ClusterWide, "Largest write buffer the share coordinator keeps for reuse (Samsa keeps none)."),
	k("share.coordinator.append.linger.ms", Int, "-1", atLeast(-1), Medium, ReadOnly, "How long share coordinator writes wait to be batched (Samsa writes at once)."),

	// Transactions, producer ids and __transaction_state.
	k("transaction.state.log.replication.factor", Short, "3", atLeast(1), High, ReadOnly, "Replication factor of __transaction_state."),
	k("transaction.state.log.min.isr", Int, "2", atLeast(1), High, ReadOnly, "min.insync.replicas of __transaction_state."),
	k("transaction.state.log.num.partitions", Int, "50", atLeast(1), High, ReadOnly, "Partitions of __transaction_state."),
	k("transaction.state.log.segment.bytes", Int, "104857600", atLeast(1), High, ReadOnly, "Segment size of __transaction_state."),
	k("transaction.state.log.load.buffer.size", Int, "5242880", atLeast(1), High, ReadOnly, "Read batch size when loading transaction state."),
	k("transaction.max.timeout.ms", Int, "900000", atLeast(1), High, ReadOnly, "Largest transaction timeout a producer may ask for."),
	k("transactional.id.expiration.ms", Int, "604800000", atLeast(1), High, ReadOnly, "Time without activity after which a transactional id expires."),
	k("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", atLeast(1), Low, ReadOnly, "How often timed-out transactions are rolled back."),
	k("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", atLeast(1), Low, ReadOnly, "How often expired transactional ids are removed."),
	k("transaction.partition.verification.enable", Boolean, "true", nil, Low, ClusterWide, "Verify that a partition was added to the transaction before a transactional write."),
	k("add.partitions.to.txn.retry.backoff.ms", Int, "20", atLeast(1), High, ReadOnly, "Pause before a partition leader asks the transaction coordinator again to add a partition (KIP-890) while the previous transaction's markers are written."),
	k("add.partitions.to.txn.retry.backoff.max.ms", Int, "100", atLeast(0), High, ReadOnly, "How long a partition leader keeps retrying to add a partition to a transaction before it answers the client."),
	k("producer.id.expiration.ms", Int, "86400000", atLeast(1), Low, ClusterWide, "Time without writes after which a producer id's state is dropped."),
	k("producer.id.expiration.check.interval.ms", Int, "600000", atLeast(1), Low, ReadOnly, "How often expired producer ids are removed."),

	// Security.
	k("authorizer.class.name", String, "", nil, Low, ReadOnly, "Authorizer class; empty disables authorization."),
	k("super.users", String, null, nil, Low, ReadOnly, "Semicolon-separated principals allowed everything (read by the authorizer)."),
	k("allow.everyone.if.no.acl.found", Boolean, "false", nil, Low, ReadOnly, "Allow access to resources without ACLs (read by the authorizer)."),
	k("principal.builder.class", Class, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", nil, Medium, PerBroker, "Class building the principal of a connection."),
	// The SASL keys are per-broker dynamic in Kafka; Samsa reads them at
	// start only, so they are read-only here: AlterConfigs refuses a
	// change rather than accept one that would never apply.
	k("sasl.enabled.mechanisms", List, "GSSAPI", nil, Medium, ReadOnly, "SASL mechanisms offered by the server: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER."),
	k("sasl.mechanism.inter.broker.protocol", String, "GSSAPI", nil, Medium, ReadOnly, "SASL mechanism this node logs in to other brokers' SASL inter-broker listener with (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), as the username and password of that listener's JAAS config for it."),
	k("sasl.mechanism.controller.protocol", String, "GSSAPI", nil, High, ReadOnly, "SASL mechanism this node logs in to the controllers' SASL controller listener with: PLAIN (SCRAM cannot serve the quorum, as in Kafka), as the username and password of that listener's JAAS config for it."),
	k("sasl.jaas.config", Password, null, nil, Medium, ReadOnly, "JAAS login configuration. A broker reads it only prefixed with the listener and mechanism: listener.name.<listener>.<mechanism>.sasl.jaas.config."),
	k("sasl.server.max.receive.size", Int, "524288", atLeast(1), Medium, ReadOnly, "Largest frame accepted before and during SASL authentication."),
	k("sasl.server.callback.handler.class", Class, null, nil, Medium, ReadOnly, "Server callback handler of a SASL mechanism. A broker reads it only prefixed with the listener and mechanism: listener.name.<listener>.<mechanism>.sasl.server.callback.handler.class. For OAUTHBEARER, org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler checks signed tokens against the keys of sasl.oauthbearer.jwks.endpoint.url; unset, OAUTHBEARER accepts unsigned tokens (the unsecured validator, for development only)."),
	// OAUTHBEARER's JWKS validation (OAuthBearerValidatorCallbackHandler).
	// Each may also be set as listener.name.<listener>.<key> or
	// listener.name.<listener>.oauthbearer.<key>; the most specific wins.
	k("sasl.oauthbearer.jwks.endpoint.url", String, null, nil, Medium, ReadOnly, "Where the broker gets the JSON Web Key Set whose keys verify token signatures: an http(s) URL, fetched at start, every sasl.oauthbearer.jwks.endpoint.refresh.ms and when a token names a key id not in the set, or a file: URL read once at start."),
	k("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, "3600000", nil, Low, ReadOnly, "Time between fetches of the JWKS from an http(s) sasl.oauthbearer.jwks.endpoint.url."),
	k("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, "100", nil, Low, ReadOnly, "First wait between failed attempts to fetch the JWKS; it doubles each attempt, up to sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms."),
	k("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, "10000", nil, Low, ReadOnly, "Longest wait between attempts to fetch the JWKS, and how long a refresh keeps retrying."),
	k("sasl.oauthbearer.clock.skew.seconds", Int, "30", nil, Low, ReadOnly, "Seconds of difference allowed between the identity provider's clock and the broker's when checking a token's exp and nbf."),
	k("sasl.oauthbearer.expected.audience", List, null, nil, Low, ReadOnly, "Audiences a token must name one of in its aud claim, compared exactly. Unset, a token that has an aud claim is refused (Kafka's rule)."),
	k("sasl.oauthbearer.expected.issuer", String, null, nil, Low, ReadOnly, "Issuer a token's iss claim must equal exactly; unset, the issuer is not checked."),
	k("sasl.oauthbearer.scope.claim.name", String, "scope", nil, Low, ReadOnly, "Name of the claim that holds a token's scope."),
	k("sasl.oauthbearer.sub.claim.name", String, "sub", nil, Low, ReadOnly, "Name of the claim that holds a token's subject, which becomes the principal User:<subject>."),
	k("connection.failed.authentication.delay.ms", Int, "100", atLeast(0), Low, ReadOnly, "Delay before a connection that failed authentication is closed."),
	k("ssl.keystore.type", String, "JKS", nil, Medium, PerBroker, "Key store format."),
	k("ssl.keystore.location", String, null, nil, High, PerBroker, "Key store file."),
	k("ssl.keystore.password", Password, null, nil, High, PerBroker, "Key store password."),
	k("ssl.key.password", Password, null, nil, High, PerBroker, "Private key password."),
	k("ssl.keystore.key", Password, null, nil, High, PerBroker, "Private key in PEM form."),
	k("ssl.keystore.certificate.chain", Password, null, nil, High, PerBroker, "Certificate chain in PEM form."),
	k("ssl.truststore.type", String, "JKS", nil, Medium, PerBroker, "Trust store format."),
	k("ssl.truststore.location", String, null, nil, High, PerBroker, "Trust store file."),
	k("ssl.truststore.password", Password, null, nil, High, PerBroker, "Trust store password."),
	k("ssl.truststore.certificates", Password, null, nil, High, PerBroker, "Trusted certificates in PEM form."),
	k("ssl.client.auth", String, "none", oneOf{"required", "requested", "none"}, Medium, PerBroker, "Whether clients must present a certificate."),
	k("ssl.protocol", String, "TLSv1.3", nil, Medium, PerBroker, "TLS protocol used to build the SSL context."),
	k("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", nil, Medium, PerBroker, "TLS versions accepted."),
	k("ssl.cipher.suites", List, "", nil, Medium, PerBroker, "Cipher suites accepted; empty means the defaults."),
	k("ssl.endpoint.identification.algorithm", String, "https", nil, Low, PerBroker, "Host name verification of the peer certificate when this node dials another over TLS: https checks the name, empty checks only the chain."),
	k("ssl.principal.mapping.rules", String, "DEFAULT", nil, Low, ReadOnly, "Rules mapping a client certificate's distinguished name to its principal name: DEFAULT or RULE:pattern/replacement/[LU], comma-separated; patterns are RE2 regular expressions."),
	k("ssl.allow.dn.changes", Boolean, "false", nil, Low, ReadOnly, "Whether a reloaded key store may carry a certificate with another subject."),
	k("ssl.allow.san.changes", Boolean, "false", nil, Low, ReadOnly, "Whether a reloaded key store may carry a certificate with other subject alternative names."),
	k("ssl.provider", String, null, nil, Medium, PerBroker, "Java security provider of the SSL context; Samsa uses Go's TLS and refuses a value."),
	k("ssl.keymanager.algorithm", String, "SunX509", nil, Medium, PerBroker, "Java key manager algorithm; accepted and ignored (Go's TLS has one)."),
	k("ssl.trustmanager.algorithm", String, "PKIX", nil, Medium, PerBroker, "Java trust manager algorithm; accepted and ignored (Go verifies chains with PKIX)."),
	k("ssl.secure.random.implementation", String, null, nil, Low, PerBroker, "Java SecureRandom implementation; accepted and ignored (Go uses the system's secure random source)."),
	k("ssl.engine.factory.class", Class, null, nil, Low, PerBroker, "Java class creating SSL engines; Samsa cannot load Java classes and refuses a value."),
	k("delegation.token.secret.key", Password, null, nil, Medium, ReadOnly, "Secret that signs delegation tokens; the same on every node. Unset, delegation tokens are disabled."),
	k("delegation.token.max.lifetime.ms", Long, "604800000", atLeast(1), Medium, ReadOnly, "The longest a delegation token lives, renewed or not."),
	k("delegation.token.expiry.time.ms", Long, "86400000", atLeast(1), Medium, ReadOnly, "How long a delegation token lives unless renewed."),
	k("delegation.token.expiry.check.interval.ms", Long, "3600000", atLeast(1), Low, ReadOnly, "How often the controller removes expired delegation tokens."),
	k("metric.reporters", List, "", nil, Low, ClusterWide, "Metric reporter classes."),
	internal(k("unstable.api.versions.enable", Boolean, "false", nil, Low, ReadOnly, "Advertise API versions still under development.")),
	internal(k("unstable.feature.versions.enable", Boolean, "false", nil, Low, ReadOnly, "Allow feature levels still under development.")),
	// Samsa's own: not a Kafka broker key, so not described.
	internal(k("rest.proxy.listeners", List, "", nil, Medium, ReadOnly, "http://host:port or https://host:port endpoints on which this node serves the REST Proxy (Confluent's REST Proxy API v2 and v3); empty: no proxy. The embedded single-node defaults set http://127.0.0.1:8082.")),
	// Samsa's own schema.registry.*, rest.proxy.* and http.* keys are added by withSchemaRegistryKeys, withRestProxyKeys and withHTTPKeys.
})))

// removedKeys are keys Kafka 4 no longer has; a file setting them gets a
// warning that says why instead of a bare "unknown".
var removedKeys = map[string]string{
	"zookeeper.connect":                       "ZooKeeper mode was removed in Kafka 4.0",
	"zookeeper.connection.timeout.ms":         "ZooKeeper mode was removed in Kafka 4.0",
	"zookeeper.session.timeout.ms":            "ZooKeeper mode was removed in Kafka 4.0",
	"log.message.format.version":              "message formats v0 and v1 were removed in Kafka 4.0",
	"log.message.downconversion.enable":       "down-conversion was removed in Kafka 4.0",
	"log.message.timestamp.difference.max.ms": "removed in Kafka 4.0; use log.message.timestamp.before.max.ms and log.message.timestamp.after.max.ms",
	"inter.broker.protocol.version":           "the metadata version is a KRaft feature level since Kafka 4.0",
	"leader.imbalance.per.broker.percentage":  "Kafka 4 has no such key: with auto.leader.rebalance.enable its controllers move every partition back to its preferred leader at each leader.imbalance.check.interval.seconds",
}

var brokerKeys = indexKeys(brokerKeyList)

func indexKeys(list []*Key) map[string]*Key {
	m := make(map[string]*Key, len(list))
	for _, key := range list {
		if m[key.Name] != nil {
			panic("config: duplicate key " + key.Name)
		}
		m[key.Name] = key
	}
	return m
}

// BrokerKey returns the definition of a broker key.
func BrokerKey(name string) (*Key, bool) { key, ok := brokerKeys[name]; return key, ok }

// BrokerKeys returns every broker key, sorted by name.
func BrokerKeys() []*Key { return sortedKeys(brokerKeyList) }

func sortedKeys(list []*Key) []*Key {
	out := append([]*Key(nil), list...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// brokerSynonyms lists, in precedence order, the broker keys that set the
// same value (Kafka's DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	}
	return []string{name}
}
