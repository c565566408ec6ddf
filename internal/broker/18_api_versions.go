package broker

// ApiVersions, versions 0-4.
//
// Behavior:
//   - Answers from the broker's handler table, so every advertised key has a
//     handler and every handler is advertised.
//   - A version we do not serve is answered at version 0 with
//     UNSUPPORTED_VERSION and the table, so the client can retry lower
//     (KIP-511). wire writes the header without tagged fields.
//   - No feature levels are advertised: clients switch on transactions v2
//     and KIP-848 groups from them, and neither exists yet.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAPIVersions(_ context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := apiVersionsResponse(b)
	resp.Version = req.Version
	return resp, nil
}

func unsupportedAPIVersions(b *Broker) kmsg.Response {
	resp := apiVersionsResponse(b)
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp
}

func apiVersionsResponse(b *Broker) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, r := range b.versions.All() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey = int16(r.Key)
		k.MinVersion = r.Min
		k.MaxVersion = r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
