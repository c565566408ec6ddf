package broker

// SaslAuthenticate, versions 0-2.
//
// Behavior:
//   - The network layer takes every SaslAuthenticate of an exchange
//     (internal/network/sasl.go). What arrives here comes on a listener
//     without SASL or after authentication, and is answered
//     ILLEGAL_SASL_STATE with Kafka's message.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleSASLAuthenticate(_ context.Context, _ *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.Version = req.Version
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp, nil
}
