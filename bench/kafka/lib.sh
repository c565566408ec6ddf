# shellcheck shell=bash
# bench/kafka/lib.sh: what the side-by-side scripts share, sourced by
# run.sh (throughput and latency) and security.sh (TLS and SCRAM): the
# Apache Kafka jars, the work directory, starting and stopping either
# broker, the produce/consume cases (Kafka's perf tools and `samsa
# bench`) and the median helpers of the tables. Sourcing it defines knobs
# and functions only; the caller then runs bench_setup.

# Knobs shared by both scripts.
RECORDS_1K=${RECORDS_1K:-100000}     # records per case at 1 KiB (~100 MB)
RECORDS_100B=${RECORDS_100B:-500000} # records per case at 100 B (~50 MB)
WARMUP_RECORDS=${WARMUP_RECORDS:-200000} # 1 KiB records sent to each fresh broker first, not measured
KAFKA_VERSION=${KAFKA_VERSION:-4.4.0}
# kafka-server-start.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:-"-Xmx1G -Xms1G"}
KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:-"-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true"}
# The perf tools' scripts use -Xmx512M.
TOOL_HEAP_OPTS=${TOOL_HEAP_OPTS:-"-Xmx512M"}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jars=${KAFKA_JARS:-$HOME/.cache/samsa-bench/kafka-$KAFKA_VERSION}
work=""
server_pid=""

# What start_server opens, the same on both brokers; callers may change
# these before each start. listeners: names besides CONTROLLER, each also
# its security protocol; PLAINTEXT must be one (the inter-broker listener,
# and where `addr` points). server_props: more key=value server
# properties. scram_creds: SCRAM credentials written when the metadata log
# is created, in kafka-storage format --add-scram syntax (which `samsa
# server --add-scram` takes too).
listeners=(PLAINTEXT)
server_props=()
scram_creds=()
# Set by start_server: the address of each listener, by name.
declare -A addrs=()

# Where the cases connect: the bootstrap address, and (--command-config
# FILE) when it needs a client properties file. Kafka's perf tools and
# the samsa CLI all read such a file with that flag.
addr=""
client_args=()
# The file the cases append their results to; set by the caller.
results=""
# Appended to the names of the topics java_case and warmup create, so that
# several protocols can run the same case on one broker.
topic_suffix=""

log() { echo "kafka/${0##*/}: $*" >&2; }

cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -n $work ]]; then rm -rf "$work"; fi
}

# bench_setup: the repository root as the current directory, a work
# directory removed on exit, the Kafka jars, and samsa built into it.
bench_setup() {
	cd "$here/../.." || exit
	# The work directory holds both brokers' data directories, so both
	# write to the same file system.
	work=$(mktemp -d "${TMPDIR:-/tmp}/samsa-kafka-bench.XXXXXX")
	trap cleanup EXIT
	if [[ ! -f $jars/kafka_2.13-$KAFKA_VERSION.jar || ! -f $jars/kafka-tools-$KAFKA_VERSION.jar ]]; then
		log "fetching Apache Kafka $KAFKA_VERSION jars into $jars"
		mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
			dependency:copy-dependencies -DoutputDirectory="$jars" >&2
	fi
	log "building into $work"
	go build -o "$work/samsa" ./cmd/samsa
}

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

# start_server samsa|kafka: a fresh data directory and process with the
# listeners, properties and credentials above; sets server_pid, addrs and
# addr (the PLAINTEXT listener).
start_server() {
	local out="$work/$1.log" data="$work/$1-data" l p map="CONTROLLER:PLAINTEXT" lst=""
	: >"$out"
	rm -rf "$data" && mkdir "$data"
	for l in "${listeners[@]}"; do map+=",$l:$l"; done
	addrs=()
	case $1 in
	samsa)
		# The same group.initial.rebalance.delay.ms override as Kafka's below.
		for l in "${listeners[@]}"; do lst+="$l://127.0.0.1:0,"; done
		local args=(--override "log.dirs=$data" --override "listeners=${lst}CONTROLLER://127.0.0.1:0"
			--override "listener.security.protocol.map=$map" --override group.initial.rebalance.delay.ms=0)
		for p in "${server_props[@]}"; do args+=(--override "$p"); done
		for p in "${scram_creds[@]}"; do args+=(--add-scram "$p"); done
		"$work/samsa" server "${args[@]}" 2>"$out" &
		server_pid=$!
		for l in "${listeners[@]}"; do
			addrs[$l]=$(wait_for "$out" "serving Kafka clients\" listener=$l addr=([0-9.:]+)")
		done
		;;
	kafka)
		local port cport
		cport=$(free_port)
		for l in "${listeners[@]}"; do
			port=$(free_port)
			addrs[$l]=127.0.0.1:$port
			lst+="$l://127.0.0.1:$port,"
		done
		# Kafka's defaults except what a single node needs: internal topics
		# with one replica, and no 3 s wait before the first rebalance
		# (config/server.properties in the distribution sets it to 0 too).
		# Flushing stays at the defaults: no fsync per message, as Samsa.
		cat >"$work/server.properties" <<-EOF
			process.roles=broker,controller
			node.id=1
			controller.quorum.voters=1@127.0.0.1:$cport
			listeners=${lst}CONTROLLER://127.0.0.1:$cport
			advertised.listeners=${lst%,}
			controller.listener.names=CONTROLLER
			inter.broker.listener.name=PLAINTEXT
			listener.security.protocol.map=$map
			log.dirs=$data
			offsets.topic.replication.factor=1
			transaction.state.log.replication.factor=1
			transaction.state.log.min.isr=1
			share.coordinator.state.topic.replication.factor=1
			share.coordinator.state.topic.min.isr=1
			group.initial.rebalance.delay.ms=0
		EOF
		for p in "${server_props[@]}"; do echo "$p"; done >>"$work/server.properties"
		local cid fmt=()
		cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
		for p in "${scram_creds[@]}"; do fmt+=(--add-scram "$p"); done
		java_tool kafka.tools.StorageTool format -t "$cid" -c "$work/server.properties" "${fmt[@]}" >>"$out" 2>&1
		# shellcheck disable=SC2086
		java $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS \
			-Dlog4j2.configurationFile="$here/log4j2.properties" \
			-cp "$jars/*" kafka.Kafka "$work/server.properties" >>"$out" 2>&1 &
		server_pid=$!
		wait_for "$out" '(Kafka Server started)' >/dev/null
		;;
	esac
	addr=${addrs[PLAINTEXT]}
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

# warmup: WARMUP_RECORDS 1 KiB records to $addr from both clients, not
# measured. A JVM runs interpreted until its JIT has seen the hot paths;
# without this the first cases would measure Kafka's warm-up, not Kafka.
warmup() {
	((WARMUP_RECORDS > 0)) || return 0
	"$work/samsa" bench --bootstrap "$addr" "${client_args[@]}" --partitions 6 --records "$WARMUP_RECORDS" \
		--size 1024 --acks all --tsv >/dev/null
	java_tool org.apache.kafka.tools.ProducerPerformance --topic "warmup$topic_suffix" --num-records "$WARMUP_RECORDS" \
		--record-size 1024 --throughput -1 --producer-props "bootstrap.servers=$addr" "${client_args[@]}" >/dev/null 2>&1
}

# The cases append one line each to $results (set by the caller):
# impl run client size parts acks pMBs pRecs p50 p99 p999 cMBs cRecs.
# IMPL is a label (samsa, kafka, or e.g. samsa/SSL); the broker is at $addr.

# java_case IMPL RUN SIZE PARTS ACKS N: ProducerPerformance then
# ConsumerPerformance on a new topic.
java_case() {
	local impl=$1 run=$2 size=$3 parts=$4 acks=$5 n=$6 topic out line
	topic="java-s$3-p$4-a$5$topic_suffix"
	"$work/samsa" topic create "$topic" --partitions "$parts" --bootstrap "$addr" "${client_args[@]}" >/dev/null
	out=$(java_tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$n" \
		--record-size "$size" --throughput -1 --producer-props "bootstrap.servers=$addr" "acks=$acks" \
		"${client_args[@]}" 2>&1)
	# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
	line=$(grep -E '^[0-9]+ records sent' <<<"$out" | tail -1)
	local sent rps p50 p99 p999
	read -r sent rps p50 p99 p999 < <(sed -E 's/^([0-9]+) records sent, ([0-9.]+) records\/sec.* ([0-9.]+) ms 50th, [0-9.]+ ms 95th, ([0-9.]+) ms 99th, ([0-9.]+) ms 99.9th.*/\1 \2 \3 \4 \5/' <<<"$line")
	if [[ $sent != "$n" ]]; then
		log "$impl ProducerPerformance $topic: $out"
		return 1
	fi
	out=$(java_tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" --topic "$topic" \
		--num-records "$n" --timeout 30000 --hide-header "${client_args[@]}" 2>&1)
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
	line=$("$work/samsa" bench --bootstrap "$addr" "${client_args[@]}" --partitions "$parts" --records "$n" \
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

# run_sessions runs the calling script's `session IMPL RUN` RUNS times for
# each broker, odd runs Samsa first and even runs Kafka first, and sets
# started, load (before the first) and elapsed (seconds) for the report.
# shellcheck disable=SC2034 # started, load and elapsed are the caller's
run_sessions() {
	started=$(date -u '+%Y-%m-%d %H:%M UTC')
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	local t0=$SECONDS run impl order
	for ((run = 1; run <= RUNS; run++)); do
		if ((run % 2)); then order="samsa kafka"; else order="kafka samsa"; fi
		for impl in $order; do
			session "$impl" "$run"
		done
	done
	elapsed=$((SECONDS - t0))
}
