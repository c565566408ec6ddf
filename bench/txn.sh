#!/usr/bin/env bash
# bench/txn.sh: transactional produce against idempotent produce on one
# fresh Samsa server (loopback, temporary data directory): 1 KiB records,
# one partition, acks=all, compression none, franz-go through `samsa
# bench`, the two modes alternating RUNS times. Prints markdown for
# docs/benchmarks.md on stdout and progress on stderr.
#
#   bench/txn.sh                        # RUNS=3 RECORDS=100000 TXN_SIZE=100
set -euo pipefail

RUNS=${RUNS:-3}
RECORDS=${RECORDS:-100000}
TXN_SIZE=${TXN_SIZE:-100}

cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/samsa-txn-bench.XXXXXX")
server_pid=""
cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
log() { echo "txn.sh: $*" >&2; }

log "building into $work"
go build -o "$work/samsa" ./cmd/samsa
mkdir "$work/data"
"$work/samsa" server --override "log.dirs=$work/data" \
	--override "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0" 2>"$work/server.log" &
server_pid=$!
addr=""
for ((i = 0; i < 300; i++)); do
	if [[ $(cat "$work/server.log") =~ serving\ Kafka\ clients\"\ listener=PLAINTEXT\ addr=([0-9.:]+) ]]; then
		addr=${BASH_REMATCH[1]}
		break
	fi
	sleep 0.1
done
[[ -n $addr ]] || { log "server did not start:"; cat "$work/server.log" >&2; exit 1; }

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
results="$work/results.tsv" # mode run records_per_s produce_MBs consume_MBs
: >"$results"
for ((run = 1; run <= RUNS; run++)); do
	for mode in idempotent transactional; do
		flags=()
		[[ $mode == transactional ]] && flags=(--txn-size "$TXN_SIZE")
		line=$("$work/samsa" bench --bootstrap "$addr" --partitions 1 --records "$RECORDS" --size 1024 \
			--acks all --compression none --tsv "${flags[@]}")
		IFS=$'\t' read -r produced errors pmbs prps _ _ _ _ consumed cmbs <<<"$line"
		if [[ $produced != "$RECORDS" || $consumed != "$RECORDS" || $errors != 0 ]]; then
			log "$mode run $run: produced $produced, consumed $consumed, errors $errors"
			exit 1
		fi
		log "$mode run $run: $prps records/s, produce $pmbs MB/s, consume $cmbs MB/s"
		printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$run" "$prps" "$pmbs" "$cmbs" >>"$results"
	done
done

echo "| mode | records/s (each run) | produce MB/s (median) | consume MB/s (median) |"
echo "|---|---|---:|---:|"
for mode in idempotent transactional; do
	runs=$(awk -F'\t' -v m="$mode" '$1 == m { printf "%s%s", sep, $3; sep=" / " }' "$results")
	p=$(awk -F'\t' -v m="$mode" '$1 == m { print $4 }' "$results" | median)
	c=$(awk -F'\t' -v m="$mode" '$1 == m { print $5 }' "$results" | median)
	label=$mode
	[[ $mode == transactional ]] && label="transactional, $TXN_SIZE records/txn"
	echo "| $label | $runs | $p | $c |"
done
