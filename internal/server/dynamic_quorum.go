package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/storage"
)

// A dynamic quorum (KIP-853) is one configured with
// controller.quorum.bootstrap.servers and no controller.quorum.voters.
// Its initial voters are chosen when the metadata log is new:
//
//   - --standalone: this controller alone;
//   - --initial-controllers id@host:port:directory-id,...: those;
//   - --no-initial-controllers, or none of the three while the bootstrap
//     servers name other nodes: no voters at all. The node joins: it
//     never votes or leads (so it can never be a second cluster under
//     the same cluster id), learns the voters from the bootstrap servers
//     (DescribeQuorum) and waits until a voter change
//     (`kafka-metadata-quorum add-controller`) adds it;
//   - none of the three while every bootstrap server is this node's own
//     controller listener (Kafka's single-node server.properties): as
//     --standalone.
//
// Once the log exists it holds the voters, their directory ids and
// endpoints; the flags are ignored.

// dynamicQuorum reports whether the quorum is KIP-853's (kraft.version 1).
func (s *Server) dynamicQuorum() bool { return len(s.cfg.ControllerQuorumVoters) == 0 }

// initialVoters are the raft Config fields for a new metadata log of a
// dynamic quorum: the voter ids and what is known of them, or join.
func (s *Server) initialVoters() (peers []uint64, voters []raft.Voter, join bool) {
	q := s.cfg.Quorum
	switch {
	case len(q.InitialControllers) > 0:
		for _, c := range q.InitialControllers {
			peers = append(peers, uint64(c.ID))
			voters = append(voters, raft.Voter{ID: uint64(c.ID), DirectoryID: c.DirectoryID,
				Endpoints: []raft.Endpoint{{Name: s.cfg.ControllerListenerNames[0], Host: c.Host, Port: uint16(c.Port)}}})
		}
		return peers, voters, false
	case q.Standalone || (!q.NoInitialControllers && bootstrapsItself(s.cfg)):
		self := raft.Voter{ID: uint64(s.cfg.NodeID), DirectoryID: s.metadataDirID, Endpoints: []raft.Endpoint{s.ownControllerEndpoint()}}
		return []uint64{self.ID}, []raft.Voter{self}, false
	}
	return nil, nil, true
}

// ownControllerEndpoint is this node's controller listener as other
// voters reach it: advertised if advertised, else bound (the real port
// when configured as 0; localhost for an empty host, as Kafka's tools).
func (s *Server) ownControllerEndpoint() raft.Endpoint {
	name := s.cfg.ControllerListenerNames[0]
	e := raft.Endpoint{Name: name, Host: "localhost"}
	for _, l := range append(slices.Clone(s.cfg.Listeners), s.cfg.AdvertisedListeners...) {
		if l.Name != name {
			continue
		}
		if l.Host != "" {
			e.Host = l.Host
		}
		e.Port = uint16(l.Port)
	}
	if e.Port == 0 && s.ctrlLn != nil {
		if a, ok := s.ctrlLn.ln.Addr().(*net.TCPAddr); ok {
			e.Port = uint16(a.Port)
		}
	}
	return e
}

// onVoters points the raft transport at the current voters and learners
// (raft.Config.OnVoters). A voter recorded without endpoints (a static
// voter) keeps the address controller.quorum.voters gave it.
func (s *Server) onVoters(vs map[uint64]raft.Voter) {
	t := s.transport
	if t == nil {
		return
	}
	name := s.cfg.ControllerListenerNames[0]
	for id, v := range vs {
		i := slices.IndexFunc(v.Endpoints, func(e raft.Endpoint) bool { return e.Name == name })
		if i < 0 && len(v.Endpoints) > 0 {
			i = 0
		}
		if i >= 0 {
			t.SetPeer(id, v.Endpoints[i].Addr())
		}
	}
	for id := range t.Peers() {
		if _, ok := vs[id]; !ok {
			t.RemovePeer(id)
		}
	}
}

// discoverVoters runs on a joining controller until raft knows its
// voters: it asks the bootstrap servers for the quorum (DescribeQuorum
// v2 lists the voters' endpoints, from any voter) and points the
// transport at them, so the leader's messages can be answered once the
// leader adds this node.
func (s *Server) discoverVoters(ctx context.Context) {
	defer close(s.joinDone)
	s.logger.Warn("no initial voter set in the metadata log: joining the quorum through controller.quorum.bootstrap.servers; this controller will not vote or lead until it is added (kafka-metadata-quorum add-controller)",
		"bootstrap.servers", s.cfg.ControllerQuorumBootstrapServers, "node.id", s.cfg.NodeID, "directory.id", storage.UUIDString(s.metadataDirID))
	backoff := 100 * time.Millisecond
	for {
		if voters, _, err := s.raft.Voters(ctx); err == nil && len(voters) > 0 {
			return
		}
		for _, addr := range s.cfg.ControllerQuorumBootstrapServers {
			nodes, err := s.describeQuorumNodes(ctx, addr)
			if err != nil {
				s.logger.Debug("controller.quorum.bootstrap.servers: no quorum yet", "addr", addr, "err", err)
				continue
			}
			for _, n := range nodes {
				for _, l := range n.Listeners {
					if l.Name == s.cfg.ControllerListenerNames[0] || len(n.Listeners) == 1 {
						s.transport.SetPeer(uint64(n.NodeID), net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// describeQuorumNodes asks the controller at addr for the voters.
func (s *Server) describeQuorumNodes(ctx context.Context, addr string) ([]kmsg.DescribeQuorumResponseNode, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := s.dial.controller.kclient().Dial(dctx, addr, fmt.Sprintf("samsa-join-%d", s.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = controller.MetadataTopic
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := conn.Request(dctx, req)
	if err != nil {
		return nil, err
	}
	nodes := resp.(*kmsg.DescribeQuorumResponse).Nodes
	if len(nodes) == 0 {
		return nil, errors.New("no voters in the answer")
	}
	return nodes, nil
}

// formatMetadataDir gives the metadata log directory the directory id
// --initial-controllers names for this node, before FormatDirs writes the
// rest: the voter set records it.
func (s *Server) formatMetadataDir() error {
	i := slices.IndexFunc(s.cfg.Quorum.InitialControllers, func(c config.InitialController) bool { return c.ID == s.cfg.NodeID })
	if i < 0 {
		return nil
	}
	dir := s.metadataDir()
	if _, err := storage.ReadMetaProperties(dir); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return storage.WriteMetaProperties(dir, storage.MetaProperties{Version: 1, ClusterID: s.clusterID, NodeID: s.cfg.NodeID,
		DirectoryID: s.cfg.Quorum.InitialControllers[i].DirectoryID})
}

// checkQuorumFormat checks the --standalone, --initial-controllers and
// --no-initial-controllers flags against the configuration, as Kafka's
// `kafka-storage format` does.
func checkQuorumFormat(cfg *config.Config) error {
	q := cfg.Quorum
	n := 0
	for _, set := range []bool{q.Standalone, len(q.InitialControllers) > 0, q.NoInitialControllers} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil
	case n > 1:
		return errors.New("--standalone, --initial-controllers and --no-initial-controllers exclude each other: choose one")
	case len(cfg.ControllerQuorumVoters) > 0:
		return errors.New("--standalone, --initial-controllers and --no-initial-controllers are for a dynamic quorum (controller.quorum.bootstrap.servers); this node has a static one (controller.quorum.voters)")
	case !cfg.HasRole("controller"):
		return errors.New("--standalone, --initial-controllers and --no-initial-controllers format a controller: process.roles must contain controller")
	case len(q.InitialControllers) > 0 && !slices.ContainsFunc(q.InitialControllers, func(c config.InitialController) bool { return c.ID == cfg.NodeID }):
		return fmt.Errorf("--initial-controllers does not name this node (node.id %d): a controller that is not an initial voter joins with --no-initial-controllers", cfg.NodeID)
	}
	return nil
}

// closeRaft stops discoverVoters, then the raft node.
func (s *Server) closeRaft() error {
	if s.stopJoin != nil {
		s.stopJoin()
		<-s.joinDone
	}
	return s.raft.Close()
}

// hasMetadataLog reports whether dir holds a metadata log (a checkpoint:
// even a new log's voters are one).
func hasMetadataLog(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*.checkpoint"))
	return len(m) > 0
}

// discoverObserverVoters asks the bootstrap servers for the voters of a
// dynamic quorum, on a broker-only node, until one answers or ctx ends.
// The observer then fetches from the leader among them. Controllers
// added later are not learned until the broker restarts.
func (s *Server) discoverObserverVoters(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		for _, addr := range s.cfg.ControllerQuorumBootstrapServers {
			nodes, err := s.describeQuorumNodes(ctx, addr)
			if err != nil {
				s.logger.Debug("controller.quorum.bootstrap.servers: no quorum yet", "addr", addr, "err", err)
				continue
			}
			s.discovered = map[int32]string{}
			for _, n := range nodes {
				for _, l := range n.Listeners {
					if l.Name == s.cfg.ControllerListenerNames[0] || len(n.Listeners) == 1 {
						s.discovered[n.NodeID] = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
					}
				}
			}
			s.logger.Info("found the controller quorum", "bootstrap.server", addr, "voters", s.discovered)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no controller quorum answered at controller.quorum.bootstrap.servers=%s: %w", strings.Join(s.cfg.ControllerQuorumBootstrapServers, ","), context.Cause(ctx))
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
