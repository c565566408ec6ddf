package network

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/security"
	"github.com/samsa-io/samsa/internal/wire"
)

// AuthenticateConn runs the server side of a SASL exchange (SaslHandshake
// then the mechanism's tokens, exactly as on a SASL listener) on nc, a
// connection that carries another protocol once authenticated: the raft
// transport on a SASL controller listener. It returns the principal, or
// an error after which nc must be closed (a failed login is answered,
// logged and held for the failed-authentication delay first). The
// exchange reads nc frame by frame and never past its last request, so
// the caller goes on reading nc where it stops. The session lifetime
// (connections.max.reauth.ms) does not apply to such a connection.
func AuthenticateConn(ctx context.Context, nc net.Conn, listener string, cfg *SASLConfig, logger *slog.Logger) (security.Principal, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := &Server{cfg: Config{Listener: listener, SASL: cfg, Logger: logger, Handler: noRequests{},
		Versions: wire.NewVersionTable(
			wire.VersionRange{Key: kmsg.SASLHandshake, Min: 0, Max: 1},
			wire.VersionRange{Key: kmsg.SASLAuthenticate, Min: 0, Max: 2})}}
	c := &Conn{srv: srv, nc: nc, raw: nc, out: make(chan outFrame, 4), principal: security.Anonymous}
	written := make(chan error, 1)
	go func() {
		var err error
		for f := range c.out {
			if err == nil {
				err = f.writeTo(nc)
			} else {
				f.discard()
			}
		}
		written <- err
	}()
	err := c.authenticate(ctx, nil)
	close(c.out)
	if werr := <-written; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return security.Principal{}, err
	}
	return c.principal, nil
}

// noRequests refuses every request but the SASL exchange's own: the
// connection's protocol after authentication is not Kafka's.
type noRequests struct{}

func (noRequests) Handle(_ context.Context, _ *Conn, req wire.Request) (kmsg.Response, error) {
	return nil, fmt.Errorf("unexpected %s before authentication", kmsg.NameForKey(req.Header.APIKey))
}
