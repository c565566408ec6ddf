#!/usr/bin/env bash
# Differential test of Samsa's authorizer (internal/security) against
# Apache Kafka's own StandardAuthorizer: builds the Java harness with
# Maven (Kafka's jars come from Maven Central into ~/.m2), then runs
# interop/authorizer/difftest, which generates random ACL sets and
# questions, asks both, and appends one matrix row per kind of question
# (authorize, bytype, describe, validate, config) to INTEROP_RESULTS.
#
#   AUTHZ_SEED   random seed (default: a fresh one, printed; set it to replay)
#   AUTHZ_CASES  number of cases, i.e. ACL sets (default 5000)
#   KAFKA_VERSION  Kafka whose authorizer is the reference (default 4.4.0)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${INTEROP_RESULTS:?set INTEROP_RESULTS to the results file}"
version=${KAFKA_VERSION:-4.4.0}
client="kafka StandardAuthorizer $version"

if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" package dependency:build-classpath \
	-Dkafka.version="$version" -Dmdep.outputFile="$here/target/classpath.txt"; then
	printf '%s\t%s\tfail\t%s\n' "$client" "authorizer: harness" "mvn package failed; see authorizer.log" >>"$INTEROP_RESULTS"
	exit 1
fi

seed=${AUTHZ_SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}
cases=${AUTHZ_CASES:-5000}
echo "authorizer differential: seed $seed, $cases cases (replay: AUTHZ_SEED=$seed AUTHZ_CASES=$cases interop/run authorizer)"
cd "$root" && go run ./interop/authorizer/difftest -cp "$here/target/classes:$(cat "$here/target/classpath.txt")" \
	-seed "$seed" -cases "$cases" -results "$INTEROP_RESULTS" -client "$client"
