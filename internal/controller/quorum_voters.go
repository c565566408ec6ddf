package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/raft"
	"github.com/samsa-io/samsa/internal/wire"
)

// AddRaftVoter (key 80) and RemoveRaftVoter (key 81): KIP-853's voter
// changes (UpdateRaftVoter, key 82, below), which `kafka-metadata-quorum add-controller` and
// `remove-controller` send. Versions: AddRaftVoter 0-1, RemoveRaftVoter 0.
//
// Behavior:
//   - Only the raft leader changes voters; another controller answers
//     NOT_CONTROLLER, so forwarding (and the admin client) retries on the
//     leader.
//   - A static quorum (controller.quorum.voters, kraft.version 0) answers
//     UNSUPPORTED_VERSION, as Kafka does until kraft.version is upgraded
//     to 1 (UpdateFeatures; upgradeKRaftVersion).
//   - A cluster id other than ours is INCONSISTENT_CLUSTER_ID; a voter
//     without the controller listener is INVALID_REQUEST.
//   - AddRaftVoter adds the controller as a raft learner (Kafka's observer),
//     waits until its log holds every committed entry, then makes it a
//     voter: one change at a time, each committed before the next starts.
//     An existing voter is DUPLICATE_VOTER. When the new controller does
//     not catch up within TimeoutMillis (it is not running, say), the
//     learner is removed again and the answer is REQUEST_TIMED_OUT.
//   - RemoveRaftVoter of an unknown id, or of a known id with another
//     directory id, is VOTER_NOT_FOUND; the last voter cannot be removed
//     (INVALID_REQUEST). A leader that removes itself steps down once the
//     change commits.
//   - AckWhenCommitted=false (v1) is answered like true: Samsa answers
//     once the change is committed.

// AddRaftVoter adds a voter to the metadata quorum.
func (c *Controller) AddRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) *kmsg.AddRaftVoterResponse {
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	err := c.checkVoterChange(req.ClusterID)
	if err == nil {
		err = c.addVoter(ctx, req)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = voterChangeError(err)
	}
	return resp
}

func (c *Controller) addVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) error {
	if req.VoterID < 0 {
		return fmt.Errorf("%w: voter id %d", kerr.InvalidRequest, req.VoterID)
	}
	v := raft.Voter{ID: uint64(req.VoterID), DirectoryID: req.VoterDirectoryID}
	for _, l := range req.Listeners {
		v.Endpoints = append(v.Endpoints, raft.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	if c.cfg.ControllerListener != "" && !slices.ContainsFunc(v.Endpoints, func(e raft.Endpoint) bool { return e.Name == c.cfg.ControllerListener }) {
		return fmt.Errorf("%w: the new voter's listeners do not include the controller listener %s", kerr.InvalidRequest, c.cfg.ControllerListener)
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.cfg.Logger.Info("adding a voter to the metadata quorum", "node.id", req.VoterID, "directory.id", uuidString(req.VoterDirectoryID))
	return c.cfg.Raft.AddVoter(ctx, v)
}

// RemoveRaftVoter removes a voter from the metadata quorum.
func (c *Controller) RemoveRaftVoter(ctx context.Context, req *kmsg.RemoveRaftVoterRequest) *kmsg.RemoveRaftVoterResponse {
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	err := c.checkVoterChange(req.ClusterID)
	if err == nil && req.VoterID < 0 {
		err = fmt.Errorf("%w: voter id %d", kerr.InvalidRequest, req.VoterID)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		c.cfg.Logger.Info("removing a voter from the metadata quorum", "node.id", req.VoterID, "directory.id", uuidString(req.VoterDirectoryID))
		err = c.cfg.Raft.RemoveVoter(ctx, uint64(req.VoterID), req.VoterDirectoryID)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = voterChangeError(err)
	}
	return resp
}

// UpdateRaftVoter (key 82, v0, controller listener only) is how a voter
// announces new endpoints (Kafka's controllers send it when theirs differ
// from the voter set's). Behavior, as Kafka's UpdateVoterHandler: a static
// quorum is UNSUPPORTED_VERSION; a voter without the controller listener,
// or whose supported kraft.version range excludes 1, INVALID_REQUEST; an
// unknown voter (or another directory id) VOTER_NOT_FOUND; the endpoints
// replace the old ones through the log. CurrentLeader names this node
// when it leads.
func (c *Controller) UpdateRaftVoter(ctx context.Context, req *kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = -1, int32(c.cfg.Raft.Term())
	if id := c.cfg.Raft.Leader(); id != 0 {
		resp.CurrentLeader.LeaderID = int32(id)
	}
	err := c.checkVoterChange(req.ClusterID)
	v := raft.Voter{ID: uint64(req.VoterID), DirectoryID: req.VoterDirectoryID}
	for _, l := range req.Listeners {
		v.Endpoints = append(v.Endpoints, raft.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
	}
	switch {
	case err != nil:
	case req.VoterID < 0:
		err = fmt.Errorf("%w: voter id %d", kerr.InvalidRequest, req.VoterID)
	case req.KRaftVersionFeature.MinSupportedVersion > 1 || req.KRaftVersionFeature.MaxSupportedVersion < 1:
		err = fmt.Errorf("%w: the voter supports kraft.version %d-%d, the quorum runs 1", kerr.InvalidRequest,
			req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion)
	case c.cfg.ControllerListener != "" && !slices.ContainsFunc(v.Endpoints, func(e raft.Endpoint) bool { return e.Name == c.cfg.ControllerListener }):
		err = fmt.Errorf("%w: the voter's listeners do not include the controller listener %s", kerr.InvalidRequest, c.cfg.ControllerListener)
	default:
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = c.cfg.Raft.UpdateVoter(ctx, v)
	}
	if err != nil {
		resp.ErrorCode, _ = voterChangeError(err)
	}
	for _, n := range c.quorumNodes(ctx) {
		if n.NodeID != resp.CurrentLeader.LeaderID {
			continue
		}
		for _, l := range n.Listeners {
			if l.Name == c.cfg.ControllerListener || len(n.Listeners) == 1 {
				resp.CurrentLeader.Host, resp.CurrentLeader.Port = l.Host, int32(l.Port)
			}
		}
	}
	return resp
}

// upgradeKRaftVersion runs before recs are written: when they raise
// kraft.version from 0 to 1 (`kafka-features upgrade --feature
// kraft.version=1` on a static quorum), it first records every static
// voter's controller endpoint in the quorum (raft.UpdateVoter, one change
// at a time), so that a controller added later, which has no
// controller.quorum.voters, learns where they are. The directory ids of
// static voters stay unknown (zero), which RemoveRaftVoter accepts.
func (c *Controller) upgradeKRaftVersion(ctx context.Context, img *metadata.Image, recs []metadata.Record) error {
	up := false
	for _, r := range recs {
		if f, ok := r.(*metadata.FeatureLevelRecord); ok && f.Name == metadata.KRaftVersionFeature && f.FeatureLevel >= 1 {
			up = img.Features()[metadata.KRaftVersionFeature] < 1 && !c.cfg.DynamicQuorum
		}
	}
	if !up {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, id := range slices.Sorted(maps.Keys(c.cfg.Voters)) {
		e := c.cfg.Voters[id]
		v := raft.Voter{ID: uint64(id), Endpoints: []raft.Endpoint{{Name: e.Name, Host: e.Host, Port: e.Port}}}
		if err := c.cfg.Raft.UpdateVoter(ctx, v); err != nil {
			return c.raftError(fmt.Errorf("record voter %d's endpoint for kraft.version 1: %w", id, err))
		}
	}
	c.cfg.Logger.Info("kraft.version upgraded to 1: the quorum's voters may now change", "voters", len(c.cfg.Voters))
	return nil
}

// dynamic reports whether the quorum may change its voters: formatted
// dynamic, or upgraded to kraft.version 1.
func (c *Controller) dynamic() bool {
	return c.cfg.DynamicQuorum || c.cfg.Loader.Image().Features()[metadata.KRaftVersionFeature] >= 1
}

// checkVoterChange refuses a voter change on a static quorum or from
// another cluster.
func (c *Controller) checkVoterChange(clusterID *string) error {
	if !c.dynamic() {
		return fmt.Errorf("%w: the quorum is static (controller.quorum.voters, kraft.version 0); upgrade it with kafka-features upgrade --feature kraft.version=1, or format a dynamic quorum with --standalone or --initial-controllers", kerr.UnsupportedVersion)
	}
	if id := c.cfg.Loader.Image().ClusterID; clusterID != nil && *clusterID != id {
		return fmt.Errorf("%w: cluster id %s, ours is %s", kerr.InconsistentClusterID, *clusterID, id)
	}
	return nil
}

// voterChangeError maps a voter change's failure to Kafka's code.
func voterChangeError(err error) (int16, *string) {
	var code int16
	switch {
	case errors.Is(err, raft.ErrDuplicateVoter):
		code = kerr.DuplicateVoter.Code
	case errors.Is(err, raft.ErrVoterNotFound):
		code = kerr.VoterNotFound.Code
	case errors.Is(err, raft.ErrLastVoter):
		code = kerr.InvalidRequest.Code
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrStopped):
		code = notController
	case errors.Is(err, raft.ErrChangePending), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = kerr.RequestTimedOut.Code
	case errors.Is(err, raft.ErrStorage):
		code = kerr.KafkaStorageError.Code
	default:
		var ke *kerr.Error
		if errors.As(err, &ke) {
			code = ke.Code
		} else {
			code = kerr.UnknownServerError.Code
		}
	}
	msg := err.Error()
	return code, &msg
}

// uuidString is Kafka's base64url form of a directory id.
func uuidString(id [16]byte) string { return metadata.Uuid(id).String() }

// quorumVoterAPIs are quorum_voters.go's rows of the API table.
func quorumVoterAPIs() []API {
	return []API{
		api(kmsg.AddRaftVoter, 0, 1, (*Controller).AddRaftVoter,
			func(req *kmsg.AddRaftVoterRequest, err error) *kmsg.AddRaftVoterResponse {
				r := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
				r.ErrorCode, r.ErrorMessage = wire.ErrorCodeAndMessage(err)
				return r
			},
			func(r *kmsg.AddRaftVoterResponse) bool { return r.ErrorCode == notController }),
		api(kmsg.RemoveRaftVoter, 0, 0, (*Controller).RemoveRaftVoter,
			func(req *kmsg.RemoveRaftVoterRequest, err error) *kmsg.RemoveRaftVoterResponse {
				r := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
				r.ErrorCode, r.ErrorMessage = wire.ErrorCodeAndMessage(err)
				return r
			},
			func(r *kmsg.RemoveRaftVoterResponse) bool { return r.ErrorCode == notController }),
		// Voters send it to the leader's controller listener; brokers
		// do not serve or forward it.
		api(kmsg.UpdateRaftVoter, 0, 0, (*Controller).UpdateRaftVoter, nil,
			func(r *kmsg.UpdateRaftVoterResponse) bool { return r.ErrorCode == notController }),
	}
}
