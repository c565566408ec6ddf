// Package wire is the Kafka protocol's framing and request/response headers,
// the table of API versions Samsa serves, and the glue to franz-go's kmsg
// codecs. It holds no broker logic.
//
// A frame on the wire is a 4-byte big-endian size followed by that many
// bytes. A request frame begins with a header:
//
//	api_key int16 | api_version int16 | correlation_id int32 | client_id nullable string
//	[tagged fields]   (header v2, when the request version is flexible)
//
// A response frame begins with the correlation id, followed by tagged fields
// when the response is flexible — except ApiVersions, whose response header
// never carries tagged fields so that a client can parse it before it knows
// which versions the broker speaks.
package wire
