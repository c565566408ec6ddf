#!/usr/bin/env bash
# bench/kafka/run.sh: Samsa side by side with Apache Kafka 4.x (a single
# KRaft node, broker+controller, started from the jars on Maven Central) on
# the same machine, in one run. Prints markdown for docs/benchmarks.md on
# stdout and progress on stderr.
#
#   bench/kafka/run.sh                          # defaults below, about 11 min on 2 cores
#   RUNS=5 RECORDS_1K=500000 RECORDS_100B=2000000 bench/kafka/run.sh   # longer, steadier
#   SIZES=1024 PARTITION_CASES=6 ACKS_CASES=all CLIENTS=franz bench/kafka/run.sh
#
# Needs Go, Java 17+, Maven (the first run fetches the jars into
# $HOME/.cache/samsa-bench), python3 (to pick free ports), bash and /proc.
#
# One "session" is one fresh broker process on a fresh data directory that
# runs every workload once: for each record size x partitions x acks case,
# Kafka's ProducerPerformance then ConsumerPerformance (Java client), then
# `samsa bench` (franz-go, produce then consume), each on its own new topic;
# then the fixed-rate end-to-end latency run (bench/kafka/e2elat, franz-go)
# and Kafka's EndToEndLatency tool (closed loop, one record at a time).
# Sessions alternate Samsa and Kafka RUNS times each (odd runs start with
# Samsa, even runs with Kafka); the tables show the median of the runs.
# Peak RSS is VmHWM of the broker process at the end of a session, i.e. the
# most it held across all of that session's workloads.
set -euo pipefail

RUNS=${RUNS:-3}
RECORDS_1K=${RECORDS_1K:-100000}     # records per case at 1 KiB (~100 MB)
RECORDS_100B=${RECORDS_100B:-500000} # records per case at 100 B (~50 MB)
SIZES=${SIZES:-"1024 100"}
PARTITION_CASES=${PARTITION_CASES:-"1 6"}
ACKS_CASES=${ACKS_CASES:-"1 all"}
CLIENTS=${CLIENTS:-"java franz"}
WARMUP_RECORDS=${WARMUP_RECORDS:-200000} # 1 KiB records sent to each fresh broker first, not measured
E2E_RATE=${E2E_RATE:-1000}       # records/s for e2elat
E2E_SECONDS=${E2E_SECONDS:-10}   # measured seconds (after a 2 s warm-up)
E2E_SIZE=${E2E_SIZE:-1024}
E2E_JAVA_RECORDS=${E2E_JAVA_RECORDS:-2000} # Kafka's EndToEndLatency; 0 skips it
KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
# kafka-server-start.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:-"-Xmx1G -Xms1G"}
KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:-"-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true"}
# The perf tools' scripts use -Xmx512M.
TOOL_HEAP_OPTS=${TOOL_HEAP_OPTS:-"-Xmx512M"}

here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
jars=${KAFKA_JARS:-$HOME/.cache/samsa-bench/kafka-$KAFKA_VERSION}
# The work directory holds both brokers' data directories, so both write to
# the same file system.
work=$(mktemp -d "${TMPDIR:-/tmp}/samsa-kafka-bench.XXXXXX")
server_pid=""
cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

log() { echo "kafka/run.sh: $*" >&2; }

if [[ ! -f $jars/kafka_2.13-$KAFKA_VERSION.jar || ! -f $jars/kafka-tools-$KAFKA_VERSION.jar ]]; then
	log "fetching Apache Kafka $KAFKA_VERSION jars into $jars"
	mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
		dependency:copy-dependencies -DoutputDirectory="$jars" >&2
fi
log "building into $work"
go build -o "$work/samsa" ./cmd/samsa
go build -o "$work/e2elat" ./bench/kafka/e2elat

# java_tool CLASS ARGS...: one Kafka tool run with the tools' heap, WARN logging.
java_tool() {
	local cls=$1
	shift
	# shellcheck disable=SC2086
	timeout 300 java $TOOL_HEAP_OPTS -Dlog4j2.configurationFile="$here/log4j2.properties" \
		-Dsamsa.bench.loglevel=WARN -cp "$jars/*" "$cls" "$@"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_for FILE REGEX: wait until REGEX matches the server log FILE; print
# its first capture. Fails after 60 s or if the server exits.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		if [[ $(cat "$1") =~ $2 ]]; then
			echo "${BASH_REMATCH[1]}"
			return 0
		fi
		if ! kill -0 "$server_pid" 2>/dev/null; then
			log "server exited:"; tail -50 "$1" >&2; return 1
		fi
		sleep 0.1
	done
	log "server did not start in 60 s:"; tail -50 "$1" >&2
	return 1
}

# start_server samsa|kafka: a fresh data directory and process; sets
# server_pid and addr.
start_server() {
	local out="$work/$1.log" data="$work/$1-data"
	: >"$out"
	rm -rf "$data" && mkdir "$data"
	case $1 in
	samsa)
		# The same group.initial.rebalance.delay.ms override as Kafka's below.
		"$work/samsa" server --override "log.dirs=$data" \
			--override "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0" \
			--override group.initial.rebalance.delay.ms=0 2>"$out" &
		server_pid=$!
		addr=$(wait_for "$out" 'serving Kafka clients" listener=PLAINTEXT addr=([0-9.:]+)')
		;;
	kafka)
		local port cport
		port=$(free_port)
		cport=$(free_port)
		# Kafka's defaults except what a single node needs: internal topics
		# with one replica, and no 3 s wait before the first rebalance
		# (config/server.properties in the distribution sets it to 0 too).
		# Flushing stays at the defaults: no fsync per message, as Samsa.
		cat >"$work/server.properties" <<-EOF
			process.roles=broker,controller
			node.id=1
			controller.quorum.voters=1@127.0.0.1:$cport
			listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
			advertised.listeners=PLAINTEXT://127.0.0.1:$port
			controller.listener.names=CONTROLLER
			inter.broker.listener.name=PLAINTEXT
			listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
			log.dirs=$data
			offsets.topic.replication.factor=1
			transaction.state.log.replication.factor=1
			transaction.state.log.min.isr=1
			share.coordinator.state.topic.replication.factor=1
			share.coordinator.state.topic.min.isr=1
			group.initial.rebalance.delay.ms=0
		EOF
		local cid
		cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
		java_tool kafka.tools.StorageTool format -t "$cid" -c "$work/server.properties" >>"$out" 2>&1
		# shellcheck disable=SC2086
		java $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS \
			-Dlog4j2.configurationFile="$here/log4j2.properties" \
			-cp "$jars/*" kafka.Kafka "$work/server.properties" >>"$out" 2>&1 &
		server_pid=$!
		wait_for "$out" '(Kafka Server started)' >/dev/null
		addr=127.0.0.1:$port
		;;
	esac
}

stop_server() {
	kill -TERM "$server_pid"
	wait "$server_pid" || true
	server_pid=""
}

# rss_kib FIELD: VmRSS or VmHWM of the server in KiB.
rss_kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$server_pid/status"; }

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# mbs RECORDS_PER_SEC SIZE: MB/s in 10^6 bytes of values, the unit `samsa
# bench` uses (Kafka's tools print 2^20-byte MB; they are not used).
mbs() { awk -v r="$1" -v s="$2" 'BEGIN { printf "%.2f", r * s / 1e6 }'; }

# records_for SIZE: records per case for a record size.
records_for() { if (($1 >= 1024)); then echo "$RECORDS_1K"; else echo "$RECORDS_100B"; fi; }

results="$work/results.tsv" # impl run client size parts acks pMBs pRecs p50 p99 p999 cMBs cRecs
sessions="$work/sessions.tsv" # impl run idle_KiB peak_KiB
e2e="$work/e2e.tsv" # impl run tool p50 p99 p999 max
: >"$results"
: >"$sessions"
: >"$e2e"

# java_case IMPL RUN SIZE PARTS ACKS N: ProducerPerformance then
# ConsumerPerformance on a new topic.
java_case() {
	local impl=$1 run=$2 size=$3 parts=$4 acks=$5 n=$6 topic out line
	topic="java-s$3-p$4-a$5"
	"$work/samsa" topic create "$topic" --partitions "$parts" --bootstrap "$addr" >/dev/null
	out=$(java_tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$n" \
		--record-size "$size" --throughput -1 --producer-props "bootstrap.servers=$addr" "acks=$acks" 2>&1)
	# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
	line=$(grep -E '^[0-9]+ records sent' <<<"$out" | tail -1)
	local sent rps p50 p99 p999
	read -r sent rps p50 p99 p999 < <(sed -E 's/^([0-9]+) records sent, ([0-9.]+) records\/sec.* ([0-9.]+) ms 50th, [0-9.]+ ms 95th, ([0-9.]+) ms 99th, ([0-9.]+) ms 99.9th.*/\1 \2 \3 \4 \5/' <<<"$line")
	if [[ $sent != "$n" ]]; then
		log "$impl ProducerPerformance $topic: $out"
		return 1
	fi
	out=$(java_tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" --topic "$topic" \
		--num-records "$n" --timeout 30000 --hide-header 2>&1)
	# start.time, end.time, MB, MB.sec, nMsg, nMsg.sec, rebalance.time.ms,
	# fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec: fetch.* leave out the
	# group join, which franz-go's figure (assigned partitions) has none of.
	line=$(grep -E '^[0-9]{4}-.*,' <<<"$out" | tail -1)
	local got crps
	got=$(awk -F', *' '{ print $5 }' <<<"$line")
	crps=$(awk -F', *' '{ print $10 }' <<<"$line")
	if [[ $got != "$n" ]]; then
		log "$impl ConsumerPerformance $topic: $out"
		return 1
	fi
	printf '%s\t%s\tjava\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$run" "$size" "$parts" "$acks" \
		"$(mbs "$rps" "$size")" "$(printf '%.0f' "$rps")" "$p50" "$p99" "$p999" "$(mbs "$crps" "$size")" "$(printf '%.0f' "$crps")" >>"$results"
	log "$impl run $run java s=$size p=$parts acks=$acks: produce $(mbs "$rps" "$size") MB/s p99 $p99 ms, consume $(mbs "$crps" "$size") MB/s"
}

# franz_case IMPL RUN SIZE PARTS ACKS N: `samsa bench` (creates, produces,
# consumes and deletes its own topic).
franz_case() {
	local impl=$1 run=$2 size=$3 parts=$4 acks=$5 n=$6 line
	line=$("$work/samsa" bench --bootstrap "$addr" --partitions "$parts" --records "$n" \
		--size "$size" --acks "$acks" --compression none --tsv)
	local produced errors pmbs prps p50 p99 p999 consumed cmbs
	IFS=$'\t' read -r produced errors pmbs prps p50 p99 p999 _ consumed cmbs <<<"$line"
	if [[ $produced != "$n" || $consumed != "$n" || $errors != 0 ]]; then
		log "$impl franz s=$size p=$parts: produced $produced, consumed $consumed, errors $errors"
		return 1
	fi
	printf '%s\t%s\tfranz\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$run" "$size" "$parts" "$acks" \
		"$pmbs" "$prps" "$p50" "$p99" "$p999" "$cmbs" \
		"$(awk -v m="$cmbs" -v s="$size" 'BEGIN { printf "%.0f", m * 1e6 / s }')" >>"$results"
	log "$impl run $run franz s=$size p=$parts acks=$acks: produce $pmbs MB/s p99 $p99 ms, consume $cmbs MB/s"
}

# e2e_cases IMPL RUN: the fixed-rate franz-go run, then Kafka's closed-loop tool.
e2e_cases() {
	local impl=$1 run=$2 line
	line=$("$work/e2elat" --bootstrap "$addr" --topic e2e-rate --rate "$E2E_RATE" \
		--duration "${E2E_SECONDS}s" --size "$E2E_SIZE" --acks all)
	local sent recv lost p50 p99 p999 pmax
	IFS=$'\t' read -r sent recv lost p50 p99 p999 pmax _ <<<"$line"
	if [[ $lost != 0 ]]; then
		log "$impl e2elat: $line"
		return 1
	fi
	printf '%s\t%s\te2elat\t%s\t%s\t%s\t%s\n' "$impl" "$run" "$p50" "$p99" "$p999" "$pmax" >>"$e2e"
	log "$impl run $run e2elat $E2E_RATE/s: p50 $p50 ms p99 $p99 ms p99.9 $p999 ms"
	if ((E2E_JAVA_RECORDS > 0)); then
		"$work/samsa" topic create e2e-java --partitions 1 --bootstrap "$addr" >/dev/null
		local out
		out=$(java_tool org.apache.kafka.tools.EndToEndLatency "$addr" e2e-java "$E2E_JAVA_RECORDS" all "$E2E_SIZE" 2>&1)
		# "Percentiles: 50th = 1, 99th = 2, 99.9th = 3"
		line=$(grep -E '^Percentiles' <<<"$out" | tail -1)
		if [[ -z $line ]]; then
			log "$impl EndToEndLatency: $out"
			return 1
		fi
		read -r p50 p99 p999 < <(sed -E 's/.*50th = ([0-9.]+), 99th = ([0-9.]+), 99.9th = ([0-9.]+).*/\1 \2 \3/' <<<"$line")
		printf '%s\t%s\tEndToEndLatency\t%s\t%s\t%s\t-\n' "$impl" "$run" "$p50" "$p99" "$p999" >>"$e2e"
		log "$impl run $run EndToEndLatency: p50 $p50 ms p99 $p99 ms p99.9 $p999 ms"
	fi
}

session() {
	local impl=$1 run=$2 idle size parts acks client n
	start_server "$impl"
	sleep 2
	idle=$(rss_kib VmRSS)
	# A JVM runs interpreted until its JIT has seen the hot paths; without
	# this the first cases would measure Kafka's warm-up, not Kafka.
	if ((WARMUP_RECORDS > 0)); then
		"$work/samsa" bench --bootstrap "$addr" --partitions 6 --records "$WARMUP_RECORDS" --size 1024 \
			--acks all --tsv >/dev/null
		java_tool org.apache.kafka.tools.ProducerPerformance --topic warmup --num-records "$WARMUP_RECORDS" \
			--record-size 1024 --throughput -1 --producer-props "bootstrap.servers=$addr" >/dev/null 2>&1
	fi
	for size in $SIZES; do
		n=$(records_for "$size")
		for parts in $PARTITION_CASES; do
			for acks in $ACKS_CASES; do
				for client in $CLIENTS; do
					"${client}_case" "$impl" "$run" "$size" "$parts" "$acks" "$n"
				done
			done
		done
	done
	e2e_cases "$impl" "$run"
	printf '%s\t%s\t%s\t%s\n' "$impl" "$run" "$idle" "$(rss_kib VmHWM)" >>"$sessions"
	log "$impl run $run: idle RSS $(mib "$idle") MiB, peak RSS $(mib "$(rss_kib VmHWM)") MiB"
	stop_server
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$SECONDS
for ((run = 1; run <= RUNS; run++)); do
	if ((run % 2)); then order="samsa kafka"; else order="kafka samsa"; fi
	for impl in $order; do
		session "$impl" "$run"
	done
done
elapsed=$((SECONDS - t0))

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
# med FILE IMPL COLUMN [FILTER...]: median of COLUMN over the rows of IMPL
# whose columns 3.. equal the filter values.
med() {
	local file=$1 impl=$2 c=$3
	shift 3
	awk -F'\t' -v i="$impl" -v c="$c" -v f="$*" '
		BEGIN { n = split(f, want, " ") }
		$1 == i { for (k = 1; k <= n; k++) if ($(k + 2) != want[k]) next; print $c }' "$file" | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "-" || b == "-") print "-"; else printf "%.2f", a / b }'; }

echo "### Samsa vs Apache Kafka $KAFKA_VERSION: throughput and latency (median of $RUNS runs each)"
echo
echo "Started $started (load average $load before the run), $elapsed s in all."
echo "$RECORDS_1K records per case at 1024 B, $RECORDS_100B at 100 B; compression none; MB = 10^6 bytes of record values."
echo "Produce latency is per record, send to acknowledgement, under a saturating producer (mostly client queueing)."
echo "S/K = Samsa / Kafka (above 1: Samsa has more throughput, or longer latency)."
echo
echo "| client | record B | partitions | acks | produce MB/s Samsa | Kafka | S/K | records/s Samsa | Kafka | p50 ms Samsa | Kafka | p99 ms Samsa | Kafka | S/K | p99.9 ms Samsa | Kafka | consume MB/s Samsa | Kafka | S/K |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for client in $CLIENTS; do
	for size in $SIZES; do
		for parts in $PARTITION_CASES; do
			for acks in $ACKS_CASES; do
				f="$client $size $parts $acks"
				declare -A v=()
				for impl in samsa kafka; do
					for c in 7 8 9 10 11 12; do
						v[$impl$c]=$(med "$results" "$impl" "$c" "$f")
					done
				done
				name=$([[ $client == java ]] && echo "Java (ProducerPerformance / ConsumerPerformance)" || echo "franz-go (samsa bench)")
				echo "| $name | $size | $parts | $acks | ${v[samsa7]} | ${v[kafka7]} | $(ratio "${v[samsa7]}" "${v[kafka7]}") |" \
					"$(printf '%.0f' "${v[samsa8]}") | $(printf '%.0f' "${v[kafka8]}") | ${v[samsa9]} | ${v[kafka9]} |" \
					"${v[samsa10]} | ${v[kafka10]} | $(ratio "${v[samsa10]}" "${v[kafka10]}") | ${v[samsa11]} | ${v[kafka11]} |" \
					"${v[samsa12]} | ${v[kafka12]} | $(ratio "${v[samsa12]}" "${v[kafka12]}") |"
				unset v
			done
		done
	done
done
echo
echo "### End-to-end latency (acks=all, $E2E_SIZE B records, one partition)"
echo
echo "| tool | p50 ms Samsa | Kafka | p99 ms Samsa | Kafka | S/K | p99.9 ms Samsa | Kafka | max ms Samsa | Kafka |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for tool in e2elat EndToEndLatency; do
	grep -q "	$tool	" "$e2e" || continue
	declare -A v=()
	for impl in samsa kafka; do
		for c in 4 5 6 7; do v[$impl$c]=$(med "$e2e" "$impl" "$c" "$tool"); done
	done
	case $tool in
	e2elat) name="e2elat (franz-go, $E2E_RATE records/s for $E2E_SECONDS s, from scheduled send time)" ;;
	*) name="Kafka EndToEndLatency ($E2E_JAVA_RECORDS records, one at a time, whole ms)" ;;
	esac
	echo "| $name | ${v[samsa4]} | ${v[kafka4]} | ${v[samsa5]} | ${v[kafka5]} | $(ratio "${v[samsa5]}" "${v[kafka5]}") |" \
		"${v[samsa6]} | ${v[kafka6]} | ${v[samsa7]} | ${v[kafka7]} |"
	unset v
done
echo
echo "### Broker memory (median of $RUNS sessions; a session runs every case above on one process)"
echo
echo "| | Samsa | Kafka (-Xmx1G -Xms1G) | S/K |"
echo "|---|---:|---:|---:|"
si=$(med "$sessions" samsa 3); ki=$(med "$sessions" kafka 3)
sp=$(med "$sessions" samsa 4); kp=$(med "$sessions" kafka 4)
echo "| idle RSS 2 s after start, MiB | $(mib "$si") | $(mib "$ki") | $(ratio "$si" "$ki") |"
echo "| peak RSS (VmHWM) at the end of the session, MiB | $(mib "$sp") | $(mib "$kp") | $(ratio "$sp" "$kp") |"
echo
echo "<details><summary>every run</summary>"
echo
echo "| broker | run | client | record B | partitions | acks | produce MB/s | records/s | p50 ms | p99 ms | p99.9 ms | consume MB/s | records/s |"
echo "|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$results"
echo
echo "| broker | run | tool | p50 ms | p99 ms | p99.9 ms | max ms |"
echo "|---|---:|---|---:|---:|---:|---:|"
sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$e2e"
echo
echo "| broker | run | idle RSS KiB | peak RSS KiB |"
echo "|---|---:|---:|---:|"
sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$sessions"
echo
echo "</details>"
