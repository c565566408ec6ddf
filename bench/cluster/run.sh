#!/usr/bin/env bash
# bench/cluster/run.sh: a 3-node Samsa cluster on loopback (`samsa dev
# cluster`, three combined broker+controller processes): acks=all against
# acks=1 produce throughput and latency (replication factor 3,
# min.insync.replicas=2, 1 KiB random records), each node's peak RSS, and
# the failover time of acks=all produce when a partition leader is killed
# (SIGKILL) or stopped (SIGTERM, controlled shutdown). Needs Go, bash,
# pgrep and Linux /proc. Prints markdown for docs/benchmarks.md on stdout
# and progress on stderr.
#
#   bench/cluster/run.sh                         # RUNS=3 RECORDS=300000 PARTITIONS=6
#   RUNS=5 RECORDS=1000000 bench/cluster/run.sh
#   LIGHT_RECORDS=0 bench/cluster/run.sh        # skip the light-load runs
#   FAILOVER_CASES="kill term" bench/cluster/run.sh
#
# Every round starts fresh clusters in a temporary directory on free ports.
# The first runs `samsa bench` with acks=all and acks=1 (the order
# alternates between rounds): saturating (RECORDS, franz-go's linger and
# 10,000 buffered records, so latency is mostly queueing) and under light
# load (LIGHT_RECORDS with LIGHT_FLAGS: at most 16 records in flight, no
# linger, so latency is close to a round trip). Then it reads each node's
# VmHWM and serves the first failover case. Each further failover case gets a fresh cluster,
# since a killed node stays down and the session timeout is a static
# broker setting. Failover cases:
#
#   kill           SIGKILL a leader that is not the active controller
#   kill-fast      the same with broker.session.timeout.ms=3000 and
#                  broker.heartbeat.interval.ms=500
#   kill-ctl       SIGKILL a leader that is also the active controller
#   kill-ctl-fast  the same with the shorter session timeout
#   term           SIGTERM (controlled shutdown) of a leader that is not
#                  the active controller
set -euo pipefail

RUNS=${RUNS:-3}
RECORDS=${RECORDS:-300000}
SIZE=${SIZE:-1024}
PARTITIONS=${PARTITIONS:-6}
FAILOVER_CASES=${FAILOVER_CASES:-"kill kill-fast kill-ctl kill-ctl-fast term"}
LIGHT_RECORDS=${LIGHT_RECORDS:-20000}
LIGHT_FLAGS=${LIGHT_FLAGS:-"--linger 0 --max-buffered 16"}
BENCH_FLAGS=${BENCH_FLAGS:-}
WARMUP=${WARMUP:-1s} # acks=all produce before the signal, and after recovery
FAST_SESSION=(broker.session.timeout.ms=3000 broker.heartbeat.interval.ms=500)

cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/samsa-cluster-bench.XXXXXX")
dev_pid=""
cleanup() {
	stop_cluster
	rm -rf "$work"
}
trap cleanup EXIT

log() { echo "cluster/run.sh: $*" >&2; }

log "building into $work"
go build -o "$work/samsa" ./cmd/samsa
go build -o "$work/failover" ./bench/cluster/failover

# start_cluster NAME [key=value ...]: a fresh 3-node cluster in $work/NAME
# on free ports, min.insync.replicas=2 plus the given properties. Sets
# dev_pid, boot (bootstrap list), pids (id:pid,...) and node_pid[1..3].
start_cluster() {
	local dir="$work/$1" out="$work/$1.out" i args=()
	shift
	for kv in min.insync.replicas=2 "$@"; do args+=(--override "$kv"); done
	: >"$out"
	"$work/samsa" dev cluster --brokers 3 --dir "$dir" --port 0 "${args[@]}" >>"$out" 2>>"$work/dev.err" &
	dev_pid=$!
	for ((i = 0; i < 600; i++)); do
		if boot=$(sed -n 's/^bootstrap servers: //p' "$out") && [[ -n $boot ]]; then
			break
		fi
		if ! kill -0 "$dev_pid" 2>/dev/null; then
			log "dev cluster exited:"; cat "$work/dev.err" "$dir"/node-*.log >&2; return 1
		fi
		sleep 0.1
	done
	[[ -n $boot ]] || { log "cluster did not start in 60 s"; return 1; }
	pids=""
	for i in 1 2 3; do
		node_pid[i]=$(pgrep -f -- "--config $dir/node-$i.properties")
		pids+="${pids:+,}$i:${node_pid[i]}"
	done
}

stop_cluster() {
	if [[ -n $dev_pid ]]; then
		kill -TERM "$dev_pid" 2>/dev/null || true
		wait "$dev_pid" 2>/dev/null || true
		dev_pid=""
	fi
}

hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# median: the middle line of numbers on stdin.
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# failover CASE: runs one failover measurement on the running cluster and
# appends it to $failovers.
failover() {
	local ctl=avoid sig=KILL line
	case $1 in
	kill-ctl*) ctl=prefer ;;
	term) sig=TERM ;;
	esac
	line=$("$work/failover" --bootstrap "$boot" --pids "$pids" --signal "$sig" --controller "$ctl" \
		--warmup "$WARMUP" --after "$WARMUP" --tsv)
	IFS=$'\t' read -r _ node was_ctl new rec gap old before after errs p50 <<<"$line"
	log "failover $1 round $run: node $node (controller $was_ctl) -> $new: recovery $rec ms, max gap $gap ms, old leader acked until +$old ms, $errs errors"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$run" "$node" "$was_ctl" "$new" \
		"$rec" "$gap" "$old" "$before" "$after" "$errs" "$p50" >>"$failovers"
}

start_time=$(date -u '+%Y-%m-%d %H:%M')
loadavg=$(cut -d' ' -f1 /proc/loadavg)
produce="$work/produce.tsv"     # load acks run MB/s records/s p50 p99 p999
rss="$work/rss.tsv"             # run node peak_KiB was_controller
failovers="$work/failovers.tsv" # case run node was_ctl new recovery gap old before after errors p50
: >"$produce"
: >"$rss"
: >"$failovers"
for ((run = 1; run <= RUNS; run++)); do
	log "round $run: throughput cluster"
	start_cluster "bench-$run"
	order="all 1"
	((run % 2 == 0)) && order="1 all"
	for kind in heavy light; do
		n=$RECORDS flags=$BENCH_FLAGS
		if [[ $kind == light ]]; then
			((LIGHT_RECORDS > 0)) || continue
			n=$LIGHT_RECORDS flags="$LIGHT_FLAGS $BENCH_FLAGS"
		fi
		for acks in $order; do
			# shellcheck disable=SC2086
			line=$("$work/samsa" bench --bootstrap "$boot" --partitions "$PARTITIONS" --replication-factor 3 \
				--records "$n" --size "$SIZE" --acks "$acks" --compression none --no-consume --tsv $flags)
			IFS=$'\t' read -r produced errors pmbs rps p50 p99 p999 _ <<<"$line"
			if [[ $produced != "$n" || $errors != 0 ]]; then
				log "$kind acks=$acks round $run: produced $produced, errors $errors"
				exit 1
			fi
			log "$kind acks=$acks round $run: $pmbs MB/s, p50 $p50 ms, p99 $p99 ms"
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$acks" "$run" "$pmbs" "$rps" "$p50" "$p99" "$p999" >>"$produce"
		done
	done
	for i in 1 2 3; do
		printf '%s\t%s\t%s\n' "$run" "$i" "$(hwm_kib "${node_pid[i]}")" >>"$rss"
	done
	first=1
	for c in $FAILOVER_CASES; do
		if ((!first)); then
			stop_cluster
			case $c in
			*-fast) start_cluster "$c-$run" "${FAST_SESSION[@]}" ;;
			*) start_cluster "$c-$run" ;;
			esac
		elif [[ $c == *-fast ]]; then
			log "the first failover case runs on the throughput cluster: it cannot be $c"
			exit 1
		fi
		first=0
		failover "$c"
	done
	stop_cluster
done

pcol() { awk -F'\t' -v l="$1" -v a="$2" -v c="$3" '$1 == l && $2 == a { print $c }' "$produce" | median; }
fcol() { awk -F'\t' -v k="$1" -v c="$2" '$1 == k { print $c }' "$failovers" | median; }

echo "Run $start_time UTC, load average $loadavg at the start; $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p')), $(go version | cut -d' ' -f3)."
echo
echo "### acks=all vs acks=1 (median of $RUNS runs; 3 nodes, $PARTITIONS partitions, replication factor 3, min.insync.replicas=2, $SIZE B records, compression=none)"
echo
echo "| load | acks | records | produce MB/s | records/s | p50 ms | p99 ms | p99.9 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for kind in heavy light; do
	n=$RECORDS desc="saturating"
	if [[ $kind == light ]]; then
		((LIGHT_RECORDS > 0)) || continue
		n=$LIGHT_RECORDS desc="light ($LIGHT_FLAGS)"
	fi
	for a in all 1; do
		echo "| $desc | $a | $n | $(pcol $kind $a 4) | $(pcol $kind $a 5) | $(pcol $kind $a 6) | $(pcol $kind $a 7) | $(pcol $kind $a 8) |"
	done
done
echo
echo "### Peak RSS per node (VmHWM after the produce runs; median of $RUNS clusters)"
echo
echo "| node | peak RSS MiB | every run |"
echo "|---:|---:|---|"
for i in 1 2 3; do
	all=$(awk -F'\t' -v n="$i" '$2 == n { printf "%s%.1f", sep, $3 / 1024; sep = " / " }' "$rss")
	echo "| $i | $(mib "$(awk -F'\t' -v n="$i" '$2 == n { print $3 }' "$rss" | median)") | $all |"
done
echo
echo "### Failover of acks=all produce (median of $RUNS runs)"
echo
echo "| case | signal | leader was active controller | broker.session.timeout.ms | recovery ms | longest gap ms | every run (recovery ms) |"
echo "|---|---|---|---:|---:|---:|---|"
for c in $FAILOVER_CASES; do
	sig=SIGKILL ctl=no st=9000
	[[ $c == term ]] && sig="SIGTERM"
	[[ $c == kill-ctl* ]] && ctl=yes
	[[ $c == *-fast ]] && st=3000
	all=$(awk -F'\t' -v k="$c" '$1 == k { printf "%s%s", sep, $6; sep = " / " }' "$failovers")
	echo "| $c | $sig | $ctl | $st | $(fcol "$c" 6) | $(fcol "$c" 7) | $all |"
done
echo
echo "<details><summary>every run</summary>"
echo
echo "| load | acks | run | produce MB/s | records/s | p50 ms | p99 ms | p99.9 ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
while IFS=$'\t' read -r l a r m rps p50 p99 p999; do
	echo "| ${l/heavy/saturating} | $a | $r | $m | $rps | $p50 | $p99 | $p999 |"
done <"$produce"
echo
echo "| case | run | signalled node | was controller | new leader | recovery ms | longest gap ms | old leader acked until ms | acks before / after | errors | p50 before ms |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|"
while IFS=$'\t' read -r c r n wc nl rec gap old before after errs p50; do
	echo "| $c | $r | $n | $wc | $nl | $rec | $gap | $old | $before / $after | $errs | $p50 |"
done <"$failovers"
echo
echo "</details>"
