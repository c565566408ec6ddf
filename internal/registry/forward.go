package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// forwardedHeader marks a write a follower forwarded, so that an instance
// that is not the leader either never forwards it again.
const forwardedHeader = "X-Samsa-Registry-Forwarded"

// leaderWait bounds how long a write waits for a leader to be elected:
// longer than the session timeout after which the group replaces a
// leader that died without leaving.
const leaderWait = 30 * time.Second

// forwardIfFollower returns nil when this instance may write (it is the
// leader, or runs without election). Otherwise it forwards the request to
// the leader and returns the leader's answer as an *Error whose forwarded
// body the handler writes as it came.
func (r *Registry) forwardIfFollower(req *http.Request) *Error {
	l, rerr := r.ready(req.Context())
	if rerr != nil {
		return rerr
	}
	r.openMu.Lock()
	e := r.elect
	r.openMu.Unlock()
	if e == nil {
		return nil
	}
	// The body is kept: a forward that finds no leader is tried again
	// once the election moves, and the leader's own handler reads it.
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, r.bodyLimit()))
	if err != nil {
		return errf(http.StatusUnprocessableEntity, 42209, "Register operation failed because schema is too large")
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	ctx, cancel := context.WithTimeout(req.Context(), leaderWait)
	defer cancel()
	for {
		leader, isLeader, changed, err := e.waitLeader(ctx)
		if err != nil {
			return errf(http.StatusInternalServerError, 50004, "Leader not known.")
		}
		if isLeader {
			return nil
		}
		if req.Header.Get(forwardedHeader) != "" {
			return errf(http.StatusInternalServerError, 50004, "Leader not known.")
		}
		answer, ferr := r.forward(ctx, req, body, leader)
		if ferr == nil {
			if answer.Status == http.StatusOK {
				// Read your writes: this instance answers once it has
				// replayed what the leader wrote, so a client's next
				// request here finds it.
				if err := l.catchUp(ctx); err != nil {
					return storeError(err)
				}
			}
			return answer
		}
		// The leader is gone or no longer leads: wait for the election.
		select {
		case <-changed:
		case <-ctx.Done():
			return errf(http.StatusInternalServerError, 50003, "Error while forwarding the request to the leader: %v", ferr)
		}
	}
}

// forward sends the request to the leader and returns its answer. An
// error means the leader could not answer: unreachable, or not the
// leader any more (50004).
func (r *Registry) forward(ctx context.Context, req *http.Request, body []byte, leader string) (*Error, error) {
	out, err := http.NewRequestWithContext(ctx, req.Method, leader+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Content-Type", "Accept", "Authorization"} {
		if v := req.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	out.Header.Set(forwardedHeader, "1")
	cl := r.cfg.ForwardClient
	if cl == nil {
		cl = http.DefaultClient
	}
	resp, err := cl.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusInternalServerError && bytes.Contains(answer, []byte(`"error_code":50004`)) {
		return nil, errors.New("the leader no longer leads")
	}
	return &Error{Status: resp.StatusCode, forwarded: answer}, nil
}
