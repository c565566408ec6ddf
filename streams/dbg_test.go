package streams_test

import (
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dbgOpts turns on franz-go debug logs of the apps under test when
// SAMSA_STREAMS_DEBUG is set.
func dbgOpts() []kgo.Opt {
	if os.Getenv("SAMSA_STREAMS_DEBUG") == "" {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil))}
}
