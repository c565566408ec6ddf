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
SIZES=${SIZES:-"1024 100"}
PARTITION_CASES=${PARTITION_CASES:-"1 6"}
ACKS_CASES=${ACKS_CASES:-"1 all"}
CLIENTS=${CLIENTS:-"java franz"}
E2E_RATE=${E2E_RATE:-1000}       # records/s for e2elat
E2E_SECONDS=${E2E_SECONDS:-10}   # measured seconds (after a 2 s warm-up)
E2E_SIZE=${E2E_SIZE:-1024}
E2E_JAVA_RECORDS=${E2E_JAVA_RECORDS:-2000} # Kafka's EndToEndLatency; 0 skips it
# RECORDS_1K, RECORDS_100B, WARMUP_RECORDS, KAFKA_VERSION, KAFKA_HEAP_OPTS,
# KAFKA_JVM_PERFORMANCE_OPTS, TOOL_HEAP_OPTS, KAFKA_JARS: see lib.sh.
# shellcheck source=bench/kafka/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup
go build -o "$work/e2elat" ./bench/kafka/e2elat

results="$work/results.tsv" # impl run client size parts acks pMBs pRecs p50 p99 p999 cMBs cRecs
sessions="$work/sessions.tsv" # impl run idle_KiB peak_KiB
e2e="$work/e2e.tsv" # impl run tool p50 p99 p999 max
: >"$results"
: >"$sessions"
: >"$e2e"

# e2e_cases IMPL RUN: the fixed-rate franz-go run, then Kafka's closed-loop tool.
e2e_cases() {
	local impl=$1 run=$2 line
	line=$("$work/e2elat" --bootstrap "$addr" --topic e2e-rate --rate "$E2E_RATE" \
		--duration "${E2E_SECONDS}s" --size "$E2E_SIZE" --acks all)
	local lost p50 p99 p999 pmax
	IFS=$'\t' read -r _ _ lost p50 p99 p999 pmax _ <<<"$line"
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
	warmup
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

run_sessions

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
