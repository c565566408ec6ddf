// Package metadata holds the records of Samsa's metadata log (Kafka's
// __cluster_metadata), the immutable Image they build, the Delta between two
// images, and the Loader that replays committed log entries into images and
// publishes them.
//
// # Contract
//
// State changes only by replaying records (Loader.Apply); the same path
// serves the active controller, recovery after restart and (later) brokers
// following the log. An Image is never modified after it is published:
// replay copies the maps and the TopicImage of whatever a batch changes and
// shares the rest, so readers hold an Image without locks.
//
// # Record encoding (version 1)
//
// A raft entry carries one batch, applied atomically (all records or none):
//
//	batch  = format u8 (=1) | count uvarint | record*
//	record = type u8 | version u8 | length uvarint | JSON body (length bytes)
//
// type is Kafka's metadata record api key (RegisterBrokerRecord 0,
// UnregisterBrokerRecord 1, TopicRecord 2, PartitionRecord 3,
// ConfigRecord 4, PartitionChangeRecord 5, AccessControlEntryRecord 6,
// RemoveAccessControlEntryRecord 7, RemoveTopicRecord 9,
// DelegationTokenRecord 10, UserScramCredentialRecord 11,
// FeatureLevelRecord 12, ClientQuotaRecord 14, ProducerIdsRecord 15,
// BrokerRegistrationChangeRecord 17, RemoveUserScramCredentialRecord 22,
// RemoveDelegationTokenRecord 26); version
// is the version of our JSON body, 0 for all today. JSON keeps the format
// readable while it settles; the framing lets a binary body replace it per
// record type without touching the log already written. Uuids encode as
// Kafka prints them (base64url, no padding).
//
// A snapshot (Loader.Snapshot) is
//
//	format u8 (=1) | offset uvarint | batch
//
// where offset is the Image's last applied index and batch recreates the
// Image from an empty one.
package metadata
