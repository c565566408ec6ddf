package broker

// APIs Samsa does not serve.
//
// Behavior (Kafka's SocketServer and KafkaApis):
//   - A request a Kafka 4.4 broker listener accepts — an API in its scope,
//     at a version it serves — but Samsa does not serve (delegation
//     tokens, share and streams groups, telemetry, ...; or a served API
//     above the versions Samsa advertises) is answered, as Kafka answers
//     an API it knows but has not enabled (share or streams groups
//     switched off): an error
//     response in which every error code is UNSUPPORTED_VERSION
//     (wire.ErrorResponse). The connection stays open. Such APIs are never
//     advertised in ApiVersions.
//   - Anything else — an unknown key, an API of the controller listener
//     only (Vote, BrokerRegistration, ...), a version Kafka does not
//     serve — closes the connection, as Kafka's parseRequestHeader
//     throws for it; except ApiVersions, answered at v0 with
//     UNSUPPORTED_VERSION and the table (KIP-511).
//
// Kafka 4.4's broker listener is kversion.V4_4_0 (franz-go's record of
// each release's APIs); it does not keep minimum versions, which are
// kafkaMinVersions.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/wire"
)

// kafkaMinVersions are the minimum versions of Kafka 4.4's broker APIs
// above 0 that Samsa does not serve: KIP-896 dropped the first versions
// in 4.0, and the share group APIs were released at v1 (4.1).
var kafkaMinVersions = map[kmsg.Key]int16{
	kmsg.AlterReplicaLogDirs: 1,
	kmsg.ShareGroupHeartbeat: 1,
	kmsg.ShareGroupDescribe:  1,
	kmsg.ShareFetch:          1,
	kmsg.ShareAcknowledge:    1,
}

// refusedRanges are the versions Kafka 4.4's broker listener serves and
// served does not, other than ApiVersions' (see the Behavior above).
func refusedRanges(served map[kmsg.Key]handler) []wire.VersionRange {
	var out []wire.VersionRange
	kversion.V4_4_0().EachMaxKeyVersion(func(k, max int16) {
		key := kmsg.Key(k)
		if key == kmsg.ApiVersions {
			return
		}
		r := kmsg.RequestForKey(k)
		if r == nil {
			return // kmsg cannot decode it: it closes
		}
		max = min(max, r.MaxVersion()) // the versions above close
		lo := kafkaMinVersions[key]
		if h, ok := served[key]; ok {
			lo = h.max + 1
		}
		if lo <= max {
			out = append(out, wire.VersionRange{Key: key, Min: lo, Max: max})
		}
	})
	return out
}
