# Shared helpers for the bash interop suites (kcat, kafka-tools). Source it;
# it needs SAMSA_BIN and appends results to INTEROP_RESULTS as
# `client TAB feature TAB pass|fail|skip TAB note`, the format every suite writes.

: "${SAMSA_BIN:?set SAMSA_BIN to a built samsa binary}"
: "${INTEROP_RESULTS:?set INTEROP_RESULTS to the results file}"

SAMSA_PID=""
SAMSA_ADDR=""

# start_samsa DATA_DIR [SERVER_ARGS...]: starts a server on a kernel-chosen
# port and sets SAMSA_ADDR from its "serving Kafka clients" log line (log in
# DATA_DIR.log). SERVER_ARGS go to `samsa server` after the defaults, so an
# --override there wins.
start_samsa() {
	local dir=$1
	shift
	mkdir -p "$dir"
	"$SAMSA_BIN" server --override "log.dirs=$dir" \
		--override 'listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0' \
		"$@" >/dev/null 2>"$dir.log" &
	SAMSA_PID=$!
	local i
	for i in $(seq 1 300); do
		SAMSA_ADDR=$(sed -n 's/.*msg="serving Kafka clients" listener=PLAINTEXT addr=\([^ ]*\).*/\1/p' "$dir.log" | head -1)
		[ -n "$SAMSA_ADDR" ] && return 0
		kill -0 "$SAMSA_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "samsa did not start:" >&2
	cat "$dir.log" >&2
	return 1
}

# listener_addr DATA_DIR LISTENER: the address a server started by
# start_samsa serves LISTENER on.
listener_addr() {
	sed -n "s/.*msg=\"serving Kafka clients\" listener=$2 addr=\([^ ]*\).*/\1/p" "$1.log" | head -1
}

# stop_samsa: SIGTERM (clean shutdown), SIGKILL after 20 s. Returns the exit code.
stop_samsa() {
	[ -n "$SAMSA_PID" ] || return 0
	kill -TERM "$SAMSA_PID" 2>/dev/null
	local i
	for i in $(seq 1 200); do
		kill -0 "$SAMSA_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SAMSA_PID" 2>/dev/null
	local rc=0
	wait "$SAMSA_PID" 2>/dev/null || rc=$?
	SAMSA_PID=""
	return $rc
}

# record CLIENT FEATURE STATUS [NOTE]
record() {
	local note=${4:-}
	note=$(printf '%s' "$note" | tr '\t\n' '  ' | cut -c1-200)
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$note" >>"$INTEROP_RESULTS"
	printf '%-5s %s: %s %s\n' "$3" "$1" "$2" "$note" >&2
}

# expect_eq CLIENT FEATURE WANT GOT [ISSUE]: pass when equal, else fail with a diff note.
expect_eq() {
	if [ "$3" == "$4" ]; then
		record "$1" "$2" pass
	else
		local note
		note="want $(printf '%q' "$3") got $(printf '%q' "$4")"
		[ -n "${5:-}" ] && note="issue $5 ($note)"
		record "$1" "$2" fail "$note"
	fi
}
