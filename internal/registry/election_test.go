package registry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/servertest"
)

// startElected serves a registry that takes part in the leader election.
func startElected(t *testing.T, broker string) (*Registry, *sr.Client, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	reg := New(Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(broker)}, URL: url, Logger: servertest.Logger()})
	srv := &http.Server{Handler: reg.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); reg.Close() })
	// kill stops the instance as a crash would: no LeaveGroup, so the
	// group replaces it only after its session times out.
	kill := func() {
		srv.Close()
		reg.openMu.Lock()
		if reg.elect != nil {
			reg.elect.noLeave = true
		}
		reg.openMu.Unlock()
		reg.Close()
	}
	// The first write waits for the election (the group's initial
	// rebalance delay, 3 s by default): more than sr's 5 s default
	// timeout allows on a loaded machine.
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: 60 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return reg, cl, kill
}

func (r *Registry) leads() bool {
	r.openMu.Lock()
	e := r.elect
	r.openMu.Unlock()
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isLeader
}

// TestLeaderElection runs two registries on one topic: concurrent
// registrations through both get distinct ids (the follower forwards to
// the leader), and when the leader is killed the other takes over writes
// once the group's session timeout (10 s) has passed.
func TestLeaderElection(t *testing.T) {
	s := servertest.Start(t)
	broker := servertest.Addr(s)
	regs := make([]*Registry, 2)
	cls := make([]*sr.Client, 2)
	kills := make([]func(), 2)
	for i := range regs {
		regs[i], cls[i], kills[i] = startElected(t, broker)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	ids := map[int]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				schema := fmt.Sprintf(`{"type":"record","name":"R%d_%d","fields":[{"name":"a","type":"string"}]}`, g, i)
				// CreateSchema reads back what it registered from the
				// same instance: a follower answers after it replayed
				// the leader's write.
				ss, err := cls[g%2].CreateSchema(ctx, fmt.Sprintf("s%d-%d", g, i), sr.Schema{Schema: schema})
				if err != nil {
					errs <- fmt.Errorf("instance %d: %w", g%2, err)
					return
				}
				id := ss.ID
				mu.Lock()
				if prev, dup := ids[id]; dup {
					errs <- fmt.Errorf("id %d issued for %s and %s", id, prev, schema)
				}
				ids[id] = schema
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(ids) != 20 {
		t.Fatalf("%d ids for 20 schemas", len(ids))
	}
	for id, schema := range ids {
		got, err := cls[1].SchemaByID(ctx, id)
		if err != nil || got.Schema != schema {
			t.Fatalf("id %d on instance 1: %q, %v; want %q", id, got.Schema, err, schema)
		}
	}
	leader, other := 0, 1
	if !regs[0].leads() {
		leader, other = 1, 0
	}
	if !regs[leader].leads() || regs[other].leads() {
		t.Fatalf("leaders: %v %v, want exactly one", regs[0].leads(), regs[1].leads())
	}
	kills[leader]()
	id, err := cls[other].RegisterSchema(ctx, "after-failover", sr.Schema{Schema: `"string"`}, -1, -1)
	if err != nil {
		t.Fatalf("registration after the leader was killed: %v", err)
	}
	if _, dup := ids[id]; dup || !regs[other].leads() {
		t.Fatalf("after failover: id %d reused %v, leads %v", id, dup, regs[other].leads())
	}
}
