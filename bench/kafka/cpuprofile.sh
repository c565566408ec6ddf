#!/usr/bin/env bash
# bench/kafka/cpuprofile.sh: where a produce run's CPU goes, broker against
# client. Starts `samsa server --cpuprofile` with run.sh's overrides on a
# fresh data directory, runs `samsa bench` (franz-go, acks=all, no
# compression, no consume) ROUNDS times against it, each on a new topic,
# and prints the CPU seconds of both processes and the broker's top
# functions. The profile stays in $OUT for `go tool pprof`.
#
#   bench/kafka/cpuprofile.sh                          # 1 KiB, 6 partitions, 4 x 200000 records
#   SIZE=100 RECORDS=1000000 bench/kafka/cpuprofile.sh
set -euo pipefail

SIZE=${SIZE:-1024}
RECORDS=${RECORDS:-200000}
PARTITIONS=${PARTITIONS:-6}
ACKS=${ACKS:-all}
ROUNDS=${ROUNDS:-4}
work=$(mktemp -d)
OUT=${OUT:-$work/broker.prof}
cd "$(dirname "$0")/../.."
go build -o "$work/samsa" ./cmd/samsa

"$work/samsa" server --cpuprofile "$OUT" --override "log.dirs=$work/data" \
	--override "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0" \
	--override "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT" \
	--override group.initial.rebalance.delay.ms=0 2>"$work/server.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
addr=
for _ in $(seq 300); do
	addr=$(grep -oE 'serving Kafka clients" listener=PLAINTEXT addr=[0-9.:]+' "$work/server.log" | sed 's/.*addr=//' || true)
	[[ -n $addr ]] && break
	sleep 0.2
done
[[ -n $addr ]] || { echo "server did not start" >&2; exit 1; }

cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
read -r bu0 bs0 < <(cpu_ticks "$pid")
client=0
for ((r = 1; r <= ROUNDS; r++)); do
	/usr/bin/time -f '%U %S' -o "$work/time" "$work/samsa" bench --bootstrap "$addr" --partitions "$PARTITIONS" \
		--records "$RECORDS" --size "$SIZE" --acks "$ACKS" --compression none --no-consume
	client=$(awk -v c="$client" '{ print c + $1 + $2 }' "$work/time")
done
read -r bu1 bs1 < <(cpu_ticks "$pid")
hz=$(getconf CLK_TCK)
kill -TERM "$pid"
wait "$pid" || true
trap - EXIT
mb=$(awk -v n="$RECORDS" -v s="$SIZE" -v r="$ROUNDS" 'BEGIN { print n * s * r / 1e6 }')
awk -v bu=$((bu1 - bu0)) -v bs=$((bs1 - bs0)) -v hz="$hz" -v c="$client" -v mb="$mb" 'BEGIN {
	printf "MB produced: %.0f\nbroker CPU s: user %.2f sys %.2f (%.2f ms/MB)\nclient CPU s: %.2f (%.2f ms/MB)\n",
		mb, bu / hz, bs / hz, 1000 * (bu + bs) / hz / mb, c, 1000 * c / mb }'
go tool pprof -top -nodecount=25 "$work/samsa" "$OUT" 2>/dev/null | sed -n '4,35p'
echo "profile: $OUT (binary $work/samsa)"
