package connect

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// leaderWait is how long a request that needs the leader waits for the
// group to have one before it is answered 409.
const leaderWait = 30 * time.Second

// leaderOnly wraps a request only the group leader serves (it writes the
// config log): a follower forwards it to the leader's advertised URL and
// copies the answer, as Kafka's workers do.
func (w *Worker) leaderOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		if w.group == nil {
			next(rw, r)
			return
		}
		leaderURL, leader := w.group.leaderURL()
		// Before the first join (and while the group has no leader) the
		// request waits, as Kafka's herder queues it until it joined.
		deadline := time.Now().Add(leaderWait)
		for leaderURL == "" && time.Now().Before(deadline) && r.Context().Err() == nil {
			time.Sleep(20 * time.Millisecond)
			leaderURL, leader = w.group.leaderURL()
		}
		if leader {
			next(rw, r)
			return
		}
		w.forwardTo(rw, r, leaderURL)
	}
}

// forwardTo sends r to another worker. As Kafka's HerderRequestHandler, a
// request from a user (no forward parameter) may be forwarded twice: the
// first hop adds forward=true, the second forward=false, and a worker
// that gets forward=false and cannot serve the request answers 409.
func (w *Worker) forwardTo(rw http.ResponseWriter, r *http.Request, target string) {
	fwd := r.URL.Query().Get("forward")
	if fwd == "false" {
		writeError(rw, errorf(http.StatusConflict, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"))
		return
	}
	if target == "" {
		writeError(rw, errorf(http.StatusConflict, "Cannot complete request momentarily due to no known leader URL, likely because a rebalance was underway."))
		return
	}
	q := r.URL.Query()
	q.Set("forward", strconv.FormatBool(fwd == ""))
	u := strings.TrimSuffix(target, "/") + r.URL.EscapedPath() + "?" + q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u, r.Body)
	if err != nil {
		writeError(rw, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := w.forwarder.Do(req)
	if err != nil {
		writeError(rw, errorf(http.StatusInternalServerError, "IO Error trying to forward REST request: %v", err))
		return
	}
	defer resp.Body.Close()
	for _, k := range []string{"Content-Type", "Location"} {
		if v := resp.Header.Get(k); v != "" {
			rw.Header().Set(k, v)
		}
	}
	rw.WriteHeader(resp.StatusCode)
	io.Copy(rw, resp.Body)
}
