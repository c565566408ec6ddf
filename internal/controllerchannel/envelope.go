package controllerchannel

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/kclient"
	"github.com/samsa-io/samsa/internal/wire"
)

// enveloped sends a client's request to a remote controller wrapped in an
// Envelope (KIP-590, Kafka's ForwardingManager.buildEnvelopeRequest) that
// names the client — its principal, and its client id in the embedded
// request's header — so the controller can count the request against the
// client's controller_mutation_rate. The answer is the embedded response.
// An Envelope-level refusal comes back as the API's failed answer, so a
// NOT_CONTROLLER is retried as any other.
func enveloped(ctx context.Context, conn *kclient.Conn, req kmsg.Request, r controller.Requester) (kmsg.Response, error) {
	key, v := req.Key(), req.GetVersion()
	if lo, hi, ok := conn.Versions(key); !ok || v < lo || v > hi {
		return nil, fmt.Errorf("%s does not serve %s v%d: %w", conn.Addr(), kmsg.NameForKey(key), v, kerr.UnsupportedVersion)
	}
	env := kmsg.NewPtrEnvelopeRequest()
	// The formatter writes the frame's size first; an Envelope embeds
	// the header and body only.
	env.RequestData = kmsg.NewRequestFormatter(kmsg.FormatterClientID(r.ClientID)).AppendRequest(nil, req, 0)[4:]
	p := kmsg.NewDefaultPrincipalData()
	p.Type, p.Name = r.Principal.Type, r.Principal.Name
	env.RequestPrincipal = p.AppendTo(nil)
	out, err := conn.RequestAsIs(ctx, env)
	if err != nil {
		return nil, err
	}
	er := out.(*kmsg.EnvelopeResponse)
	if er.ErrorCode != 0 {
		api, _ := controller.LookupAPI(kmsg.Key(key))
		return api.Failed(req, kerr.ErrorForCode(er.ErrorCode)), nil
	}
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if _, err := wire.ReadResponse(er.ResponseData, resp); err != nil {
		return nil, fmt.Errorf("envelope from %s: %w", conn.Addr(), err)
	}
	return resp, nil
}
