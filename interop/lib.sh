# Shared helpers for the bash interop suites (kcat, kafka-tools). Source it;
# it needs SAMSA_BIN and appends results to INTEROP_RESULTS as
# `client TAB feature TAB pass|fail|skip TAB note`, the format every suite writes.

: "${SAMSA_BIN:?set SAMSA_BIN to a built samsa binary}"
: "${INTEROP_RESULTS:?set INTEROP_RESULTS to the results file}"

SAMSA_PID=""
SAMSA_ADDR=""

# start_samsa DATA_DIR [LISTENER [OVERRIDE...]]: starts a server on a
# kernel-chosen port and sets SAMSA_ADDR from its "serving Kafka clients" log
# line (log in DATA_DIR.log). LISTENER (default PLAINTEXT, or SSL) names the
# client listener, which is then also the inter-broker listener; each
# OVERRIDE is a key=value passed as --override, or a --flag=value passed to
# `samsa server` as it is (--add-scram=...).
start_samsa() {
	local dir=$1 listener=${2:-PLAINTEXT}
	shift 2 2>/dev/null || shift $#
	mkdir -p "$dir"
	local args=(--override "log.dirs=$dir"
		--override "listeners=$listener://127.0.0.1:0,CONTROLLER://127.0.0.1:0")
	[ "$listener" = PLAINTEXT ] || args+=(--override "inter.broker.listener.name=$listener")
	local o
	for o in "$@"; do
		case $o in
		--*) args+=("$o") ;;
		*) args+=(--override "$o") ;;
		esac
	done
	"$SAMSA_BIN" server "${args[@]}" >/dev/null 2>"$dir.log" &
	SAMSA_PID=$!
	local i
	for i in $(seq 1 300); do
		SAMSA_ADDR=$(sed -n "s/.*msg=\"serving Kafka clients\" listener=$listener addr=\([^ ]*\).*/\1/p" "$dir.log" | head -1)
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

# make_pki DIR: a test CA and certificates made with openssl, for TLS
# suites: DIR/ca.pem; DIR/server.pem (chain and unencrypted PKCS#8 key in
# one file: a PEM key store) for localhost and 127.0.0.1; DIR/client.pem
# and DIR/client.key (CN=interop-client); DIR/server.p12 and
# DIR/client.p12 (PKCS12 key stores, password "interop"); and, when
# keytool exists, DIR/truststore.p12 (a Java PKCS12 trust store of the
# CA, password "interop"). Returns non-zero if openssl fails.
make_pki() {
	local d=$1
	mkdir -p "$d"
	(
		set -e
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
			-subj "/CN=Samsa interop CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=keyCertSign"
		for who in server client; do
			openssl req -newkey rsa:2048 -nodes -keyout "$who.key" -out "$who.csr" -subj "/O=Samsa/CN=interop-$who"
			printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$who.ext"
			openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$who.crt" -days 2 -extfile "$who.ext"
			openssl pkcs8 -topk8 -nocrypt -in "$who.key" -out "$who.pk8"
			openssl pkcs12 -export -in "$who.crt" -inkey "$who.key" -certfile ca.pem -name "$who" -out "$who.p12" -passout pass:interop
		done
		cat server.crt ca.pem server.pk8 >server.pem
		cat client.crt ca.pem >client.pem
		if command -v keytool >/dev/null; then
			keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 -storetype PKCS12 -storepass interop
		fi
	) >"$d.log" 2>&1
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
