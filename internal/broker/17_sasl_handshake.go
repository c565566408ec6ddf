package broker

// SaslHandshake, versions 0-1.
//
// Behavior:
//   - On a SASL listener the network layer runs the exchange before any
//     request reaches the broker (internal/network/sasl.go), including a
//     KIP-368 re-authentication. What arrives here is a handshake it did
//     not take: on a listener without SASL, or after authentication when
//     re-authentication is off or began less than a second ago. It is
//     answered ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleSASLHandshake(_ context.Context, _ *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.Version = req.Version
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}
