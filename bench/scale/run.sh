#!/usr/bin/env bash
# Scale benchmark (issue 15): one Samsa node with many partitions. Builds
# samsa and bench/scale, runs it, and prints a markdown table on stdout.
#
#   bench/scale/run.sh                       # 10,000 topics × 10 partitions (long form, ~10 min)
#   TOPICS=300 bench/scale/run.sh            # short form: 3,000 partitions
#   ARGS="-active 500 -records 50" bench/scale/run.sh
#
# The node runs under this shell's open-file limit (ulimit -n); its file
# cache takes half of it unless samsa.log.max.open.files is set
# (ARGS="-overrides samsa.log.max.open.files=5000").
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/samsa" ./cmd/samsa
go build -o "$work/scale" ./bench/scale
echo "open-file limit: $(ulimit -n); $(nproc) CPUs; $(uname -sr)" >&2
# shellcheck disable=SC2086
"$work/scale" -samsa "$work/samsa" -dir "$work/data" -topics "${TOPICS:-10000}" -partitions "${PARTITIONS:-10}" ${ARGS:-}
