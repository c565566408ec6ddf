package e2e

import (
	"testing"

	"github.com/samsa-io/samsa/internal/servertest"
)

// startBroker starts a fresh single-node Samsa server in-process for one
// test and returns its bootstrap address ("host:port"). Tests reach the
// broker only through this address over TCP. extra are key=value
// overrides of the server's configuration.
func startBroker(t *testing.T, extra ...string) string {
	t.Helper()
	return servertest.Addr(servertest.Start(t, extra...))
}
