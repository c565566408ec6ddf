#!/usr/bin/env bash
# kcat (librdkafka) against Samsa: metadata, produce with keys/headers and
# every codec, consume with format strings, offsets for times, and a
# balanced-consumer group. Needs SAMSA_BIN and INTEROP_RESULTS (see ../lib.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"

C="kcat $(kcat -V 2>&1 | sed -n 's/^Version \([^ ]*\).*/\1/p')"
work=$(mktemp -d)
trap 'stop_samsa; rm -rf "$work"' EXIT
start_samsa "$work/data" || { record "$C" "start samsa" fail "server did not start"; exit 1; }
B=$SAMSA_ADDR
# Consumes mostly stop at a count (-c) so that a broker that never reports
# end-of-partition costs one bounded check, not every check's timeout.
k() { timeout 30 kcat -b "$B" -X socket.timeout.ms=10000 "$@"; }

# Produce with keys and headers; consume with a format string.
printf 'k1:v1\nk2:v2\n:no-key\nk4:\n' | k -P -t keyed -p 0 -K: -H h1=a -H h2=b
got=$(k -C -t keyed -p 0 -o beginning -c 4 -q -f '%o|%k|%K|%s|%S|%h\n')
want=$'0|k1|2|v1|2|h1=a,h2=b\n1|k2|2|v2|2|h1=a,h2=b\n2||0|no-key|6|h1=a,h2=b\n3|k4|2||0|h1=a,h2=b'
# kcat -K: sends an empty (not null) key for ":no-key"; librdkafka maps "k4:" to an empty value.
expect_eq "$C" "produce keys+headers, consume -f format" "$want" "$got"

# -e: exit at end of partition, which librdkafka detects from an empty fetch
# answer at the high watermark (Samsa once sent a null record set there).
got=$(timeout 10 kcat -b "$B" -C -t keyed -p 0 -o beginning -e -q -f '%o ')
expect_eq "$C" "consume to end of partition (-e)" "0 1 2 3 " "$got"

# Metadata: kcat -L -J lists the broker and the topic's partitions.
got=$(k -L -J -t keyed | python3 -c '
import json, sys
m = json.load(sys.stdin)
b = m["brokers"][0]
t = m["topics"][0]
print(len(m["brokers"]), b["id"], b["name"], t["topic"], len(t["partitions"]), t["partitions"][0]["leader"])')
expect_eq "$C" "metadata (-L)" "1 1 $B keyed 1 1" "$got"

# Every codec: 100 lines in, the same 100 lines out at offsets 0..99.
for z in none gzip snappy lz4 zstd; do
	seq -f "line-%g-$z-padding-padding" 1 100 | k -P -t "codec-$z" -p 0 -X compression.codec=$z -X linger.ms=50
	got=$(k -C -t "codec-$z" -p 0 -o beginning -c 100 -q -f '%o %s\n')
	want=$(seq -f "line-%g-$z-padding-padding" 1 100 | awk '{print NR-1, $0}')
	expect_eq "$C" "produce+consume compression=$z" "$want" "$got"
done

# Consume from an offset and a count: -o 95 -c 3.
got=$(k -C -t codec-lz4 -p 0 -o 95 -c 3 -q -f '%o %s\n')
expect_eq "$C" "consume from offset (-o N -c N)" $'95 line-96-lz4-padding-padding\n96 line-97-lz4-padding-padding\n97 line-98-lz4-padding-padding' "$got"
got=$(k -C -t codec-lz4 -p 0 -o -2 -c 2 -q -f '%o\n' | tr '\n' ' ')
expect_eq "$C" "consume relative offset (-o -2)" "98 99 " "$got"

# Offsets for times: 3 records, a pause, then 2 more; the lookup at the
# pause's time lands on offset 3. -Q with -1 asks for the end offset.
printf 'a\nb\nc\n' | k -P -t times -p 0
sleep 1.2
ts=$(($(date +%s%3N) - 100))
sleep 0.3
printf 'd\ne\n' | k -P -t times -p 0
got=$(k -Q -t "times:0:$ts" | grep -o 'offset [0-9-]*')
expect_eq "$C" "offsets for times (-Q)" "offset 3" "$got"
got=$(k -Q -t "times:0:-1" | grep -o 'offset [0-9-]*')
expect_eq "$C" "end offset (-Q ts=-1)" "offset 5" "$got"
got=$(k -C -t times -p 0 -o beginning -c 5 -q -f '%T\n' | awk -v ts="$ts" '{print ($1 < ts ? "before" : "after")}' | tr '\n' ' ')
expect_eq "$C" "message timestamps (%T)" "before before before after after " "$got"

# Balanced consumer group: -G reads every partition, commits, and a second
# run of the same group finds nothing new.
printf 'g1\ng2\ng3\n' | k -P -t grouped
got=$(timeout 25 kcat -b "$B" -G kcat-group -X auto.offset.reset=earliest -c 3 -q -f '%s\n' grouped 2>"$work/g.err" | sort | tr '\n' ' ')
expect_eq "$C" "group consume (-G)" "g1 g2 g3 " "$got" 3
# kcat commits on close (enable.auto.commit); the same group resumes after g3.
printf 'g4\n' | k -P -t grouped
got=$(timeout 25 kcat -b "$B" -G kcat-group -X auto.offset.reset=earliest -c 1 -q -f '%s\n' grouped 2>>"$work/g.err")
expect_eq "$C" "group resumes from committed offset (-G)" "g4" "$got" 3
# The group has consumed and committed everything: samsa group describe
# reports no lag.
got=$("$SAMSA_BIN" group describe kcat-group --bootstrap "$B" 2>&1 | awk '$1 == "TOTAL-LAG" {print $2}')
expect_eq "$C" "samsa group describe shows zero lag after -G" "0" "$got" 3

# SASL: a second node whose SASL_PLAINTEXT listener takes SCRAM-SHA-512
# (its user written at bootstrap by --add-scram) and PLAIN.
stop_samsa
start_samsa "$work/sasl" PLAINTEXT \
	'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0' \
	'sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN' \
	'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_plain="plain-secret";' \
	'--add-scram=SCRAM-SHA-512=[name=kcat,password=kcat-secret]' ||
	{ record "$C" "SASL: start samsa" fail "server did not start"; exit 1; }
S=$(listener_addr "$work/sasl" SASL_PLAINTEXT)
# ks MECHANISM USER PASSWORD ARGS...: kcat authenticating on the SASL listener.
ks() {
	local m=$1 u=$2 p=$3
	shift 3
	timeout 30 kcat -b "$S" -X socket.timeout.ms=10000 -X security.protocol=sasl_plaintext \
		-X sasl.mechanisms="$m" -X sasl.username="$u" -X sasl.password="$p" "$@"
}
printf 's1\ns2\ns3\n' | ks SCRAM-SHA-512 kcat kcat-secret -P -t sasl -p 0
got=$(ks SCRAM-SHA-512 kcat kcat-secret -C -t sasl -p 0 -o beginning -c 3 -q -f '%o:%s ')
expect_eq "$C" "SASL_PLAINTEXT SCRAM-SHA-512 produce+consume" "0:s1 1:s2 2:s3 " "$got"
printf 'p1\n' | ks PLAIN plain plain-secret -P -t sasl -p 0
got=$(ks PLAIN plain plain-secret -C -t sasl -p 0 -o 3 -c 1 -q -f '%o:%s')
expect_eq "$C" "SASL_PLAINTEXT PLAIN produce+consume" "3:p1" "$got"
# A wrong password: librdkafka reports Kafka's authentication failure.
err=$(timeout 20 kcat -b "$S" -X security.protocol=sasl_plaintext -X sasl.mechanisms=SCRAM-SHA-512 \
	-X sasl.username=kcat -X sasl.password=wrong -L -m 5 2>&1 >/dev/null)
if grep -q 'invalid credentials with SASL mechanism SCRAM-SHA-512' <<<"$err"; then
	record "$C" "SASL wrong password refused" pass
else
	record "$C" "SASL wrong password refused" fail "$(head -c 150 <<<"$err")"
fi

# TLS: an SSL listener (PEM key store, PEM trust store, client
# certificates required), as kcat reaches it with -X security.protocol=ssl.
stop_samsa
if ! make_pki "$work/pki"; then
	record "$C" "TLS: make certificates with openssl" fail "$(tail -3 "$work/pki.log")"
	exit 0
fi
P=$work/pki
if ! start_samsa "$work/ssl-data" SSL "ssl.keystore.type=PEM" "ssl.keystore.location=$P/server.pem" \
	"ssl.truststore.type=PEM" "ssl.truststore.location=$P/ca.pem" "ssl.client.auth=required"; then
	record "$C" "TLS: start an SSL listener" fail "server did not start"
	exit 0
fi
S=$SAMSA_ADDR
ks() { timeout 30 kcat -b "$S" -X socket.timeout.ms=10000 -X security.protocol=ssl -X ssl.ca.location="$P/ca.pem" \
	-X ssl.certificate.location="$P/client.pem" -X ssl.key.location="$P/client.key" "$@"; }
printf 't1\nt2\nt3\n' | ks -P -t tls -p 0
got=$(ks -C -t tls -p 0 -o beginning -c 3 -q -f '%o:%s\n' | tr '\n' ' ')
expect_eq "$C" "TLS with client certificate: produce+consume (security.protocol=ssl)" "0:t1 1:t2 2:t3 " "$got"
got=$(ks -L -J -t tls | python3 -c 'import json,sys; m=json.load(sys.stdin); print(len(m["brokers"]), m["topics"][0]["topic"])')
expect_eq "$C" "TLS metadata (-L)" "1 tls" "$got"
# Without a client certificate the broker refuses the handshake.
if timeout 15 kcat -b "$S" -X security.protocol=ssl -X ssl.ca.location="$P/ca.pem" -X socket.timeout.ms=3000 \
	-X metadata.request.timeout.ms=3000 -m 5 -L >/dev/null 2>&1; then
	record "$C" "TLS without a client certificate is refused" fail "kcat -L succeeded"
else
	record "$C" "TLS without a client certificate is refused" pass
fi
# Plaintext to the SSL port gets nothing.
if timeout 15 kcat -b "$S" -X socket.timeout.ms=3000 -m 5 -L >/dev/null 2>&1; then
	record "$C" "plaintext to an SSL listener is refused" fail "kcat -L succeeded"
else
	record "$C" "plaintext to an SSL listener is refused" pass
fi

# SASL_SSL: SCRAM over TLS (a server certificate; clients authenticate with
# SASL), the usual production setup.
stop_samsa
if start_samsa "$work/sasl-ssl" PLAINTEXT \
	'listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0' \
	"listener.name.sasl_ssl.ssl.keystore.type=PEM" "listener.name.sasl_ssl.ssl.keystore.location=$P/server.pem" \
	'sasl.enabled.mechanisms=SCRAM-SHA-256' '--add-scram=SCRAM-SHA-256=[name=kcat,password=kcat-secret]'; then
	S=$(listener_addr "$work/sasl-ssl" SASL_SSL)
	kss() { timeout 30 kcat -b "$S" -X socket.timeout.ms=10000 -X security.protocol=sasl_ssl -X ssl.ca.location="$P/ca.pem" \
		-X sasl.mechanisms=SCRAM-SHA-256 -X sasl.username=kcat -X sasl.password="$1" "${@:2}"; }
	printf 'x1\nx2\n' | kss kcat-secret -P -t sasl-ssl -p 0
	got=$(kss kcat-secret -C -t sasl-ssl -p 0 -o beginning -c 2 -q -f '%o:%s ')
	expect_eq "$C" "SASL_SSL SCRAM-SHA-256 produce+consume" "0:x1 1:x2 " "$got"
	if kss wrong -L -m 5 >/dev/null 2>&1; then
		record "$C" "SASL_SSL wrong password refused" fail "kcat -L succeeded"
	else
		record "$C" "SASL_SSL wrong password refused" pass
	fi
else
	record "$C" "SASL_SSL: start samsa" fail "server did not start"
fi
