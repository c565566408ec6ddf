#!/usr/bin/env bash
# bench/kafka/durable.sh: durable writes, Samsa side by side with Apache
# Kafka 4.x on the same machine in one run (the brokers, jars and cases of
# run.sh, from lib.sh). Each broker runs twice: with its defaults (no fsync
# per message: a record is acknowledged once it is in the page cache of
# the in-sync replicas) and with log.flush.interval.messages=1 (fsync
# before the append is acknowledged). Prints markdown for
# docs/benchmarks.md on stdout and progress on stderr.
#
#   bench/kafka/durable.sh > results.md          # defaults below, about 8 min on 2 cores
#   RUNS=1 RECORDS_1K=30000 WARMUP_RECORDS=20000 bench/kafka/durable.sh   # smoke test
#
# One session is one fresh broker process on a fresh data directory that
# warms up (WARMUP_RECORDS, not measured) and runs each size x partitions
# x acks x client case of run.sh once. Sessions go samsa, kafka,
# samsa-fsync, kafka-fsync (rotated by one each run), RUNS times; the
# tables show medians.
set -euo pipefail

RUNS=${RUNS:-3}
SIZES=${SIZES:-1024}
PARTITION_CASES=${PARTITION_CASES:-"1 6"}
ACKS_CASES=${ACKS_CASES:-all}
CLIENTS=${CLIENTS:-"java franz"}
# RECORDS_1K, RECORDS_100B, WARMUP_RECORDS, KAFKA_VERSION, KAFKA_HEAP_OPTS,
# KAFKA_JVM_PERFORMANCE_OPTS, TOOL_HEAP_OPTS, KAFKA_JARS: see lib.sh.
# shellcheck source=bench/kafka/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup

results="$work/results.tsv" # impl run client size parts acks pMBs pRecs p50 p99 p999 cMBs cRecs
: >"$results"
labels=(samsa kafka samsa-fsync kafka-fsync)

# session LABEL RUN: LABEL is a broker (samsa, kafka), with -fsync for
# log.flush.interval.messages=1.
session() {
	local label=$1 run=$2 size parts acks client
	server_props=()
	if [[ $label == *-fsync ]]; then server_props=(log.flush.interval.messages=1); fi
	start_server "${label%-fsync}"
	warmup
	for size in $SIZES; do
		for parts in $PARTITION_CASES; do
			for acks in $ACKS_CASES; do
				for client in $CLIENTS; do
					"${client}_case" "$label" "$run" "$size" "$parts" "$acks" "$(records_for "$size")"
				done
			done
		done
	done
	stop_server
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$SECONDS
for ((run = 1; run <= RUNS; run++)); do
	for ((i = 0; i < ${#labels[@]}; i++)); do
		session "${labels[(i + run - 1) % ${#labels[@]}]}" "$run"
	done
done
elapsed=$((SECONDS - t0))

echo "### Durable writes: fsync before every acknowledgement (median of $RUNS runs each)"
echo
echo "Started $started (load average $load before the run), $elapsed s in all."
echo "$RECORDS_1K records per case at 1024 B, $RECORDS_100B at 100 B; compression none; MB = 10^6 bytes of record values."
echo "fsync: log.flush.interval.messages=1 on that broker; the others run Kafka's default (no fsync per message)."
echo "The last column is the target of issue 15: Samsa with fsync over Kafka without."
echo
echo "| client | record B | partitions | acks | produce MB/s Samsa | Samsa fsync | Kafka | Kafka fsync | Samsa fsync / Kafka |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|"
for client in $CLIENTS; do
	for size in $SIZES; do
		for parts in $PARTITION_CASES; do
			for acks in $ACKS_CASES; do
				f="$client $size $parts $acks"
				declare -A v=()
				for label in "${labels[@]}"; do v[$label]=$(med "$results" "$label" 7 "$f"); done
				name=$([[ $client == java ]] && echo "Java (ProducerPerformance)" || echo "franz-go (samsa bench)")
				echo "| $name | $size | $parts | $acks | ${v[samsa]} | ${v[samsa-fsync]} | ${v[kafka]} | ${v[kafka-fsync]} |" \
					"$(ratio "${v[samsa-fsync]}" "${v[kafka]}") |"
				unset v
			done
		done
	done
done
echo
echo "<details><summary>every run</summary>"
echo
echo "| broker | run | client | record B | partitions | acks | produce MB/s | records/s | p50 ms | p99 ms | p99.9 ms | consume MB/s | records/s |"
echo "|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$results"
echo
echo "</details>"
