package server

import (
	"fmt"
	"net"
	"slices"
	"strconv"
)

// checkPortsFree binds and at once closes every listener this node will
// bind, before anything is written: a port already taken (another node,
// or Kafka, still running) must stop start-up before the data
// directories are formatted, not after, leaving a formatted but unused
// directory with a cluster id nobody meant. A port taken between this
// check and the real bind still fails start-up there.
func (s *Server) checkPortsFree() error {
	cfg := s.cfg
	// The controller listener is bound when a listener is needed
	// (quorum's rule): several voters, a controller-only node, or a
	// dynamic quorum.
	ctrl := cfg.HasRole("controller") &&
		(len(cfg.ControllerQuorumVoters) > 1 || !cfg.HasRole("broker") || s.dynamicQuorum())
	for _, l := range cfg.Listeners {
		isCtrl := slices.Contains(cfg.ControllerListenerNames, l.Name)
		if l.Port == 0 || isCtrl && !ctrl || !isCtrl && !cfg.HasRole("broker") {
			continue
		}
		addr := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s (%s): %w (is another node still running? nothing was written to the data directories)", l.Name, addr, err)
		}
		ln.Close()
	}
	return nil
}
