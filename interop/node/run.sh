#!/usr/bin/env bash
# Confluent's JavaScript Schema Registry client (@confluentinc/schemaregistry
# from npm) against the registry `samsa server` runs. Needs SAMSA_BIN,
# INTEROP_RESULTS (see ../lib.sh) and NODE_MODULES_DIR (where the packages of
# package.json are installed; interop/run installs them).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"

C="node @confluentinc/schemaregistry $(node -p 'require(process.argv[1]).version' "$NODE_MODULES_DIR/@confluentinc/schemaregistry/package.json")"
work=$(mktemp -d)
trap 'stop_samsa; rm -rf "$work"' EXIT
start_samsa "$work/data" PLAINTEXT "schema.registry.listeners=http://127.0.0.1:0" ||
	{ record "$C" "start samsa" fail "server did not start"; exit 1; }
url=""
for _ in $(seq 1 300); do
	url=$(sed -n 's/.*msg="schema registry listening" listener=\([^ ]*\).*/\1/p' "$work/data.log" | head -1)
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { record "$C" "schema registry" fail "no registry in the server log"; exit 1; }

NODE_PATH="$NODE_MODULES_DIR" timeout 120 node "$here/registry.cjs" "$url" "$SAMSA_ADDR" | while IFS=$'\t' read -r feature status note; do
	record "$C" "$feature" "$status" "$note"
done
