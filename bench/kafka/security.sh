#!/usr/bin/env bash
# bench/kafka/security.sh: what TLS and SCRAM logins cost, Samsa side by
# side with Apache Kafka 4.x on the same machine in one run (the brokers,
# jars and cases of run.sh, from lib.sh). Prints markdown for
# docs/benchmarks.md on stdout and progress on stderr.
#
#   bench/kafka/security.sh > results.md        # defaults below, about 10 min on 2 cores
#   RUNS=1 RECORDS_1K=30000 WARMUP_RECORDS=50000 SCRAM_SECONDS=5 bench/kafka/security.sh   # smoke test, 2.5 min
#   KAFKA_SSL_CIPHER_SUITES=TLS_AES_128_GCM_SHA256 bench/kafka/security.sh   # the same cipher on both
#
# Needs what run.sh needs, and openssl.
#
# Both brokers get the same listeners and settings: PLAINTEXT, SSL,
# SASL_PLAINTEXT and SASL_SSL on loopback; one server certificate (RSA
# 2048, or P-256 with TLS_KEY=ec) signed by a CA made here with openssl,
# read by both as a PEM key store file (ssl.keystore.type=PEM); no client
# certificates; Kafka's TLS defaults otherwise (but Go and Java servers
# pick different TLS 1.3 suites: see KAFKA_SSL_CIPHER_SUITES);
# SCRAM-SHA-512 on both SASL listeners, with one user written when the
# metadata log is created (`kafka-storage format --add-scram` for Kafka,
# the same argument to `samsa server --add-scram`) with SCRAM_ITERATIONS
# iterations (4096, Kafka's default). Clients trust the CA through
# ssl.truststore.type=PEM in a client properties file, which Kafka's perf
# tools and `samsa bench` read alike (--command-config).
#
# One session is one fresh broker process on a fresh data directory: it
# checks that the listeners really demand TLS and SCRAM, warms up over
# PLAINTEXT and SSL (WARMUP_RECORDS each), then runs each size x
# partitions x acks x client case of run.sh once over PLAINTEXT and once
# over SSL (odd runs plaintext first, even runs TLS first), reading the
# broker's CPU time around each; then bench/kafka/scramrate against each
# of SCRAM_LISTENERS. Sessions alternate Samsa and Kafka RUNS times each;
# the tables show medians.
set -euo pipefail

RUNS=${RUNS:-3}
SIZES=${SIZES:-1024}
PARTITION_CASES=${PARTITION_CASES:-"1 6"}
ACKS_CASES=${ACKS_CASES:-all}
CLIENTS=${CLIENTS:-"java franz"}
SCRAM_LISTENERS=${SCRAM_LISTENERS:-"SASL_PLAINTEXT SASL_SSL"}
SCRAM_CONNECTIONS=${SCRAM_CONNECTIONS:-8}
SCRAM_SECONDS=${SCRAM_SECONDS:-10}    # measured, after a 3 s warm-up
SCRAM_ITERATIONS=${SCRAM_ITERATIONS:-4096}
TLS_KEY=${TLS_KEY:-rsa}               # server key: rsa (2048 bits) or ec (P-256)
# ssl.cipher.suites for Kafka only; e.g. TLS_AES_128_GCM_SHA256 makes it
# negotiate what Samsa (Go) picks by itself. Empty: Kafka's default.
KAFKA_SSL_CIPHER_SUITES=${KAFKA_SSL_CIPHER_SUITES:-}
# RECORDS_1K, RECORDS_100B, WARMUP_RECORDS, KAFKA_VERSION, KAFKA_HEAP_OPTS,
# KAFKA_JVM_PERFORMANCE_OPTS, TOOL_HEAP_OPTS, KAFKA_JARS: see lib.sh.
# shellcheck source=bench/kafka/lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup
go build -o "$work/scramrate" ./bench/kafka/scramrate

# make_pki DIR: ca.pem, and server.pem (the chain and an unencrypted
# PKCS#8 key in one file: a PEM key store) for 127.0.0.1 and localhost, as
# interop/lib.sh makes them.
make_pki() {
	local d=$1 newkey=(-newkey rsa:2048)
	if [[ $TLS_KEY == ec ]]; then newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1); fi
	mkdir -p "$d"
	(
		set -e
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
			-subj "/CN=Samsa bench CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=keyCertSign"
		openssl req "${newkey[@]}" -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext
		openssl pkcs8 -topk8 -nocrypt -in server.key -out server.pk8
		cat server.crt ca.pem server.pk8 >server.pem
	) >"$d.log" 2>&1 || { log "openssl failed:"; cat "$d.log" >&2; return 1; }
}
pki=$work/pki
make_pki "$pki"

listeners=(PLAINTEXT SSL SASL_PLAINTEXT SASL_SSL)
jaas="org.apache.kafka.common.security.scram.ScramLoginModule required;"
common_props=(
	ssl.keystore.type=PEM
	"ssl.keystore.location=$pki/server.pem"
	sasl.enabled.mechanisms=SCRAM-SHA-512
	# Kafka wants a JAAS login module for each mechanism of each SASL
	# listener, even when the broker logs in nowhere with it.
	"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=$jaas"
	"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$jaas"
)
scram_user=bench scram_password=bench-secret
scram_creds=("SCRAM-SHA-512=[name=$scram_user,iterations=$SCRAM_ITERATIONS,password=$scram_password]")
cat >"$work/ssl.properties" <<EOF
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$pki/ca.pem
EOF

# use PROTOCOL: point the cases at the PLAINTEXT or the SSL listener.
use() {
	addr=${addrs[$1]}
	if [[ $1 == SSL ]]; then
		client_args=(--command-config "$work/ssl.properties")
		topic_suffix=-ssl
	else
		client_args=()
		topic_suffix=""
	fi
}

clk_tck=$(getconf CLK_TCK)
# cpu_ms: the broker's user + system CPU time so far, in ms (fields 14 and
# 15 of /proc/PID/stat, counted after the command name's parenthesis).
cpu_ms() {
	awk -v hz="$clk_tck" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz }' "/proc/$server_pid/stat"
}

results="$work/results.tsv" # impl/protocol run client size parts acks pMBs pRecs p50 p99 p999 cMBs cRecs
cpu="$work/cpu.tsv"         # impl/protocol run client size parts acks broker_CPU_ms_per_MB
scram="$work/scram.tsv"     # impl run listener logins errors seconds logins/s p50 p99 p999 client_us broker_us tls
checks="$work/checks.tsv"   # impl run check result
: >"$results"
: >"$cpu"
: >"$scram"
: >"$checks"

# check IMPL RUN NAME want_ok|want_fail CMD...: run CMD, record whether it
# did what NAME says.
check() {
	local impl=$1 run=$2 name=$3 want=$4 got=want_fail
	shift 4
	if "$@" >"$work/check.out" 2>&1; then got=want_ok; fi
	if [[ $got == "$want" ]]; then
		printf '%s\t%s\t%s\tpass\n' "$impl" "$run" "$name" >>"$checks"
	else
		printf '%s\t%s\t%s\tFAIL\n' "$impl" "$run" "$name" >>"$checks"
		log "$impl run $run: check failed: $name: $(tail -3 "$work/check.out")"
	fi
}

# security_checks IMPL RUN: each listener demands what its name says.
security_checks() {
	local impl=$1 run=$2 s="$work/samsa" line
	check "$impl" "$run" "TLS client on SSL: topic list works" want_ok \
		"$s" topic list --bootstrap "${addrs[SSL]}" --command-config "$work/ssl.properties"
	check "$impl" "$run" "plaintext client on SSL: refused" want_fail \
		"$s" topic list --bootstrap "${addrs[SSL]}" --timeout 5s
	check "$impl" "$run" "client without SASL on SASL_PLAINTEXT: refused" want_fail \
		"$s" topic list --bootstrap "${addrs[SASL_PLAINTEXT]}" --timeout 5s
	check "$impl" "$run" "SCRAM with the right password on SASL_PLAINTEXT: works" want_ok \
		"$s" topic list --bootstrap "${addrs[SASL_PLAINTEXT]}" --sasl-mechanism SCRAM-SHA-512 \
		--sasl-user "$scram_user" --sasl-password "$scram_password"
	check "$impl" "$run" "SCRAM with a wrong password on SASL_PLAINTEXT: refused" want_fail \
		"$work/scramrate" --bootstrap "${addrs[SASL_PLAINTEXT]}" --user "$scram_user" --password wrong \
		--connections 1 --warmup 0 --duration 1s
	# What a client offering TLS_AES_256_GCM_SHA384 first (as Java's and
	# OpenSSL's do) negotiates.
	line=$(openssl s_client -connect "${addrs[SSL]}" -CAfile "$pki/ca.pem" -brief </dev/null 2>&1 |
		awk -F': ' '/^Protocol version|^Ciphersuite|^Server Temp Key|^Negotiated TLS1.3 group/ { printf "%s/", $2 }')
	printf '%s\t%s\topenssl s_client on SSL negotiates\t%s\n' "$impl" "$run" "${line%/}" >>"$checks"
}

# scram_case IMPL RUN LISTENER: bench/kafka/scramrate against LISTENER.
scram_case() {
	local impl=$1 run=$2 l=$3 tlsflag=() line
	if [[ $l == SASL_SSL ]]; then tlsflag=(--tls-ca "$pki/ca.pem"); fi
	line=$("$work/scramrate" --bootstrap "${addrs[$l]}" "${tlsflag[@]}" --user "$scram_user" \
		--password "$scram_password" --connections "$SCRAM_CONNECTIONS" --duration "${SCRAM_SECONDS}s" --pid "$server_pid") ||
		log "$impl run $run scramrate $l: some logins failed (the \"failed\" column of every run)"
	printf '%s\t%s\t%s\t%s\n' "$impl" "$run" "$l" "$line" >>"$scram"
	local n errs rate p50 p99 ccpu scpu tls
	IFS=$'\t' read -r n errs _ rate p50 p99 _ ccpu scpu tls <<<"$line"
	log "$impl run $run scramrate $l: $n logins ($errs failed), $rate/s, p50 $p50 ms, p99 $p99 ms, CPU µs/login broker $scpu client $ccpu ($tls)"
}

session() {
	local impl=$1 run=$2 size parts acks client n proto order c0
	server_props=("${common_props[@]}")
	if [[ $impl == kafka && -n $KAFKA_SSL_CIPHER_SUITES ]]; then
		server_props+=("ssl.cipher.suites=$KAFKA_SSL_CIPHER_SUITES")
	fi
	start_server "$impl"
	security_checks "$impl" "$run"
	for proto in PLAINTEXT SSL; do
		use "$proto"
		warmup
	done
	if ((run % 2)); then order="PLAINTEXT SSL"; else order="SSL PLAINTEXT"; fi
	for size in $SIZES; do
		n=$(records_for "$size")
		for parts in $PARTITION_CASES; do
			for acks in $ACKS_CASES; do
				for client in $CLIENTS; do
					for proto in $order; do
						use "$proto"
						c0=$(cpu_ms)
						"${client}_case" "$impl/$proto" "$run" "$size" "$parts" "$acks" "$n"
						# Per MB produced and consumed (each record is sent once
						# and read once).
						printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl/$proto" "$run" "$client" "$size" "$parts" "$acks" \
							"$(awk -v a="$c0" -v b="$(cpu_ms)" -v m="$((2 * n * size))" 'BEGIN { printf "%.2f", (b - a) / (m / 1e6) }')" >>"$cpu"
					done
				done
			done
		done
	done
	for l in $SCRAM_LISTENERS; do
		scram_case "$impl" "$run" "$l"
	done
	stop_server
}

run_sessions

# tls_table FILE COLUMN: for each case, COLUMN's median per broker and
# protocol, and the ratios that show what TLS costs each broker.
tls_table() {
	local file=$1 c=$2 client size parts acks f sp st kp kt
	echo "| client | record B | partitions | acks | Samsa plaintext | Samsa TLS | TLS/plain | Kafka plaintext | Kafka TLS | TLS/plain | S/K over TLS |"
	echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
	for client in $CLIENTS; do
		for size in $SIZES; do
			for parts in $PARTITION_CASES; do
				for acks in $ACKS_CASES; do
					f="$client $size $parts $acks"
					sp=$(med "$file" samsa/PLAINTEXT "$c" "$f")
					st=$(med "$file" samsa/SSL "$c" "$f")
					kp=$(med "$file" kafka/PLAINTEXT "$c" "$f")
					kt=$(med "$file" kafka/SSL "$c" "$f")
					echo "| $client | $size | $parts | $acks | $sp | $st | $(ratio "$st" "$sp") | $kp | $kt | $(ratio "$kt" "$kp") | $(ratio "$st" "$kt") |"
				done
			done
		done
	done
}

# every_run FILE HEADER: the rows of FILE as a markdown table.
every_run() {
	echo "$1"
	local cols=${1//[^|]/}
	cols=${cols//|/|---}
	echo "${cols%---}"
	sed 's/\t/ | /g; s/^/| /; s/$/ |/' "$2"
}

echo "### TLS and SCRAM: Samsa vs Apache Kafka $KAFKA_VERSION (median of $RUNS runs each)"
echo
echo "Started $started (load average $load before the run), $elapsed s in all."
echo "Server key: $(openssl x509 -in "$pki/server.crt" -noout -text | sed -n 's/.*Public Key Algorithm: //p; s/.*Public-Key: (\(.*\))/\1/p' | paste -sd' '), in a PEM key store; no client certificates."
if [[ -n $KAFKA_SSL_CIPHER_SUITES ]]; then
	echo "Kafka only: ssl.cipher.suites=$KAFKA_SSL_CIPHER_SUITES."
fi
echo "$RECORDS_1K records per case at 1024 B, $RECORDS_100B at 100 B; compression none; MB = 10^6 bytes of record values."
echo "java = ProducerPerformance / ConsumerPerformance, franz = samsa bench (franz-go); each case once over PLAINTEXT and once over SSL."
echo
echo "#### Produce MB/s"
echo
tls_table "$results" 7
echo
echo "#### Consume MB/s"
echo
tls_table "$results" 12
echo
echo "#### Broker CPU ms per MB produced and consumed (lower is better)"
echo
tls_table "$cpu" 7
echo
echo "#### SCRAM-SHA-512 logins ($SCRAM_ITERATIONS iterations; $SCRAM_CONNECTIONS connections for $SCRAM_SECONDS s, each login a new connection)"
echo
echo "| listener | logins/s Samsa | Kafka | S/K | p50 ms Samsa | Kafka | p99 ms Samsa | Kafka | broker CPU µs/login Samsa | Kafka | client CPU µs/login Samsa | Kafka | TLS (scramrate) Samsa | Kafka |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
for l in $SCRAM_LISTENERS; do
	declare -A v=()
	for impl in samsa kafka; do
		for c in 7 8 9 11 12; do v[$impl$c]=$(med "$scram" "$impl" "$c" "$l"); done
		v[${impl}tls]=$(awk -F'\t' -v i="$impl" -v l="$l" '$1 == i && $3 == l { print $13; exit }' "$scram")
	done
	echo "| $l | ${v[samsa7]} | ${v[kafka7]} | $(ratio "${v[samsa7]}" "${v[kafka7]}") | ${v[samsa8]} | ${v[kafka8]} |" \
		"${v[samsa9]} | ${v[kafka9]} | ${v[samsa12]} | ${v[kafka12]} | ${v[samsa11]} | ${v[kafka11]} | ${v[samsatls]} | ${v[kafkatls]} |"
	unset v
done
echo
echo "#### Checks (every session)"
echo
echo "| check | Samsa | Kafka |"
echo "|---|---|---|"
cut -f3 "$checks" | awk '!seen[$0]++' | while IFS= read -r name; do
	row="| $name |"
	for impl in samsa kafka; do
		row+=" $(awk -F'\t' -v i="$impl" -v n="$name" '$1 == i && $3 == n { if (!($4 in s)) { s[$4]; o = o (o == "" ? "" : ", ") $4 } } END { print o }' "$checks") |"
	done
	echo "$row"
done
echo
echo "<details><summary>every run</summary>"
echo
every_run "| broker/protocol | run | client | record B | partitions | acks | produce MB/s | records/s | p50 ms | p99 ms | p99.9 ms | consume MB/s | records/s |" "$results"
echo
every_run "| broker/protocol | run | client | record B | partitions | acks | broker CPU ms/MB |" "$cpu"
echo
every_run "| broker | run | listener | logins | failed | seconds | logins/s | p50 ms | p99 ms | p99.9 ms | client CPU µs/login | broker CPU µs/login | TLS |" "$scram"
echo
echo "</details>"
