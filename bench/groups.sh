#!/usr/bin/env bash
# bench/groups.sh: consumer-group benchmarks of issue 3 against a fresh
# Samsa server subprocess on loopback: offset-commit throughput and latency,
# the time a 10-member group takes to settle after one member leaves, and
# the broker's memory with 10,000 groups holding committed offsets for 10
# partitions each (and after a restart that reloads them). Needs Go, bash
# and Linux /proc. Prints markdown on stdout, progress on stderr.
#
#   bench/groups.sh                       # RUNS=5 COMMIT_SECONDS=5 NGROUPS=10000 (about 4 min)
#   RUNS=9 COMMIT_SECONDS=10 bench/groups.sh
#
# Every server runs with group.initial.rebalance.delay.ms=0, so that a
# group's first rebalance does not wait 3 s for more members.
set -euo pipefail

RUNS=${RUNS:-5}
COMMIT_SECONDS=${COMMIT_SECONDS:-5}
NGROUPS=${NGROUPS:-10000}

cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/samsa-bench-groups.XXXXXX")
server_pid=""
stop_server() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
	fi
}
trap 'stop_server; rm -rf "$work"' EXIT

log() { echo "groups.sh: $*" >&2; }

log "building into $work"
go build -o "$work/samsa" ./cmd/samsa

# start_server [key=value...]: starts Samsa on $work/data (kept as is) and
# sets server_pid and addr.
start_server() {
	local out="$work/server.log" i args=()
	: >"$out"
	for kv in group.initial.rebalance.delay.ms=0 "$@"; do args+=(--override "$kv"); done
	mkdir -p "$work/data"
	"$work/samsa" server --override "log.dirs=$work/data" \
		--override "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0" "${args[@]}" 2>"$out" &
	server_pid=$!
	for ((i = 0; i < 300; i++)); do
		if [[ $(cat "$out") =~ serving\ Kafka\ clients\"\ listener=PLAINTEXT\ addr=([0-9.:]+) ]]; then
			addr=${BASH_REMATCH[1]}
			return 0
		fi
		if ! kill -0 "$server_pid" 2>/dev/null; then
			log "server exited:"; cat "$out" >&2; exit 1
		fi
		sleep 0.05
	done
	log "server did not start in 15 s:"; cat "$out" >&2
	exit 1
}
fresh_server() { stop_server; rm -rf "$work/data"; start_server "$@"; }
rss_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$server_pid/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
bg() { "$work/samsa" bench-groups --bootstrap "$addr" --tsv "$@"; }

echo "### Offset commits ($COMMIT_SECONDS s per case, 10 partitions per commit, one group per committer)"
echo
echo "| commit | committers | commits/s | partition offsets/s | p50 ms | p99 ms | errors |"
echo "|---|---:|---:|---:|---:|---:|---:|"
fresh_server
log "commit throughput on $addr"
while IFS=$'\t' read -r mode clients parts commits errors _ persec p50 p99; do
	log "$mode x$clients: $commits commits, $persec/s, p50 $p50 ms, p99 $p99 ms, $errors errors"
	case $mode in
	simple) what="simple (generation -1)" ;;
	member) what="group member (CommitOffsetsSync)" ;;
	esac
	echo "| $what | $clients | $(printf '%.0f' "$persec") | $(awk -v r="$persec" -v p="$parts" 'BEGIN { printf "%.0f", r * p }') | $p50 | $p99 | $errors |"
done < <(bg commit --clients 1,8 --duration "${COMMIT_SECONDS}s")
echo

echo "### Settling after one of 10 members leaves (20 partitions, median of $RUNS runs)"
echo
echo "| protocol | heartbeat interval | leave | settle median ms | min ms | max ms | every run ms | join median ms |"
echo "|---|---|---|---:|---:|---:|---|---:|"
row() { # protocol heartbeat leave < tsv
	local proto members parts med lo hi join runs
	while IFS=$'\t' read -r proto members parts med lo hi join runs; do
		log "$proto ($2, $3): settle median $med ms ($runs), join $join ms"
		echo "| $1 | $2 | $3 | $med | $lo | $hi | $runs | $join |"
	done
}
log "settling with default heartbeats, leave at a random moment"
bg rebalance --runs "$RUNS" --protocols range --leave-jitter 3s |
	row "classic, eager \`range\`" "3 s (client default)" "random within 3 s"
bg rebalance --runs "$RUNS" --protocols cooperative-sticky --leave-jitter 3s |
	row "classic, \`cooperative-sticky\`" "3 s (client default)" "random within 3 s"
bg rebalance --runs "$RUNS" --protocols consumer --leave-jitter 5s |
	row "KIP-848 \`consumer\` (uniform)" "5 s (broker default)" "random within 5 s"
log "settling with 100 ms heartbeats, leave at once"
fresh_server group.consumer.heartbeat.interval.ms=100
bg rebalance --runs "$RUNS" --protocols range --heartbeat 100ms |
	row "classic, eager \`range\`" "100 ms" "at once"
bg rebalance --runs "$RUNS" --protocols cooperative-sticky --heartbeat 100ms |
	row "classic, \`cooperative-sticky\`" "100 ms" "at once"
bg rebalance --runs "$RUNS" --protocols consumer |
	row "KIP-848 \`consumer\` (uniform)" "100 ms (broker)" "at once"
echo

log "memory: $NGROUPS groups x 10 partitions"
fresh_server
sleep 3
idle=$(rss_kib VmRSS)
IFS=$'\t' read -r _ _ csecs cps cerr _ <<<"$(bg offsets --groups "$NGROUPS" --partitions 10)"
sleep 3
loaded=$(rss_kib VmRSS)
loaded_hwm=$(rss_kib VmHWM)
olog=$(du -sk "$work/data" | cut -f1)
stop_server
t0=$(date +%s%3N)
start_server
IFS=$'\t' read -r _ _ _ _ kerrs _ loaded_at ok <<<"$(bg offsets --groups "$NGROUPS" --partitions 10 --check)"
load_ms=$((loaded_at - t0))
sleep 3
restarted=$(rss_kib VmRSS)
restarted_hwm=$(rss_kib VmHWM)
stop_server
log "idle $(mib "$idle") MiB, loaded $(mib "$loaded") MiB (peak $(mib "$loaded_hwm")), restarted $(mib "$restarted") MiB; load $load_ms ms; $ok groups ok"
if [[ $cerr != 0 || $kerrs != 0 || $ok != "$NGROUPS" ]]; then
	log "commit errors $cerr, check errors $kerrs, groups ok $ok of $NGROUPS"
	exit 1
fi
per_group() { awk -v a="$1" -v b="$idle" -v g="$NGROUPS" 'BEGIN { printf "%.1f", (a - b) * 1024 / g / 1024 }'; }
echo "### $NGROUPS groups with committed offsets for 10 partitions each"
echo
echo "| measurement | value |"
echo "|---|---:|"
echo "| fresh idle server, VmRSS | $(mib "$idle") MiB |"
echo "| committing: $NGROUPS simple commits of 10 partitions, 32 in flight | $csecs s ($(printf '%.0f' "$cps") groups/s) |"
echo "| after committing, VmRSS (3 s later) | $(mib "$loaded") MiB |"
echo "| after committing, peak VmHWM | $(mib "$loaded_hwm") MiB |"
echo "| added per group (VmRSS) | $(per_group "$loaded") KiB |"
echo "| data directory on disk | $(mib "$olog") MiB |"
echo "| restart: process start until the last group's offsets are fetched | $load_ms ms |"
echo "| after restart (all $NGROUPS groups fetched and checked), VmRSS | $(mib "$restarted") MiB |"
echo "| after restart, peak VmHWM | $(mib "$restarted_hwm") MiB |"
echo "| added per group after restart (VmRSS) | $(per_group "$restarted") KiB |"
