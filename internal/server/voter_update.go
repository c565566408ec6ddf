package server

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/raft"
)

// A voter keeps its entry in the voter set in step with its own
// controller listeners, as Kafka's KafkaRaftClient does (KIP-853): when
// the endpoints the quorum records for it differ from those it listens on
// (it was added with others, or moved), it sends UpdateRaftVoter (82) to
// the leader, or, leading, makes the change itself. A voter the quorum
// records without endpoints (a static voter at kraft.version 0) is left
// alone, and so is a node whose listener has no host to advertise.

// voterUpdatePeriod is how often a voter compares: Kafka's follower does
// so every three controller.quorum.fetch.timeout.ms (2s by default).
const voterUpdatePeriod = 6 * time.Second

// startVoterUpdates starts the comparison loop; stopVoterUpdates ends it.
func (s *Server) startVoterUpdates(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stopUpdates = func() { cancel(); <-done }
	go func() {
		defer close(done)
		// The first comparison comes soon after start: a voter that
		// moved is reachable again sooner.
		wait := time.Second
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = voterUpdatePeriod
			if err := s.updateOwnVoter(ctx); err != nil && ctx.Err() == nil {
				s.logger.Debug("UpdateRaftVoter for this controller", "err", err)
			}
		}
	}()
	return nil
}

func (s *Server) stopVoterUpdates() {
	if s.stopUpdates != nil {
		s.stopUpdates()
	}
}

// updateOwnVoter sends one UpdateRaftVoter when this node's entry in the
// voter set needs it.
func (s *Server) updateOwnVoter(ctx context.Context) error {
	own := s.ownControllerEndpoints()
	if own == nil {
		return nil
	}
	voters, _, err := s.raft.Voters(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(voters, func(v raft.Voter) bool { return v.ID == uint64(s.cfg.NodeID) })
	if i < 0 || len(voters[i].Endpoints) == 0 || sameEndpoints(voters[i].Endpoints, own) {
		return nil
	}
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	req.ClusterID = &s.clusterID
	req.CurrentLeaderEpoch = int32(s.raft.Term())
	req.VoterID, req.VoterDirectoryID = s.cfg.NodeID, s.metadataDirID
	req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = 0, 1
	for _, e := range own {
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
		req.Listeners = append(req.Listeners, l)
	}
	s.logger.Info("this controller's endpoints differ from the voter set's: updating them", "recorded", voters[i].Endpoints, "listening", own)
	leader := int32(s.raft.Leader())
	var resp *kmsg.UpdateRaftVoterResponse
	switch addr, known := s.transport.Peers()[uint64(leader)]; {
	case leader == 0:
		return fmt.Errorf("no leader")
	case leader == s.cfg.NodeID:
		resp = s.ctrl.UpdateRaftVoter(ctx, req)
	case !known:
		return fmt.Errorf("leader %d has no known address", leader)
	default:
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := s.dial.controller.kclient().Dial(rctx, addr, fmt.Sprintf("samsa-controller-%d", s.cfg.NodeID))
		if err != nil {
			return err
		}
		defer conn.Close()
		r, err := conn.Request(rctx, req)
		if err != nil {
			return err
		}
		resp = r.(*kmsg.UpdateRaftVoterResponse)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// ownControllerEndpoints are this node's controller listeners as voters
// record them, nil when one has no host to advertise (a wildcard or empty
// host: the recorded endpoint is then the better one).
func (s *Server) ownControllerEndpoints() []raft.Endpoint {
	var out []raft.Endpoint
	for i, name := range s.cfg.ControllerListenerNames {
		e := raft.Endpoint{Name: name}
		for _, l := range append(slices.Clone(s.cfg.Listeners), s.cfg.AdvertisedListeners...) {
			if l.Name == name {
				e.Host, e.Port = l.Host, uint16(l.Port)
			}
		}
		if i == 0 && e.Port == 0 {
			e.Port = s.ownControllerEndpoint().Port // bound as port 0
		}
		switch e.Host {
		case "", "0.0.0.0", "::":
			return nil
		}
		if e.Port == 0 {
			continue // not a listener of this node
		}
		out = append(out, e)
	}
	return out
}

// sameEndpoints compares two endpoint lists in any order.
func sameEndpoints(a, b []raft.Endpoint) bool {
	by := func(x, y raft.Endpoint) int {
		return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.Host, y.Host), cmp.Compare(x.Port, y.Port))
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, by)
	slices.SortFunc(b, by)
	return slices.Equal(a, b)
}
