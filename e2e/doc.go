// Package e2e holds Samsa's end-to-end client compatibility tests. It has no
// code of its own beyond this comment: everything is in _test.go files.
//
// Each test starts a broker with startBroker (broker_test.go), which returns
// only a bootstrap address, and then talks to it over TCP with a real Kafka
// client, one file per client:
//
//   - franz_test.go: franz-go (kgo, kadm)
//   - sarama_test.go: IBM/sarama
//   - kafkago_test.go: segmentio/kafka-go
//   - confluent_test.go: confluent-kafka-go (librdkafka, cgo)
//   - kcat_test.go: kcat (skipped when absent unless SAMSA_REQUIRE_KCAT=1)
//
// and by topic:
//
//   - groups_test.go: classic consumer groups with franz-go, sarama and
//     librdkafka (sharing, failover, cooperative and static members,
//     offsets across restarts, bad requests)
//   - consumer_protocol_test.go: KIP-848 groups with franz-go
//   - lifecycle_test.go: retention changed at runtime, compaction
//   - idempotence_test.go: idempotent producers across clean and crash
//     restarts (duplicates answered with the original offset)
//   - robust_test.go: garbage frames, size limits, pipelining, bad produce
//     and fetch input over raw TCP
//   - sasl_test.go, sasl_clients_test.go: SASL_PLAINTEXT with PLAIN and
//     SCRAM-SHA-256/512 through franz-go, sarama (both handshake versions),
//     kafka-go and librdkafka; SCRAM users created and deleted with kadm;
//     refusals, KIP-368 re-authentication and a 100 MB token
//   - acl_test.go: ACLs with StandardAuthorizer through kadm and franz-go:
//     create, describe and delete, topic, group and transactional id
//     rights, DENY, prefixes, a restart (PLAINTEXT clients told apart by
//     source address), and SASL PLAIN users
//   - kafka44_versions_test.go: the newest versions of Kafka 4.4's APIs,
//     each sent at that version with kmsg, and what the version adds
//
// Every client round-trips 200 generated records per compression codec
// (none, gzip, snappy, lz4, zstd) on a fresh 3-partition topic and the
// shared checker (helpers_test.go) verifies what a user would: the exact
// record count and end offsets, contiguous offsets from 0 per partition in
// produce order, the partition and offset each produce result reported, and
// equal keys (including null keys), values, headers and timestamps.
// TestChecker proves the checker catches each kind of corruption.
//
// startBroker runs a fresh in-process Samsa server per test.
//
// Known client quirks the checks allow for: librdkafka sends a zero-length
// value as null, and values are compared by content; kadm caches metadata,
// so after deleting and recreating a topic a fresh admin client is used.
//
// Every test bounds itself with testContext: client calls get a 45 s
// context or equivalent timeouts, and a watchdog aborts the binary with all
// goroutine stacks at 75 s if a client ignores them.
package e2e
