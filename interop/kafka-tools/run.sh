#!/usr/bin/env bash
# Apache Kafka's own command-line tools against Samsa, through `java -cp`:
# TopicCommand, ConsoleProducer, ConsoleConsumer, GetOffsetShell,
# ConfigCommand (configs and client quotas), ConsumerGroupCommand,
# StreamsGroupCommand (with a Kafka Streams app from KAFKA_STREAMS_DIR),
# FeatureCommand, ClusterTool, ShareGroupCommand and DumpLogSegments
# reading Samsa's segment, offset-index and time-index files directly after
# a clean stop; LogDirsCommand and ReassignPartitionsCommand moving a
# partition between two log.dirs;
# then SASL/SCRAM with the Java client (users from ConfigCommand, KIP-368
# re-authentication, delegation tokens from DelegationTokenCommand), and AclCommand against a node with an authorizer.
# Needs SAMSA_BIN, INTEROP_RESULTS and KAFKA_TOOLS_DIR (the jars that
# `mvn dependency:copy-dependencies` put there; see ../run).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
: "${KAFKA_TOOLS_DIR:?set KAFKA_TOOLS_DIR to the directory of Kafka tool jars}"

ver=$(ls "$KAFKA_TOOLS_DIR" | sed -n 's/^kafka-tools-\([0-9.]*\)\.jar$/\1/p')
C="kafka-tools $ver"
work=$(mktemp -d)
trap 'stop_samsa; rm -rf "$work"' EXIT
start_samsa "$work/data" || { record "$C" "start samsa" fail "server did not start"; exit 1; }
B=$SAMSA_ADDR

# kt CLASS ARGS...: one tool run, bounded, SLF4J's start-up chatter dropped.
kt() {
	local cls=$1
	shift
	timeout 60 java -Xshare:auto -cp "$KAFKA_TOOLS_DIR/*" "org.apache.kafka.tools.$cls" "$@" 2> >(grep -v '^SLF4J' >&2)
}
# has FEATURE OUTPUT PATTERN [ISSUE]: pass when OUTPUT has a line matching the ERE.
has() {
	if grep -Eq -- "$3" <<<"$2"; then
		record "$C" "$1" pass
	else
		local note="no line matching /$3/ in: $(head -c 150 <<<"$2")"
		[ -n "${4:-}" ] && note="issue $4 ($note)"
		record "$C" "$1" fail "$note"
	fi
}

# TopicCommand: create with a config, list, describe, add partitions, delete.
out=$(kt TopicCommand --bootstrap-server "$B" --create --topic dump --partitions 1 --replication-factor 1 --config retention.ms=3600000 2>&1)
has "TopicCommand --create (with --config)" "$out" '^Created topic dump\.$'
kt TopicCommand --bootstrap-server "$B" --create --topic grow --partitions 1 --replication-factor 1 >/dev/null 2>&1
out=$(kt TopicCommand --bootstrap-server "$B" --alter --topic grow --partitions 3 2>&1; kt TopicCommand --bootstrap-server "$B" --describe --topic grow 2>&1)
has "TopicCommand --alter --partitions" "$out" 'PartitionCount: 3'
out=$(kt TopicCommand --bootstrap-server "$B" --list 2>&1)
expect_eq "$C" "TopicCommand --list" $'dump\ngrow' "$out"
out=$(kt TopicCommand --bootstrap-server "$B" --describe --topic dump 2>&1)
has "TopicCommand --describe" "$out" $'^\tTopic: dump\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1'
# DescribeTopicPartitions (KIP-966) answers the ELR lists, empty here.
has "TopicCommand --describe: Elr and LastKnownElr (DescribeTopicPartitions)" "$out" $'^\tTopic: dump\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: $'
out=$(kt TopicCommand --bootstrap-server "$B" --delete --topic grow 2>&1; kt TopicCommand --bootstrap-server "$B" --list 2>&1)
expect_eq "$C" "TopicCommand --delete" "dump" "$out"

# ConsoleProducer: two short keyed records, then 300 longer ones in ~1 KiB
# batches so the segment is big enough for index entries (index.interval.bytes=4096).
{
	printf 'k1:v1\nk2:v2\n'
	for i in $(seq 1 300); do echo "key$i:value-$i-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"; done
} | kt ConsoleProducer --bootstrap-server "$B" --topic dump --property parse.key=true \
	--property key.separator=: --producer-property batch.size=1024 --producer-property linger.ms=5 >/dev/null 2>"$work/producer.err"
out=$(kt GetOffsetShell --bootstrap-server "$B" --topic dump 2>&1)
expect_eq "$C" "ConsoleProducer + GetOffsetShell (latest)" "dump:0:302" "$out"
out=$(kt GetOffsetShell --bootstrap-server "$B" --topic dump --time -2 2>&1)
expect_eq "$C" "GetOffsetShell --time -2 (earliest)" "dump:0:0" "$out"
# -3 must name the first record holding the largest timestamp; which one
# that is depends on the producer's clock, so it is checked against the
# CreateTimes DumpLogSegments prints, once the server has stopped.
maxts_out=$(kt GetOffsetShell --bootstrap-server "$B" --topic dump --time -3 2>&1)

# ConsoleConsumer with an explicit partition (assign, no group).
out=$(kt consumer.ConsoleConsumer --bootstrap-server "$B" --topic dump --partition 0 --offset earliest \
	--max-messages 3 --timeout-ms 20000 --property print.key=true --property print.offset=true 2>&1)
has "ConsoleConsumer --partition --offset (assign)" "$out" $'^Offset:2\tkey1\tvalue-1-a+$'
expect_eq "$C" "ConsoleConsumer records (offset, key, value)" \
	$'Offset:0\tk1\tv1\nOffset:1\tk2\tv2\nOffset:2\tkey1\tvalue-1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' \
	"$(grep '^Offset:' <<<"$out")"

# ConsoleConsumer in a group, then ConsumerGroupCommand sees its offsets.
out=$(kt consumer.ConsoleConsumer --bootstrap-server "$B" --topic dump --group tools-group --from-beginning \
	--max-messages 302 --timeout-ms 20000 2>&1 | grep -c '^v')
expect_eq "$C" "ConsoleConsumer --group (subscribe)" "302" "$out" 3
out=$(kt consumer.group.ConsumerGroupCommand --bootstrap-server "$B" --describe --group tools-group 2>&1)
has "ConsumerGroupCommand --describe (committed offsets, lag)" "$out" '^tools-group +dump +0 +302 +302 +0 ' 3

# StreamsGroupCommand (kafka-streams-groups): a word count with the streams
# rebalance protocol (KIP-1071; WordCountApp.java on Kafka Streams' jars in
# KAFKA_STREAMS_DIR) runs while the tool lists its group and describes its
# member, tasks and lag. The app stops when its standard input closes.
SG="StreamsGroupCommand --describe --members (streams group, KIP-1071)"
if [ -n "${KAFKA_STREAMS_DIR:-}" ]; then
	kt TopicCommand --bootstrap-server "$B" --create --topic wc-in --partitions 2 --replication-factor 1 >/dev/null 2>&1
	kt TopicCommand --bootstrap-server "$B" --create --topic wc-out --partitions 2 --replication-factor 1 >/dev/null 2>&1
	mkfifo "$work/wc.in"
	timeout 120 java -Xshare:auto -cp "$KAFKA_STREAMS_DIR/*" "$here/streams/WordCountApp.java" "$B" wc-app wc-in wc-out \
		<"$work/wc.in" >"$work/wc.out" 2>"$work/wc.err" &
	wc_pid=$!
	exec 3>"$work/wc.in"
	for _ in $(seq 90); do grep -q . "$work/wc.out" && break; sleep 1; done
	out=$(kt streams.StreamsGroupCommand --bootstrap-server "$B" --list 2>&1)
	expect_eq "$C" "StreamsGroupCommand --list" "wc-app" "$out"
	out=$(kt streams.StreamsGroupCommand --bootstrap-server "$B" --describe --members --group wc-app 2>&1)
	has "$SG" "$out" '^wc-app +[^ ]+ +[^ ]+ +wc-app-[^ ]+-consumer +ACTIVE: 0:\[0,1\]; 1:\[0,1\];' 14
	out=$(kt streams.StreamsGroupCommand --bootstrap-server "$B" --describe --group wc-app 2>&1)
	has "StreamsGroupCommand --describe (input and repartition topic lag)" "$out" '^wc-app +wc-app-counts-repartition +1 +0$' 14
	exec 3>&-
	wait "$wc_pid"
else
	record "$C" "$SG" fail "KAFKA_STREAMS_DIR is not set (interop/run fetches Kafka Streams' jars)"
fi

# ConfigCommand: describe a topic's override and a broker's static config.
out=$(kt ConfigCommand --bootstrap-server "$B" --describe --entity-type topics --entity-name dump 2>&1)
has "ConfigCommand --describe topic" "$out" '^  retention.ms=3600000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention.ms=3600000'
out=$(kt ConfigCommand --bootstrap-server "$B" --describe --entity-type brokers --entity-name 1 --all 2>&1)
has "ConfigCommand --describe broker --all" "$out" "^  log.dirs=$work/data sensitive=false synonyms=\{STATIC_BROKER_CONFIG:log.dirs="
# ConfigCommand --entity-type groups (GROUP config resources): an override
# is described with its broker synonym; a value outside the broker's bounds
# is refused with Kafka's message.
out=$(kt ConfigCommand --bootstrap-server "$B" --alter --entity-type groups --entity-name tools-cfg \
	--add-config consumer.session.timeout.ms=50000,share.auto.offset.reset=earliest 2>&1)
out+=$'\n'$(kt ConfigCommand --bootstrap-server "$B" --describe --entity-type groups --entity-name tools-cfg 2>&1)
has "ConfigCommand --alter/--describe --entity-type groups" "$out" \
	'^  consumer.session.timeout.ms=50000 sensitive=false synonyms=\{DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000\}'
out=$(kt ConfigCommand --bootstrap-server "$B" --alter --entity-type groups --entity-name tools-cfg --add-config share.delivery.count.limit=11 2>&1)
has "ConfigCommand --entity-type groups: out of bounds refused" "$out" \
	'InvalidConfigurationException: share.delivery.count.limit must be in the range 2 to 10 inclusive\.'

# ConfigCommand --alter (IncrementalAlterConfigs): it reports success and a
# describe afterwards shows the new value.
out=$(kt ConfigCommand --bootstrap-server "$B" --alter --entity-type topics --entity-name dump --add-config retention.ms=7200000 2>&1)
out+=$'\n'$(kt ConfigCommand --bootstrap-server "$B" --describe --entity-type topics --entity-name dump 2>&1)
if grep -q '^Completed updating config' <<<"$out" && grep -Eq '^  retention.ms=7200000 sensitive=false' <<<"$out"; then
	record "$C" "ConfigCommand --alter" pass
else
	record "$C" "ConfigCommand --alter" fail "no 'Completed updating config' and retention.ms=7200000 in: $(head -c 150 <<<"$out")"
fi

# ConfigCommand for client quotas (kafka-configs.sh --entity-type
# users|clients|ips): AlterClientQuotas and DescribeClientQuotas.
kt ConfigCommand --bootstrap-server "$B" --alter --entity-type users --entity-name alice --entity-type clients --entity-name app \
	--add-config producer_byte_rate=1048576,consumer_byte_rate=2097152 >/dev/null 2>&1
kt ConfigCommand --bootstrap-server "$B" --alter --entity-type clients --entity-default --add-config request_percentage=50 >/dev/null 2>&1
kt ConfigCommand --bootstrap-server "$B" --alter --entity-type ips --entity-name 10.1.2.3 --add-config connection_creation_rate=5 >/dev/null 2>&1
out=$(kt ConfigCommand --bootstrap-server "$B" --describe --entity-type users --entity-name alice --entity-type clients --entity-name app 2>&1
	kt ConfigCommand --bootstrap-server "$B" --describe --entity-type clients --entity-default 2>&1
	kt ConfigCommand --bootstrap-server "$B" --describe --entity-type ips 2>&1)
expect_eq "$C" "ConfigCommand --alter/--describe client quotas (user+client, default client, ip)" \
	"Quota configs for user-principal 'alice', client-id 'app' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0
Quota configs for the default client-id are request_percentage=50.0
Quota configs for ip '10.1.2.3' are connection_creation_rate=5.0" "$out"
out=$(kt ConfigCommand --bootstrap-server "$B" --alter --entity-type users --entity-name alice --entity-type clients --entity-name app --delete-config consumer_byte_rate 2>&1
	kt ConfigCommand --bootstrap-server "$B" --describe --entity-type users --entity-name alice --entity-type clients --entity-name app 2>&1)
has "ConfigCommand --delete-config client quota" "$out" "^Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1048576\.0$"

# FeatureCommand (kafka-features.sh): describe reads ApiVersions' features;
# downgrade and upgrade send UpdateFeatures.
out=$(kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand describe (metadata.version)" "$out" '^Feature: metadata\.version +SupportedMinVersion: 3\.3-IV3 +SupportedMaxVersion: 4\.1-IV1 +FinalizedVersionLevel: 4\.1-IV1 +Epoch: [0-9]+'
has "FeatureCommand describe (group.version)" "$out" '^Feature: group\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 1 +FinalizedVersionLevel: 1 '
out=$(kt FeatureCommand --bootstrap-server "$B" downgrade --feature group.version=0 2>&1; kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand downgrade --feature group.version=0" "$out" '^Feature: group\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 1 +FinalizedVersionLevel: 0 '
out=$(kt FeatureCommand --bootstrap-server "$B" upgrade --feature group.version=1 2>&1; kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand upgrade --feature group.version=1" "$out" '^Feature: group\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 1 +FinalizedVersionLevel: 1 '
# transaction.version: a new cluster runs transactions v2 (KIP-890) and
# may go down to v1 and back, as Kafka allows.
out=$(kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand describe (transaction.version)" "$out" '^Feature: transaction\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 2 +FinalizedVersionLevel: 2 '
# eligible.leader.replicas.version: a new cluster runs KIP-966's ELR, as
# Kafka 4.4 formats one.
has "FeatureCommand describe (eligible.leader.replicas.version)" "$out" '^Feature: eligible\.leader\.replicas\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 1 +FinalizedVersionLevel: 1 '
out=$(kt FeatureCommand --bootstrap-server "$B" downgrade --feature transaction.version=0 2>&1; kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand downgrade --feature transaction.version=0" "$out" '^Feature: transaction\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 2 +FinalizedVersionLevel: 0 '
out=$(kt FeatureCommand --bootstrap-server "$B" upgrade --feature transaction.version=2 2>&1; kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand upgrade --feature transaction.version=2" "$out" '^Feature: transaction\.version +SupportedMinVersion: 0 +SupportedMaxVersion: 2 +FinalizedVersionLevel: 2 '

# ClusterTool (kafka-cluster.sh): the cluster id from DescribeCluster, and
# UnregisterBroker forwarded to the controller, refusing an id that is not
# registered with Kafka's error and message.
out=$(kt ClusterTool cluster-id --bootstrap-server "$B" 2>&1)
has "ClusterTool cluster-id" "$out" '^Cluster ID: [A-Za-z0-9_-]{22}$'
out=$(kt ClusterTool unregister --bootstrap-server "$B" --id 5 2>&1)
has "ClusterTool unregister (unknown id)" "$out" 'BrokerIdNotRegisteredException: Broker ID 5 is not currently registered'
# ShareGroupCommand (kafka-share-groups.sh) once share.version is 1: a
# ConsoleShareConsumer joins tools-share; after its first fetch started the
# share partition (at the log end), three records come; --describe then
# shows the start offset past them. A new cluster starts at share.version 1.
out=$(kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --describe --group tools-share 2>&1)
if grep -q 'UnsupportedVersion' <<<"$out"; then
	record "$C" "ShareGroupCommand --describe (start offsets)" fail "share groups are not served: $(head -c 150 <<<"$out")"
else
	kt TopicCommand --bootstrap-server "$B" --create --topic shared --partitions 1 --replication-factor 1 >/dev/null 2>&1
	kt consumer.ConsoleShareConsumer --bootstrap-server "$B" --topic shared --group tools-share --max-messages 3 --timeout-ms 30000 >"$work/share.out" 2>"$work/share.err" &
	share_pid=$!
	for _ in $(seq 1 100); do
		out=$(kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --describe --group tools-share 2>&1)
		grep -Eq '^tools-share +shared +0 +0 ' <<<"$out" && break
		sleep 0.2
	done
	printf 's1\ns2\ns3\n' | kt ConsoleProducer --bootstrap-server "$B" --topic shared >/dev/null 2>&1
	wait "$share_pid"
	expect_eq "$C" "ConsoleShareConsumer (3 records)" $'s1\ns2\ns3' "$(cat "$work/share.out")"
	out=$(kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --describe --group tools-share 2>&1)
	has "ShareGroupCommand --describe (start offsets)" "$out" '^tools-share +shared +0 +3 +'
	out=$(kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --list 2>&1)
	has "ShareGroupCommand --list" "$out" '^tools-share$'
fi

# DumpLogSegments reads the files of a cleanly stopped server.
stop_samsa
seg="$work/data/dump-0/00000000000000000000"
out=$(kt DumpLogSegments --files "$seg.log" 2>&1)
batches=$(grep -c '^baseOffset:' <<<"$out")
valid=$(grep -c 'isvalid: true$' <<<"$out")
records=$(awk '/^baseOffset:/ { for (i = 1; i < NF; i++) if ($i == "count:") n += $(i+1) } END { print n+0 }' <<<"$out")
has "DumpLogSegments .log batches" "$out" '^baseOffset: 0 lastOffset: [0-9]+ count: [0-9]+ .* position: 0 .* magic: 2 compresscodec: none crc: [0-9]+ isvalid: true$'
expect_eq "$C" "DumpLogSegments .log: every batch CRC valid, 302 records" "$batches $batches 302" "$batches $valid $records"
last=$(grep '^baseOffset:' <<<"$out" | tail -1 | sed -n 's/.*lastOffset: \([0-9]*\) .*/\1/p')
expect_eq "$C" "DumpLogSegments .log: last offset" "301" "$last"
out=$(kt DumpLogSegments --deep-iteration --print-data-log --files "$seg.log" 2>&1)
expect_eq "$C" "DumpLogSegments --deep-iteration --print-data-log" \
	$'| offset: 0 key: k1 payload: v1\n| offset: 1 key: k2 payload: v2\n| offset: 301 key: key300 payload: value-300-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' \
	"$(grep '^| offset: ' <<<"$out" | sed -n '1p;2p;$p' | sed 's/ CreateTime: .* key: / key: /')"
# The first offset holding the largest CreateTime is what -3 had to answer.
want_maxts=$(awk '/^\| offset: / { for (i = 1; i < NF; i++) if ($i == "CreateTime:") { ts = $(i+1) + 0; if (n == 0 || ts > max) { max = ts; off = $3 }; n++ } }
	END { if (n) print "dump:0:" off }' <<<"$out")
if [ -n "$want_maxts" ]; then
	expect_eq "$C" "GetOffsetShell --time -3 (max timestamp)" "$want_maxts" "$maxts_out"
else
	record "$C" "GetOffsetShell --time -3 (max timestamp)" fail "no CreateTime in the DumpLogSegments output to check '$(head -c 80 <<<"$maxts_out")' against"
fi
# matches_log FEATURE RC OUTPUT ENTRY_ERE: DumpLogSegments checked an index
# against the log and found it consistent: the tool exited 0, printed
# entries, and reported no mismatch, out-of-order entry or exception.
matches_log() {
	local bad
	bad=$(grep -Ei -m1 'mismatch|out of order|exception|error' <<<"$3")
	if [ "$2" -ne 0 ]; then
		record "$C" "$1" fail "DumpLogSegments exited $2: $(tail -1 <<<"$3" | cut -c1-120)"
	elif ! grep -Eq -- "$4" <<<"$3"; then
		record "$C" "$1" fail "no index entries checked: $(head -c 120 <<<"$3")"
	elif [ -n "$bad" ]; then
		record "$C" "$1" fail "$bad"
	else
		record "$C" "$1" pass
	fi
}
out=$(kt DumpLogSegments --files "$seg.index" 2>&1)
rc=$?
has "DumpLogSegments .index entries" "$out" '^offset: [0-9]+ position: [0-9]+$'
matches_log "DumpLogSegments .index matches log" $rc "$out" '^offset: [0-9]+ position: [0-9]+$'
out=$(kt DumpLogSegments --files "$seg.timeindex" 2>&1)
rc=$?
has "DumpLogSegments .timeindex entries" "$out" '^timestamp: [0-9]+ offset: [0-9]+$'
matches_log "DumpLogSegments .timeindex matches log" $rc "$out" '^timestamp: [0-9]+ offset: [0-9]+$'
out=$(kt DumpLogSegments --index-sanity-check --files "$seg.index,$seg.timeindex" 2>&1)
expect_eq "$C" "DumpLogSegments --index-sanity-check" "2" "$(grep -c 'passed sanity check' <<<"$out")"

# JBOD: a node with two log.dirs. LogDirsCommand (kafka-log-dirs.sh)
# describes where moves-0 is; ReassignPartitionsCommand with "log_dirs" in
# its JSON moves it to the other directory (AlterReplicaLogDirs) and
# --verify waits for the move; the records are all there after it and
# after a restart.
jb="$work/jbod"
if start_samsa "$jb/data" PLAINTEXT "log.dirs=$jb/a,$jb/b"; then
	J=$SAMSA_ADDR
	kt TopicCommand --bootstrap-server "$J" --create --topic moves --partitions 1 --replication-factor 1 >/dev/null 2>&1
	seq 1 200 | kt ConsoleProducer --bootstrap-server "$J" --topic moves >/dev/null 2>&1
	out=$(kt LogDirsCommand --bootstrap-server "$J" --describe --broker-list 1 --topic-list moves 2>&1)
	src=$(grep -Eo '"partition":"moves-0","size":[0-9]+,"offsetLag":0,"isFuture":false\}\],"error":null,"logDir":"[^"]+"' <<<"$out" | sed 's/.*"logDir":"\([^"]*\)"/\1/')
	case $src in
	"$jb/a") dst="$jb/b" ;;
	"$jb/b") dst="$jb/a" ;;
	*) dst= ;;
	esac
	if [ -n "$dst" ]; then
		record "$C" "LogDirsCommand --describe (two log.dirs)" pass
		printf '{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[1],"log_dirs":["%s"]}]}\n' "$dst" >"$work/move.json"
		out=$(kt reassign.ReassignPartitionsCommand --bootstrap-server "$J" --reassignment-json-file "$work/move.json" --execute 2>&1)
		has "ReassignPartitionsCommand --execute with log_dirs" "$out" "^Successfully started moving log directory to $dst for replica moves-0 with broker 1"
		for _ in $(seq 1 50); do
			out=$(kt reassign.ReassignPartitionsCommand --bootstrap-server "$J" --reassignment-json-file "$work/move.json" --verify 2>&1)
			grep -q 'Reassignment of replica moves-0-1 completed successfully' <<<"$out" && break
			sleep 0.2
		done
		has "ReassignPartitionsCommand --verify (log dir move done)" "$out" '^Reassignment of replica moves-0-1 completed successfully'
		out=$(kt LogDirsCommand --bootstrap-server "$J" --describe --broker-list 1 --topic-list moves 2>&1)
		has "LogDirsCommand --describe after the move" "$out" "\"partition\":\"moves-0\",\"size\":[0-9]+,\"offsetLag\":0,\"isFuture\":false\}\],\"error\":null,\"logDir\":\"$dst\""
		out=$(kt consumer.ConsoleConsumer --bootstrap-server "$J" --topic moves --from-beginning --max-messages 200 --timeout-ms 20000 2>/dev/null)
		expect_eq "$C" "ConsoleConsumer after the log dir move (200 records)" "$(seq 1 200)" "$out"
		stop_samsa
		if start_samsa "$jb/data" PLAINTEXT "log.dirs=$jb/a,$jb/b"; then
			out=$(kt consumer.ConsoleConsumer --bootstrap-server "$SAMSA_ADDR" --topic moves --from-beginning --max-messages 200 --timeout-ms 20000 2>/dev/null)
			expect_eq "$C" "ConsoleConsumer after the log dir move and a restart" "$(seq 1 200)" "$out"
		else
			record "$C" "ConsoleConsumer after the log dir move and a restart" fail "server did not restart"
		fi
	else
		record "$C" "LogDirsCommand --describe (two log.dirs)" fail "moves-0 in neither log dir: $(head -c 150 <<<"$out")"
	fi
	stop_samsa
else
	record "$C" "LogDirsCommand: start samsa with two log.dirs" fail "server did not start"
fi

# SASL with the Java client: SCRAM users created with ConfigCommand
# (AlterUserScramCredentials), then ConsoleProducer and ConsoleConsumer
# over SASL_PLAINTEXT. Sessions last 2 s (connections.max.reauth.ms), so the
# slow producer re-authenticates on its connection (KIP-368) as it goes.
start_samsa "$work/sasl" PLAINTEXT \
	'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0' \
	'sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512' \
	'listener.name.sasl_plaintext.connections.max.reauth.ms=2000' \
	'delegation.token.secret.key=tools-token-secret' ||
	{ record "$C" "SASL: start samsa" fail "server did not start"; exit 1; }
B=$SAMSA_ADDR
S=$(listener_addr "$work/sasl" SASL_PLAINTEXT)
# One mechanism per command: Kafka's controller refuses a request that
# alters one user twice (DUPLICATE_RESOURCE), both mechanisms included.
out=$(kt ConfigCommand --bootstrap-server "$B" --alter --entity-type users --entity-name tools \
	--add-config 'SCRAM-SHA-256=[iterations=8192,password=tools-secret]' 2>&1)
out+=$'\n'$(kt ConfigCommand --bootstrap-server "$B" --alter --entity-type users --entity-name tools \
	--add-config 'SCRAM-SHA-512=[password=tools-512]' 2>&1)
expect_eq "$C" "ConfigCommand --alter users SCRAM (AlterUserScramCredentials)" "2" "$(grep -c "^Completed updating config for user tools" <<<"$out")"
out=$(kt ConfigCommand --bootstrap-server "$B" --describe --entity-type users --entity-name tools 2>&1)
has "ConfigCommand --describe users SCRAM (DescribeUserScramCredentials)" "$out" 'SCRAM credential configs for user-principal .tools. are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096'
cat >"$work/scram.properties" <<PROPS
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="tools" password="tools-secret";
PROPS
for i in 1 2 3 4 5 6; do echo "slow-$i"; sleep 1; done |
	kt ConsoleProducer --bootstrap-server "$S" --topic sasl --command-config "$work/scram.properties" \
		--producer-property linger.ms=0 >/dev/null 2>"$work/sasl-producer.err"
out=$(kt consumer.ConsoleConsumer --bootstrap-server "$S" --topic sasl --partition 0 --offset earliest \
	--max-messages 6 --timeout-ms 20000 --command-config "$work/scram.properties" 2>/dev/null | tr '\n' ' ')
expect_eq "$C" "SASL_PLAINTEXT SCRAM-SHA-256 ConsoleProducer (re-authenticating) + ConsoleConsumer" "slow-1 slow-2 slow-3 slow-4 slow-5 slow-6 " "$out"
expired=$(grep -c 'SASL session expired' "$work/sasl.log")
expect_eq "$C" "SASL re-authentication (KIP-368): no connection closed for an expired session" "0" "$expired"
# A wrong password: the consumer reads nothing and the broker logs the
# failed authentication.
sed -i 's/tools-secret/wrong/' "$work/scram.properties"
failed_before=$(grep -c 'msg="failed authentication"' "$work/sasl.log")
got=$(kt consumer.ConsoleConsumer --bootstrap-server "$S" --topic sasl --partition 0 --offset earliest \
	--max-messages 1 --timeout-ms 10000 --command-config "$work/scram.properties" 2>/dev/null)
failed=$(($(grep -c 'msg="failed authentication"' "$work/sasl.log") - failed_before))
if [ -z "$got" ] && [ "$failed" -ge 1 ]; then
	record "$C" "SASL wrong password refused" pass
else
	record "$C" "SASL wrong password refused" fail "consumed '$got', $failed failed authentications logged"
fi
# DelegationTokenCommand (kafka-delegation-tokens.sh): the SCRAM user
# creates a token, a consumer authenticates with it (SCRAM with
# tokenauth=true) and reads as that user, describe lists it, expire
# removes it. (Describe names the owner: without one the tool sends an
# empty owner list, for which Kafka, and so Samsa, lists nothing.)
sed -i 's/wrong/tools-secret/' "$work/scram.properties"
out=$(kt DelegationTokenCommand --bootstrap-server "$S" --command-config "$work/scram.properties" --create \
	--max-life-time-period -1 --renewer-principal User:renewer 2>&1)
read -r token_id token_hmac < <(awk '$3 == "User:tools" { print $1, $2 }' <<<"$out")
if [ -n "${token_hmac:-}" ]; then
	record "$C" "DelegationTokenCommand --create" pass
	cat >"$work/token.properties" <<PROPS
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$token_id" password="$token_hmac" tokenauth="true";
PROPS
	out=$(kt consumer.ConsoleConsumer --bootstrap-server "$S" --topic sasl --partition 0 --offset earliest \
		--max-messages 6 --timeout-ms 20000 --command-config "$work/token.properties" 2>/dev/null | tr '\n' ' ')
	expect_eq "$C" "ConsoleConsumer authenticated by a delegation token" "slow-1 slow-2 slow-3 slow-4 slow-5 slow-6 " "$out"
	out=$(kt DelegationTokenCommand --bootstrap-server "$S" --command-config "$work/scram.properties" --describe \
		--owner-principal User:tools 2>&1)
	hmac_re=$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$token_hmac")
	has "DelegationTokenCommand --describe" "$out" "^$token_id +$hmac_re +User:tools +User:tools +\\[User:renewer\\]"
	out=$(kt DelegationTokenCommand --bootstrap-server "$S" --command-config "$work/scram.properties" --expire \
		--expiry-time-period -1 --hmac "$token_hmac" 2>&1)
	out+=$'\n'$(kt DelegationTokenCommand --bootstrap-server "$S" --command-config "$work/scram.properties" --describe \
		--owner-principal User:tools 2>&1)
	if grep -q "Completed expire operation" <<<"$out" && ! grep -q "^$token_id" <<<"$out"; then
		record "$C" "DelegationTokenCommand --expire" pass
	else
		record "$C" "DelegationTokenCommand --expire" fail "$(head -c 200 <<<"$out")"
	fi
else
	record "$C" "DelegationTokenCommand --create" fail "no token for User:tools in: $(head -c 200 <<<"$out")"
fi
stop_samsa

# AclCommand (kafka-acls.sh) against a node running StandardAuthorizer, on
# which the tools' User:ANONYMOUS is a super user: --add (a literal and a
# prefixed pattern), --list by resource and by principal, --remove. The
# tool prints a resource's ACLs in no set order, so they are sorted.
start_samsa "$work/acl" PLAINTEXT \
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer" "super.users=User:ANONYMOUS" ||
	{ record "$C" "AclCommand: start samsa with an authorizer" fail "server did not start"; exit 0; }
A=$SAMSA_ADDR
out=$(kt AclCommand --bootstrap-server "$A" --add --allow-principal User:alice --operation Read --operation Describe --topic orders 2>&1)
has "AclCommand --add (literal)" "$out" '^Adding ACLs for resource `ResourcePattern\(resourceType=TOPIC, name=orders, patternType=LITERAL\)`'
kt AclCommand --bootstrap-server "$A" --add --allow-principal User:bob --operation Write --topic app- --resource-pattern-type prefixed >/dev/null 2>&1
out=$(kt AclCommand --bootstrap-server "$A" --list --topic orders 2>&1)
expect_eq "$C" "AclCommand --list --topic" \
	$'\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)' \
	"$(grep '(principal=' <<<"$out" | sort)"
out=$(kt AclCommand --bootstrap-server "$A" --list --principal User:bob 2>&1)
has "AclCommand --list --principal (prefixed)" "$out" '^Current ACLs for resource `ResourcePattern\(resourceType=TOPIC, name=app-, patternType=PREFIXED\)`'
kt AclCommand --bootstrap-server "$A" --remove --force --allow-principal User:alice --operation Read --topic orders >/dev/null 2>&1
out=$(kt AclCommand --bootstrap-server "$A" --list --topic orders 2>&1)
expect_eq "$C" "AclCommand --remove" $'\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)' "$(grep '(principal=' <<<"$out")"
stop_samsa
