#!/usr/bin/env bash
# Apache Kafka's own tools, and confluent-kafka from Python, against a
# 3-node Samsa cluster (`samsa dev cluster`, kernel-chosen ports):
# TopicCommand with replication factor 3, MetadataQuorumCommand,
# LogDirsCommand, ConsoleProducer/ConsoleConsumer with acks=all, a kill -9
# of a partition leader and its restart, LeaderElectionCommand (preferred)
# and ReassignPartitionsCommand; eligible leader replicas in
# TopicCommand --describe; the Java transactional producer
# (transaction version 2) through a kill -9 of its transaction coordinator
# (TxnFailover.java); share groups: ConsoleShareConsumer and
# ShareGroupCommand --reset-offsets over partitions led by all three
# brokers. Needs SAMSA_BIN, INTEROP_RESULTS and
# KAFKA_TOOLS_DIR (see ../run); the Python row runs when the venv of the
# python suite exists ($INTEROP_VENV, default ~/.cache/samsa-interop/venv).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
: "${KAFKA_TOOLS_DIR:?set KAFKA_TOOLS_DIR to the directory of Kafka tool jars}"

ver=$(ls "$KAFKA_TOOLS_DIR" | sed -n 's/^kafka-tools-\([0-9.]*\)\.jar$/\1/p')
C="kafka-tools $ver (3 nodes)"
work=$(mktemp -d)
dir="$work/cluster"
DEV_PID=""
failed_before=$(grep -c $'\tfail\t' "$INTEROP_RESULTS")

# node_pid ID: the pid of node ID's server process, if it runs.
node_pid() { pgrep -f -- "$dir/node-$1.properties" | head -1; }

# alive PID...: whether any of the processes still runs.
alive() {
	local p
	for p; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}
# stop_cluster: SIGTERM to the dev cluster and any node restarted here,
# SIGKILL to whatever still runs after 20 s.
stop_cluster() {
	local pids
	pids="$DEV_PID $(pgrep -f -- "$dir/node-" | tr '\n' ' ')"
	[ -n "${pids// /}" ] || return 0
	kill -TERM $pids 2>/dev/null
	for i in $(seq 1 200); do
		alive $pids || break
		sleep 0.1
	done
	kill -KILL $pids $(pgrep -f -- "$dir/node-") 2>/dev/null
	[ -z "$DEV_PID" ] || wait "$DEV_PID" 2>/dev/null
	DEV_PID=""
}
finish() {
	stop_cluster
	# Keep the node logs in the suite log when a row of this suite failed.
	if [ "$(grep -c $'\tfail\t' "$INTEROP_RESULTS")" != "$failed_before" ]; then
		for f in "$dir"/node-*.log; do
			[ -f "$f" ] && { echo "=== $f (last 40 lines)"; tail -40 "$f"; } >&2
		done
	fi
	rm -rf "$work"
}
trap finish EXIT
trap 'exit 143' TERM INT

# kt CLASS ARGS...: one tool run, bounded, SLF4J's start-up chatter dropped.
kt() {
	local cls=$1
	shift
	timeout 60 java -Xshare:auto -cp "$KAFKA_TOOLS_DIR/*" "org.apache.kafka.tools.$cls" "$@" 2> >(grep -v '^SLF4J' >&2)
}
# has FEATURE OUTPUT PATTERN: pass when OUTPUT has a line matching the ERE.
has() {
	if grep -Eq -- "$3" <<<"$2"; then
		record "$C" "$1" pass
	else
		record "$C" "$1" fail "no line matching /$3/ in: $(head -c 150 <<<"$2")"
	fi
}
describe() { kt TopicCommand --bootstrap-server "$B" --describe --topic "$1" 2>&1; }
# field OUTPUT PARTITION NAME: one field (Leader, Replicas, Isr) of a
# partition line of TopicCommand --describe.
field() { sed -nE "s/.*\tPartition: $2\t(.*\t)?$3: ([^\t]*).*/\2/p" <<<"$1"; }
# wait_for SECONDS CMD...: runs CMD every half second until it succeeds.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.5
	done
}
# produce TOPIC FIRST LAST: records vFIRST..vLAST keyed kN, acks=all; the
# producer's exit code.
produce() {
	seq "$2" "$3" | sed 's/.*/k&:v&/' | kt ConsoleProducer --bootstrap-server "$B" --topic "$1" \
		--property parse.key=true --property key.separator=: --producer-property acks=all \
		>/dev/null 2>>"$work/producer.err"
}
# distinct_values TOPIC N: how many distinct values a group-less
# ConsoleConsumer reads from the beginning (stops after N).
distinct_values() {
	kt consumer.ConsoleConsumer --bootstrap-server "$B" --topic "$1" --from-beginning \
		--max-messages "$2" --timeout-ms 20000 2>/dev/null | grep -E '^v[0-9]+$' | sort -u | wc -l
}
end_offsets() { kt GetOffsetShell --bootstrap-server "$B" --topic "$1" 2>&1 | awk -F: '{ n += $3 } END { print n+0 }'; }
# full_isr TOPIC PARTITIONS: every partition's ISR is its whole replica set.
full_isr() {
	local d p
	d=$(describe "$1")
	for p in $(seq 0 $(($2 - 1))); do
		[ -n "$(field "$d" "$p" Isr)" ] &&
			[ "$(tr ',' '\n' <<<"$(field "$d" "$p" Isr)" | sort | tr '\n' ' ')" == "$(tr ',' '\n' <<<"$(field "$d" "$p" Replicas)" | sort | tr '\n' ' ')" ] || return 1
	done
}
# restart_node ID: the node's server again, log appended to its log file.
restart_node() {
	"$SAMSA_BIN" server --config "$dir/node-$1.properties" --cluster-id "$(cat "$dir/cluster.id")" >>"$dir/node-$1.log" 2>&1 &
}

# 1. Three combined broker+controller nodes; short sessions keep failovers short.
mkdir -p "$dir"
"$SAMSA_BIN" dev cluster --brokers 3 --dir "$dir" --port 0 \
	--override broker.session.timeout.ms=3000 --override broker.heartbeat.interval.ms=300 \
	>"$work/dev.out" 2>"$work/dev.err" &
DEV_PID=$!
start=$SECONDS
# up: the cluster serves, or `samsa dev cluster` gave up (after its own 60 s).
up() { grep -q '^bootstrap servers: ' "$work/dev.out" || ! alive "$DEV_PID"; }
wait_for 70 up
B=$(sed -n 's/^bootstrap servers: //p' "$work/dev.out")
if [ -z "$B" ]; then
	record "$C" "samsa dev cluster --brokers 3 starts" fail "not serving after $((SECONDS - start)) s: $(tail -c 150 "$work/dev.err")"
	exit 1
fi
record "$C" "samsa dev cluster --brokers 3 starts" pass "$((SECONDS - start)) s"

# 2. A replicated topic: three replicas in sync, leaders spread over the brokers.
out=$(kt TopicCommand --bootstrap-server "$B" --create --topic rep --partitions 3 --replication-factor 3 \
	--config min.insync.replicas=2 2>&1)
has "TopicCommand --create --replication-factor 3" "$out" '^Created topic rep\.$'
wait_for 10 full_isr rep 3
d=$(describe rep)
got=""
for p in 0 1 2; do
	got+="$p: $(tr ',' '\n' <<<"$(field "$d" $p Replicas)" | sort -n | paste -sd,) isr $(tr ',' '\n' <<<"$(field "$d" $p Isr)" | sort -n | paste -sd,); "
done
expect_eq "$C" "TopicCommand --describe: 3 replicas, ISR of 3" "0: 1,2,3 isr 1,2,3; 1: 1,2,3 isr 1,2,3; 2: 1,2,3 isr 1,2,3; " "$got"
expect_eq "$C" "TopicCommand --describe: leaders on 3 brokers, min.insync.replicas=2" "1,2,3 min.insync.replicas=2" \
	"$(for p in 0 1 2; do field "$d" $p Leader; done | sort -n | paste -sd,) $(sed -n 's/.*Configs: //p' <<<"$d")"

# 3. The KRaft quorum as kafka-metadata-quorum shows it.
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --status 2>&1)
qleader=$(sed -n 's/^LeaderId: *//p' <<<"$out")
expect_eq "$C" "MetadataQuorumCommand describe --status (leader, 3 voters, high watermark)" \
	"leader in 1,2,3; voters 1 2 3; high watermark > 0" \
	"leader in $([[ $qleader =~ ^[123]$ ]] && echo 1,2,3 || echo "'$qleader'"); voters $(sed -n 's/^CurrentVoters: *//p' <<<"$out" | grep -o '"id": [0-9]*' | grep -o '[0-9]*' | sort -n | paste -sd' '); high watermark $(sed -n 's/^HighWatermark: *//p' <<<"$out" | awk '{ print ($1 > 0) ? "> 0" : "= " $1 }')"
# DescribeQuorum v2 carries each voter's listeners (Nodes), which Kafka's
# tool prints as "endpoints" next to the voter id.
want=$(sed -n 's/^listeners=.*\(CONTROLLER:\/\/[^,]*\).*/\1/p' "$dir"/node-*.properties | sort | paste -sd' ')
got=$(sed -n 's/^CurrentVoters: *//p' <<<"$out" | grep -o 'CONTROLLER://[^"]*' | sort | paste -sd' ')
if [ -n "$want" ] && [ "$got" == "$want" ]; then
	record "$C" "MetadataQuorumCommand describe --status: voter endpoints" pass
else
	record "$C" "MetadataQuorumCommand describe --status: voter endpoints" fail \
		"DescribeQuorum v2 Nodes (voter listeners) not filled: want '$want' got '$got'"
fi
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --replication 2>&1)
expect_eq "$C" "MetadataQuorumCommand describe --replication (3 voter rows, one leader)" \
	"1 Leader;2 Follower;3 Follower;" \
	"$(awk -v l="$qleader" '$1 ~ /^[0-9]+$/ { print ($1 == l ? 1 : ++f + 1), $NF }' <<<"$out" | sort | tr '\n' ';')"

# 4 + 5. 500 records with acks=all, read back; every broker's log dir holds
# all three partitions of the same size.
produce rep 1 500
expect_eq "$C" "ConsoleProducer acks=all, 500 records (end offsets)" 500 "$(end_offsets rep)"
expect_eq "$C" "ConsoleConsumer --from-beginning reads 500" 500 "$(distinct_values rep 500)"
logdirs() {
	kt LogDirsCommand --bootstrap-server "$B" --describe --topic-list "$1" 2>&1 | tail -1 | python3 -c '
import json, sys
d = json.load(sys.stdin)
for b in sorted(d["brokers"], key=lambda b: b["broker"]):
    ps = sorted((p["partition"], p["size"]) for l in b["logDirs"] for p in l["partitions"])
    print(b["broker"], " ".join(f"{n}={s}" for n, s in ps))' 2>&1
}
# same_sizes: every broker reports the same partitions and sizes (sets out).
same_sizes() {
	out=$(logdirs rep)
	[ "$(wc -l <<<"$out")" = 3 ] && [ "$(cut -d' ' -f2- <<<"$out" | sort -u | wc -l)" = 1 ]
}
wait_for 10 same_sizes
sizes=$(head -1 <<<"$out" | cut -d' ' -f2-)
expect_eq "$C" "LogDirsCommand --describe: every broker holds rep-0..2 with equal sizes" \
	"$(printf '1 %s\n2 %s\n3 %s' "$sizes" "$sizes" "$sizes")" "$out"
if [[ $sizes =~ ^rep-0=[0-9]+\ rep-1=[0-9]+\ rep-2=[0-9]+$ ]] && [ "$(grep -o '=[0-9]*' <<<"$sizes" | tr -d = | awk '{ n += $1 } END { print n+0 }')" -gt 0 ]; then
	record "$C" "LogDirsCommand --describe: sizes count the 500 records" pass
else
	record "$C" "LogDirsCommand --describe: sizes count the 500 records" fail "sizes: $sizes"
fi

# 6. kill -9 the leader of rep-0: a new leader and a shrunk ISR, acks=all
# still served (2 of 3 in sync), the node rejoins after a restart.
L=$(field "$(describe rep)" 0 Leader)
pid=$(node_pid "$L")
[ -n "$pid" ] && kill -KILL "$pid"
start=$SECONDS
moved() {
	local d
	d=$(describe rep)
	[ -n "$(field "$d" 0 Leader)" ] && [ "$(field "$d" 0 Leader)" != "$L" ] && [ "$(field "$d" 0 Leader)" != -1 ] &&
		! grep -qw "$L" <<<"$(field "$d" 0 Isr)"
}
if wait_for 15 moved; then
	record "$C" "kill -9 leader of rep-0: new leader, ISR without it" pass "node $L killed, moved in $((SECONDS - start)) s"
else
	record "$C" "kill -9 leader of rep-0: new leader, ISR without it" fail "node $L killed; after 15 s: $(grep 'Partition: 0' <<<"$(describe rep)" | cut -f3-6)"
fi
produce rep 501 600
rc=$?
expect_eq "$C" "ConsoleProducer acks=all, 100 records with one broker down" "exit 0, end offsets 600" \
	"exit $rc, end offsets $(end_offsets rep)"
restart_node "$L"
start=$SECONDS
if wait_for 30 full_isr rep 3; then
	record "$C" "restarted broker rejoins every ISR" pass "$((SECONDS - start)) s"
else
	record "$C" "restarted broker rejoins every ISR" fail "after 30 s: $(describe rep | grep -o 'Partition: [0-9].*Isr: [0-9,]*' | tr '\t\n' ' ')"
fi
expect_eq "$C" "ConsoleConsumer reads 600 after the failover" 600 "$(distinct_values rep 600)"

# 7. The restarted node was the preferred (first) replica of rep-0; a
# preferred election gives it back its leadership.
d=$(describe rep)
before=$(field "$d" 0 Leader)
out=$(kt LeaderElectionCommand --bootstrap-server "$B" --election-type PREFERRED --all-topic-partitions 2>&1)
rc=$?
d=$(describe rep)
got=""
for p in 0 1 2; do
	got+="$p: $(field "$d" $p Leader)/$(field "$d" $p Replicas | cut -d, -f1) "
done
want=""
for p in 0 1 2; do
	want+="$p: $(field "$d" $p Replicas | cut -d, -f1)/$(field "$d" $p Replicas | cut -d, -f1) "
done
expect_eq "$C" "LeaderElectionCommand PREFERRED --all-topic-partitions: preferred replicas lead" \
	"exit 0; $want" "exit $rc; $got"
if [ "$before" != "$(field "$d" 0 Replicas | cut -d, -f1)" ]; then
	has "LeaderElectionCommand PREFERRED: reports rep-0 elected" "$out" '^Successfully completed leader election \(PREFERRED\) for partitions .*\brep-0\b'
else
	record "$C" "LeaderElectionCommand PREFERRED: reports rep-0 elected" skip "rep-0 was already led by its preferred replica $before"
fi

# 8. Move a partition from brokers 1,2 to 2,3 with its data.
out=$(kt TopicCommand --bootstrap-server "$B" --create --topic mv --replica-assignment 1:2 2>&1)
produce mv 1 20
echo '{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[2,3]}]}' >"$work/mv.json"
out=$(kt reassign.ReassignPartitionsCommand --bootstrap-server "$B" --reassignment-json-file "$work/mv.json" --execute 2>&1)
has "ReassignPartitionsCommand --execute" "$out" '^Successfully started partition reassignment for mv-0$'
verify() {
	kt reassign.ReassignPartitionsCommand --bootstrap-server "$B" --reassignment-json-file "$work/mv.json" --verify 2>&1 |
		grep -q '^Reassignment of partition mv-0 is completed\.$'
}
start=$SECONDS
if wait_for 30 verify; then
	record "$C" "ReassignPartitionsCommand --verify: completed" pass "$((SECONDS - start)) s"
else
	record "$C" "ReassignPartitionsCommand --verify: completed" fail "not completed after 30 s"
fi
d=$(describe mv)
expect_eq "$C" "reassigned partition: Replicas 2,3, ISR 2,3, 20 records readable" "2,3 isr 2,3 read 20" \
	"$(field "$d" 0 Replicas) isr $(field "$d" 0 Isr | tr ',' '\n' | sort -n | paste -sd,) read $(distinct_values mv 20)"

# 8b. Eligible leader replicas (KIP-966): with min.insync.replicas=3, a
# follower that stops answering leaves the ISR below min ISR and is kept
# as an eligible leader replica, which kafka-topics --describe shows; it
# leaves the ELR when it is back in the ISR.
kt TopicCommand --bootstrap-server "$B" --create --topic elr --partitions 1 --replication-factor 3 \
	--config min.insync.replicas=3 >/dev/null 2>&1
wait_for 10 full_isr elr 1
d=$(describe elr)
F=$(field "$d" 0 Replicas | tr ',' '\n' | grep -vx "$(field "$d" 0 Leader)" | head -1)
fpid=$(node_pid "$F")
in_elr() { [ "$(field "$(describe elr)" 0 Elr)" == "$F" ]; }
start=$SECONDS
# The leader drops the follower after replica.lag.time.max.ms (30 s) without
# a fetch, and the controller then moves it: give it three times that.
if [ -n "$fpid" ] && kill -STOP "$fpid" && wait_for 90 in_elr; then
	record "$C" "TopicCommand --describe: Elr shows a stopped follower below min.insync.replicas (KIP-966)" pass "$((SECONDS - start)) s"
else
	record "$C" "TopicCommand --describe: Elr shows a stopped follower below min.insync.replicas (KIP-966)" fail \
		"follower '$F' stopped; after 90 s: $(describe elr | grep -o 'Partition: 0.*' | tr '\t' ' ')"
fi
[ -n "$fpid" ] && kill -CONT "$fpid"
back() { full_isr elr 1 && [ -z "$(field "$(describe elr)" 0 Elr)" ]; }
if wait_for 60 back; then
	record "$C" "TopicCommand --describe: Elr empty again once the follower is back in the ISR" pass
else
	record "$C" "TopicCommand --describe: Elr empty again once the follower is back in the ISR" fail \
		"after 60 s: $(describe elr | grep -o 'Partition: 0.*' | tr '\t' ' ')"
fi

# 9. The Java transactional producer (transaction version 2, KIP-890)
# through a kill -9 of its transaction coordinator: read_committed sees
# every committed record once and nothing of the aborted ones.
kt TopicCommand --bootstrap-server "$B" --create --topic jtx --partitions 1 --replication-factor 3 \
	--config min.insync.replicas=2 >/dev/null 2>&1
wait_for 10 full_isr jtx 1
procs=""
for id in 1 2 3; do
	p=$(node_pid "$id")
	[ -n "$p" ] && procs="$procs $id=$p"
done
out="javac failed"
if javac -cp "$KAFKA_TOOLS_DIR/*" -d "$work/jtx" "$here/TxnFailover.java" >&2; then
	out=$(timeout 300 java -cp "$work/jtx:$KAFKA_TOOLS_DIR/*" TxnFailover "$B" jtx 30 $procs 2> >(grep -v '^SLF4J' >&2))
fi
echo "$out" | tail -5 >&2
expect_eq "$C" "transactions (transaction.version 2) through kill -9 of the coordinator: no loss, no duplicates, nothing uncommitted visible" \
	"killed=true tv2=true missing=0 duplicates=0 uncommitted=0 torn=0 stray=0" "$(grep '^killed=' <<<"$out")"
# The killed node comes back for what follows.
n=$(sed -n 's/^killing transaction coordinator node \([0-9]*\) .*/\1/p' <<<"$out")
if [ -n "$n" ]; then
	restart_node "$n"
	wait_for 30 full_isr jtx 1
fi

# 9a. Share groups (KIP-932) on 3 nodes: Kafka's ConsoleShareConsumer (the
# Java KafkaShareConsumer) reads a topic whose partitions are led by all
# three brokers, and kafka-share-groups resets the group's offsets
# (--to-earliest, --to-offset) through the group coordinator, wherever the
# partitions are led: the next consumer gets exactly the records past the
# new start offsets. All three brokers run again here: the share state
# topic, replication factor 3, cannot be created with one down.
sg=cluster-share
kt TopicCommand --bootstrap-server "$B" --create --topic sq --partitions 3 --replication-factor 1 >/dev/null 2>&1
produce sq 1 30
kt ConfigCommand --bootstrap-server "$B" --alter --entity-type groups --entity-name "$sg" \
	--add-config share.auto.offset.reset=earliest >/dev/null 2>&1
# share_read N: how many distinct values a ConsoleShareConsumer of the
# group reads (stops after N).
share_read() {
	kt consumer.ConsoleShareConsumer --bootstrap-server "$B" --topic sq --group "$sg" \
		--max-messages "$1" --timeout-ms 30000 2>/dev/null | grep -E '^v[0-9]+$' | sort -u | wc -l
}
# share_starts: "partition:start-offset" of each partition, from --describe.
share_starts() {
	kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --describe --group "$sg" 2>&1 |
		awk -v g="$sg" '$1 == g && $2 == "sq" { print $3 ":" $4 }' | sort | paste -sd' '
}
ends=$(kt GetOffsetShell --bootstrap-server "$B" --topic sq 2>&1 | awk -F: '{ print $2 ":" $3 }' | sort | paste -sd' ')
expect_eq "$C" "ConsoleShareConsumer (KafkaShareConsumer) reads 30 records of 3 partitions on 3 brokers" 30 "$(share_read 30)"
# at_ends: every start offset is its partition's end (acknowledged, empty group).
at_ends() { [ "$(share_starts)" == "$ends" ] && kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --describe --group "$sg" --members 2>&1 | grep -q "has no active members"; }
wait_for 30 at_ends
expect_eq "$C" "ShareGroupCommand --describe: start offsets at the partitions' ends" "$ends" "$(share_starts)"
out=$(kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --reset-offsets --group "$sg" --topic sq --to-earliest --execute 2>&1)
expect_eq "$C" "ShareGroupCommand --reset-offsets --to-earliest --execute: start offsets 0" "0:0 1:0 2:0" "$(share_starts)" \
	"$([ -n "$(share_starts)" ] || head -c 100 <<<"$out")"
expect_eq "$C" "ConsoleShareConsumer after --to-earliest reads all 30 again" 30 "$(share_read 30)"
wait_for 30 at_ends
p0=$(sed -n 's/.*\b0:\([0-9]*\).*/\1/p' <<<"$ends")
to=$((p0 > 2 ? p0 - 2 : 0))
kt consumer.group.ShareGroupCommand --bootstrap-server "$B" --reset-offsets --group "$sg" --topic sq:0 --to-offset "$to" --execute >/dev/null 2>&1
expect_eq "$C" "ShareGroupCommand --reset-offsets --topic sq:0 --to-offset --execute" \
	"$(sed "s/\b0:$p0/0:$to/" <<<"$ends")" "$(share_starts)"
expect_eq "$C" "ConsoleShareConsumer after --to-offset reads the $((p0 - to)) records past it" "$((p0 - to))" "$(share_read $((p0 - to)))"
wait_for 30 at_ends
expect_eq "$C" "ShareGroupCommand --describe: start offsets at the ends again" "$ends" "$(share_starts)"

# 10. confluent-kafka (librdkafka), idempotent acks=all through a leader kill.
venv=${INTEROP_VENV:-$HOME/.cache/samsa-interop/venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import confluent_kafka' 2>/dev/null; then
	py="python confluent-kafka (3 nodes)"
	kt TopicCommand --bootstrap-server "$B" --create --topic py --partitions 1 --replication-factor 3 \
		--config min.insync.replicas=2 >/dev/null 2>&1
	wait_for 10 full_isr py 1
	pl=$(field "$(describe py)" 0 Leader)
	pid=$(node_pid "$pl")
	out="no process for the leader '$pl' of py-0"
	[ -n "$pid" ] && out=$(timeout 120 "$venv/bin/python" "$here/failover.py" "$B" py 3000 "$pid" 2>&1)
	expect_eq "$py" "idempotent acks=all through kill -9 of the leader: no loss, no duplicates" \
		"killed=True acked=3000 errors=0 read=3000 unique=3000 missing=0 duplicates=0" "$(tail -1 <<<"$out")"
else
	record "python confluent-kafka (3 nodes)" "idempotent acks=all through kill -9 of the leader: no loss, no duplicates" \
		skip "no venv with confluent_kafka at $venv (run the python suite first)"
fi

# 9b. The static quorum upgraded to kraft.version 1 with kafka-features, as
# Kafka 4.4 allows; then a controller that joins through
# controller.quorum.bootstrap.servers is added and removed.
out=$(kt FeatureCommand --bootstrap-server "$B" upgrade --feature kraft.version=1 2>&1)
has "FeatureCommand upgrade --feature kraft.version=1 (static quorum of 3)" "$out" '^kraft.version was upgraded to 1\.$'
out=$(kt FeatureCommand --bootstrap-server "$B" describe 2>&1)
has "FeatureCommand describe: kraft.version supported 0-1, finalized 1" "$out" \
	'^Feature: kraft\.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 1[[:space:]]+FinalizedVersionLevel: 1'
sb=$(sed -n 's/^listeners=.*CONTROLLER:\/\/\([^,]*\).*/\1/p' "$dir"/node-[123].properties | paste -sd,)
p4=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '%s\n' "node.id=4" "process.roles=controller" "listeners=CONTROLLER://127.0.0.1:$p4" \
	"controller.listener.names=CONTROLLER" "listener.security.protocol.map=CONTROLLER:PLAINTEXT" \
	"controller.quorum.bootstrap.servers=$sb" "log.dirs=$dir/node-4" >"$dir/node-4.properties"
"$SAMSA_BIN" server --config "$dir/node-4.properties" --cluster-id "$(cat "$dir/cluster.id")" --no-initial-controllers >"$dir/node-4.log" 2>&1 &
joined4() { grep -q 'controller ready to join the quorum' "$dir/node-4.log"; }
wait_for 30 joined4
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" --command-config "$dir/node-4.properties" add-controller 2>&1)
has "MetadataQuorumCommand add-controller to the upgraded static quorum" "$out" "^Added controller 4 with directory id [A-Za-z0-9_-]{22} and endpoints: CONTROLLER://127.0.0.1:$p4$"
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --status 2>&1)
expect_eq "$C" "upgraded static quorum: describe --status shows voters 1 2 3 4" "1 2 3 4" \
	"$(sed -n 's/^CurrentVoters: *//p' <<<"$out" | grep -o '"id": [0-9]*' | grep -o '[0-9]*' | sort -n | paste -sd' ')"
d4=$(sed -n 's/^directory.id=//p' "$dir/node-4/meta.properties")
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" remove-controller --controller-id 4 --controller-directory-id "$d4" 2>&1)
has "MetadataQuorumCommand remove-controller from the upgraded static quorum" "$out" "^Removed KRaft controller 4 with directory id $d4"

# 10. A dynamic quorum (KIP-853): three combined nodes formatted with
# --initial-controllers, a controller-only node 4 formatted with
# --no-initial-controllers; kafka-metadata-quorum add-controller (run with
# node 4's configuration) grows the quorum to four voters and
# remove-controller shrinks it back while ConsoleProducer writes with
# acks=all; every acknowledged record is read back.
stop_cluster
dir="$work/dynamic"
mkdir -p "$dir"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cid=$("$SAMSA_BIN" cluster new-id)
echo "$cid" >"$dir/cluster.id"
declare -a cport kport dirid
for i in 1 2 3 4; do
	cport[$i]=$(free_port)
	kport[$i]=$(free_port)
	dirid[$i]=$("$SAMSA_BIN" cluster new-id)
done
initial="1@127.0.0.1:${kport[1]}:${dirid[1]},2@127.0.0.1:${kport[2]}:${dirid[2]},3@127.0.0.1:${kport[3]}:${dirid[3]}"
CB="127.0.0.1:${kport[1]},127.0.0.1:${kport[2]},127.0.0.1:${kport[3]}"
for i in 1 2 3 4; do
	{
		echo "node.id=$i"
		if [ "$i" = 4 ]; then
			echo "process.roles=controller"
			echo "listeners=CONTROLLER://127.0.0.1:${kport[$i]}"
		else
			echo "process.roles=broker,controller"
			echo "listeners=PLAINTEXT://127.0.0.1:${cport[$i]},CONTROLLER://127.0.0.1:${kport[$i]}"
		fi
		echo "controller.listener.names=CONTROLLER"
		echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
		echo "controller.quorum.bootstrap.servers=$CB"
		echo "log.dirs=$dir/node-$i"
		echo "offsets.topic.replication.factor=3"
		echo "broker.heartbeat.interval.ms=300"
	} >"$dir/node-$i.properties"
done
for i in 1 2 3; do
	"$SAMSA_BIN" server --config "$dir/node-$i.properties" --cluster-id "$cid" --initial-controllers "$initial" >"$dir/node-$i.log" 2>&1 &
done
B="127.0.0.1:${cport[1]},127.0.0.1:${cport[2]},127.0.0.1:${cport[3]}"
serving() { grep -q 'msg="serving Kafka clients"' "$dir/node-1.log" && grep -q 'msg="serving Kafka clients"' "$dir/node-2.log" && grep -q 'msg="serving Kafka clients"' "$dir/node-3.log"; }
start=$SECONDS
if wait_for 60 serving; then
	record "$C" "dynamic quorum: 3 nodes formatted with --initial-controllers serve" pass "$((SECONDS - start)) s"
else
	record "$C" "dynamic quorum: 3 nodes formatted with --initial-controllers serve" fail "not serving after 60 s"
	exit 1
fi
"$SAMSA_BIN" server --config "$dir/node-4.properties" --cluster-id "$cid" --no-initial-controllers >"$dir/node-4.log" 2>&1 &
joining() { grep -q 'controller ready to join the quorum' "$dir/node-4.log"; }
wait_for 30 joining
out=$(kt MetadataQuorumCommand --bootstrap-controller "$CB" describe --status 2>&1)
voters() { sed -n 's/^CurrentVoters: *//p' <<<"$1" | grep -o '"id": [0-9]*' | grep -o '[0-9]*' | sort -n | paste -sd' '; }
expect_eq "$C" "dynamic quorum: describe --status --bootstrap-controller before add (voters, no leader among joiners)" \
	"voters 1 2 3 leader in 1,2,3" "voters $(voters "$out") leader in $([[ $(sed -n 's/^LeaderId: *//p' <<<"$out") =~ ^[123]$ ]] && echo 1,2,3 || echo other)"
kt TopicCommand --bootstrap-server "$B" --create --topic dq --partitions 3 --replication-factor 3 \
	--config min.insync.replicas=2 >/dev/null 2>&1
wait_for 10 full_isr dq 3
# Batches of 200 records with acks=all until the stop file exists.
(
	n=0
	until [ -e "$work/dq.stop" ]; do
		produce dq $((n + 1)) $((n + 200)) || { echo "batch $((n + 1)) failed" >>"$work/dq.failed"; break; }
		n=$((n + 200))
		echo "$n" >"$work/dq.acked"
	done
) &
prod=$!
sleep 2
out=$(kt MetadataQuorumCommand --bootstrap-controller "$CB" --command-config "$dir/node-4.properties" add-controller 2>&1)
has "MetadataQuorumCommand add-controller (node 4, --no-initial-controllers) while producing" "$out" "^Added controller 4 with directory id [A-Za-z0-9_-]{22} and endpoints: CONTROLLER://127.0.0.1:${kport[4]}$"
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --status 2>&1)
expect_eq "$C" "dynamic quorum: describe --status after add-controller: 4 voters, node 4's endpoint" \
	"voters 1 2 3 4; CONTROLLER://127.0.0.1:${kport[4]}" \
	"voters $(voters "$out"); $(sed -n 's/^CurrentVoters: *//p' <<<"$out" | grep -o "CONTROLLER://127.0.0.1:${kport[4]}")"
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --replication 2>&1)
expect_eq "$C" "dynamic quorum: describe --replication after add-controller: 4 voter rows" \
	"1 2 3 4" "$(awk '$1 ~ /^[0-9]+$/ && ($NF == "Leader" || $NF == "Follower") { print $1 }' <<<"$out" | sort -n | paste -sd' ')"
sleep 2
d4=$(sed -n 's/^directory.id=//p' "$dir/node-4/meta.properties")
out=$(kt MetadataQuorumCommand --bootstrap-controller "$CB" remove-controller --controller-id 4 --controller-directory-id "$d4" 2>&1)
has "MetadataQuorumCommand remove-controller --controller-id 4 --controller-directory-id while producing" "$out" "^Removed KRaft controller 4 with directory id $d4"
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --status 2>&1)
expect_eq "$C" "dynamic quorum: describe --status after remove-controller: voters 1 2 3" "voters 1 2 3" "voters $(voters "$out")"
sleep 1
touch "$work/dq.stop"
wait "$prod"
acked=$(cat "$work/dq.acked" 2>/dev/null || echo 0)
expect_eq "$C" "dynamic quorum: ConsoleProducer acks=all batches during add/remove-controller, all read back" \
	"no failed batch; read $acked of $acked (> 0: $([ "$acked" -gt 0 ] && echo yes))" \
	"$([ -e "$work/dq.failed" ] && cat "$work/dq.failed" || echo "no failed batch"); read $(distinct_values dq "$acked") of $acked (> 0: yes)"

# 11. A broker follows the voter set (KIP-853): controller 1
# (--standalone), broker-only node 2, combined node 3
# (--no-initial-controllers, serving clients before it is a voter).
# kafka-metadata-quorum add-controller 3, remove-controller 1 (the
# leader), and node 1 stops: the broker, never restarted, creates a topic
# and takes writes through controller 3 alone.
stop_cluster
dir="$work/follow"
mkdir -p "$dir"
cid=$("$SAMSA_BIN" cluster new-id)
fb=$(free_port)
fb3=$(free_port)
for i in 1 3; do kport[$i]=$(free_port); done
for i in 1 2 3; do
	{
		echo "node.id=$i"
		case $i in
		2)
			echo "process.roles=broker"
			echo "listeners=PLAINTEXT://127.0.0.1:$fb"
			;;
		3)
			echo "process.roles=broker,controller"
			echo "listeners=PLAINTEXT://127.0.0.1:$fb3,CONTROLLER://127.0.0.1:${kport[$i]}"
			;;
		*)
			echo "process.roles=controller"
			echo "listeners=CONTROLLER://127.0.0.1:${kport[$i]}"
			;;
		esac
		echo "controller.listener.names=CONTROLLER"
		echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
		echo "controller.quorum.bootstrap.servers=127.0.0.1:${kport[1]}"
		echo "log.dirs=$dir/node-$i"
		echo "offsets.topic.replication.factor=1"
		echo "broker.heartbeat.interval.ms=300"
	} >"$dir/node-$i.properties"
done
"$SAMSA_BIN" server --config "$dir/node-1.properties" --cluster-id "$cid" --standalone >"$dir/node-1.log" 2>&1 &
"$SAMSA_BIN" server --config "$dir/node-2.properties" --cluster-id "$cid" >"$dir/node-2.log" 2>&1 &
"$SAMSA_BIN" server --config "$dir/node-3.properties" --cluster-id "$cid" --no-initial-controllers >"$dir/node-3.log" 2>&1 &
B="127.0.0.1:$fb"
ready() { grep -q 'msg="serving Kafka clients"' "$dir/node-2.log" && grep -q 'msg="serving Kafka clients"' "$dir/node-3.log"; }
if wait_for 60 ready; then
	record "$C" "broker follows the voters: controller, broker and combined node 3 (--no-initial-controllers) serve" pass
else
	record "$C" "broker follows the voters: controller, broker and combined node 3 (--no-initial-controllers) serve" fail "not ready after 60 s"
	exit 1
fi
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" --command-config "$dir/node-3.properties" add-controller 2>&1)
has "broker follows the voters: add-controller 3 (combined) through the broker" "$out" "^Added controller 3 "
d1=$(sed -n 's/^directory.id=//p' "$dir/node-1/meta.properties")
out=$(kt MetadataQuorumCommand --bootstrap-server "$B" remove-controller --controller-id 1 --controller-directory-id "$d1" 2>&1)
has "broker follows the voters: remove-controller 1 (the leader) through the broker" "$out" "^Removed KRaft controller 1 "
kill -TERM "$(node_pid 1)" 2>/dev/null
leads3() {
	out=$(kt MetadataQuorumCommand --bootstrap-server "$B" describe --status 2>&1)
	[ "$(sed -n 's/^LeaderId: *//p' <<<"$out")" = 3 ] && sed -n 's/^CurrentObservers: *//p' <<<"$out" | grep -q '"id": 2'
}
if wait_for 60 leads3; then
	record "$C" "broker follows the voters: describe --status through the broker: leader 3, broker 2 observes it" pass
else
	record "$C" "broker follows the voters: describe --status through the broker: leader 3, broker 2 observes it" fail "$(head -c 150 <<<"$out")"
fi
kt TopicCommand --bootstrap-server "$B" --create --topic follow --partitions 1 --replication-factor 1 >/dev/null 2>&1
produce follow 1 100
expect_eq "$C" "broker follows the voters: TopicCommand --create and ConsoleProducer after the leader's removal, all read back" \
	"100" "$(distinct_values follow 100)"
