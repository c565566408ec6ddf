#!/usr/bin/env bash
# bench/run.sh: Samsa against franz-go's in-memory kfake cluster, on loopback,
# 1 KiB random records, acks=all, no compression, 1 and 6 partitions; plus
# Samsa's idle memory (fresh, and with 1,000 partitions). Needs only Go,
# bash and Linux /proc. Prints markdown for docs/benchmarks.md on stdout and
# progress on stderr.
#
#   bench/run.sh                    # RUNS=3 RECORDS=500000
#   RUNS=5 RECORDS=1000000 bench/run.sh
#
# Each case runs RUNS times, alternating Samsa and kfake, each run on a
# fresh server process (fresh temp data directory for Samsa) so that peak
# RSS (VmHWM) belongs to that run alone. The table shows medians.
set -euo pipefail

RUNS=${RUNS:-3}
RECORDS=${RECORDS:-500000}
SIZE=${SIZE:-1024}
PARTITION_CASES=${PARTITION_CASES:-"1 6"}
BENCH_FLAGS=${BENCH_FLAGS:-}

cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/samsa-bench.XXXXXX")
server_pid=""
cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

log() { echo "run.sh: $*" >&2; }

log "building into $work"
go build -o "$work/samsa" ./cmd/samsa
go build -o "$work/kfakeserver" ./bench/kfakeserver

# wait_for FILE REGEX: print the first capture of REGEX once it appears in
# FILE (the server's log), or fail after 30 s.
wait_for() {
	local i
	for ((i = 0; i < 300; i++)); do
		if [[ $(cat "$1") =~ $2 ]]; then
			echo "${BASH_REMATCH[1]}"
			return 0
		fi
		if ! kill -0 "$server_pid" 2>/dev/null; then
			log "server exited:"; cat "$1" >&2; return 1
		fi
		sleep 0.1
	done
	log "server did not start in 30 s:"; cat "$1" >&2
	return 1
}

# start_server samsa|kfake: sets server_pid and addr.
start_server() {
	local out="$work/server.log"
	: >"$out"
	case $1 in
	samsa)
		rm -rf "$work/data" && mkdir "$work/data"
		"$work/samsa" server --override "log.dirs=$work/data" \
			--override "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0" 2>"$out" &
		server_pid=$!
		addr=$(wait_for "$out" 'serving Kafka clients" listener=PLAINTEXT addr=([0-9.:]+)')
		;;
	kfake)
		"$work/kfakeserver" >"$out" 2>&1 &
		server_pid=$!
		addr=$(wait_for "$out" 'kfake listening on ([0-9.:]+)')
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

# median: the middle line of numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

results="$work/results.tsv" # impl parts run produce_MBs consume_MBs p50 p99 p999 peak_KiB idle_KiB
: >"$results"
for parts in $PARTITION_CASES; do
	for ((run = 1; run <= RUNS; run++)); do
		for impl in samsa kfake; do
			start_server "$impl"
			sleep 1
			idle=$(rss_kib VmRSS)
			# shellcheck disable=SC2086
			line=$("$work/samsa" bench --bootstrap "$addr" --partitions "$parts" --records "$RECORDS" \
				--size "$SIZE" --acks all --compression none --tsv $BENCH_FLAGS)
			peak=$(rss_kib VmHWM)
			stop_server
			IFS=$'\t' read -r produced errors pmbs _ p50 p99 p999 _ consumed cmbs <<<"$line"
			if [[ $produced != "$RECORDS" || $consumed != "$RECORDS" || $errors != 0 ]]; then
				log "$impl p=$parts run $run: produced $produced, consumed $consumed, errors $errors"
				exit 1
			fi
			log "$impl p=$parts run $run: produce $pmbs MB/s, consume $cmbs MB/s, p50 $p50 ms, p99 $p99 ms, peak RSS $(mib "$peak") MiB"
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$parts" "$run" "$pmbs" "$cmbs" \
				"$p50" "$p99" "$p999" "$peak" "$idle" >>"$results"
		done
	done
done

col() { awk -F'\t' -v i="$1" -v p="$2" -v c="$3" '$1 == i && $2 == p { print $c }' "$results" | median; }

echo "### Throughput and latency (median of $RUNS runs, $RECORDS records of $SIZE B, acks=all, compression=none)"
echo
echo "| partitions | server | produce MB/s | consume MB/s | produce p50 ms | produce p99 ms | produce p99.9 ms | peak RSS MiB |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
for parts in $PARTITION_CASES; do
	for impl in samsa kfake; do
		echo "| $parts | $impl | $(col $impl "$parts" 4) | $(col $impl "$parts" 5) | $(col $impl "$parts" 6) |" \
			"$(col $impl "$parts" 7) | $(col $impl "$parts" 8) | $(mib "$(col $impl "$parts" 9)") |"
	done
done
echo
echo "<details><summary>every run</summary>"
echo
echo "| server | partitions | run | produce MB/s | consume MB/s | p50 ms | p99 ms | p99.9 ms | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
while IFS=$'\t' read -r impl parts run pmbs cmbs p50 p99 p999 peak _; do
	echo "| $impl | $parts | $run | $pmbs | $cmbs | $p50 | $p99 | $p999 | $(mib "$peak") |"
done <"$results"
echo
echo "</details>"
echo

# Memory: a fresh idle server, then the same server idle with 1,000 more
# partitions (10 topics x 100 partitions, created with `samsa topic create`).
log "memory: fresh server, then 1,000 partitions"
start_server samsa
sleep 5
fresh=$(rss_kib VmRSS)
for i in $(seq -w 0 9); do
	"$work/samsa" topic create "idle-$i" --partitions 100 --bootstrap "$addr" >/dev/null
done
sleep 10
loaded=$(rss_kib VmRSS)
loaded_hwm=$(rss_kib VmHWM)
dirs=$(find "$work/data" -maxdepth 1 -name 'idle-*' -type d | wc -l)
stop_server
start_server kfake
sleep 5
kfake_fresh=$(rss_kib VmRSS)
stop_server

added=$((loaded - fresh))
verdict() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v / 1024 < lim) ? "met" : "**missed**" }'; }
echo "### Idle memory"
echo
echo "| measurement | RSS MiB | target | |"
echo "|---|---:|---|---|"
echo "| fresh idle Samsa server (VmRSS 5 s after start) | $(mib "$fresh") | < 64 MiB | $(verdict "$fresh" 64) |"
echo "| same server idle with 1,000 partitions ($dirs partition directories; VmRSS 10 s after creating them) | $(mib "$loaded") | | |"
echo "| added by 1,000 idle partitions | $(mib "$added") | < 100 MiB | $(verdict "$added" 100) |"
echo "| peak (VmHWM) while creating them | $(mib "$loaded_hwm") | | |"
echo "| fresh idle kfake, for reference | $(mib "$kfake_fresh") | | |"
