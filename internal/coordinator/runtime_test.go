package coordinator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memLog is a PartitionLog in memory. Replay waits for release when set;
// Append waits for appendGate when set and fails with failErr.
type memLog struct {
	mu         sync.Mutex
	recs       []KV
	release    chan struct{}
	replayErr  error
	appendGate chan struct{}
	failErr    error
}

func (l *memLog) Append(ctx context.Context, kvs []KV) error {
	if l.appendGate != nil {
		select {
		case <-l.appendGate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failErr != nil {
		return l.failErr
	}
	l.recs = append(l.recs, kvs...)
	return nil
}

func (l *memLog) AppendTransactional(ctx context.Context, pid int64, _ int16, kvs []KV) error {
	for i := range kvs {
		kvs[i].Transactional, kvs[i].ProducerID = true, pid
	}
	return l.Append(ctx, kvs)
}

func (l *memLog) Replay(fn func(KV) error) error {
	if l.release != nil {
		<-l.release
	}
	l.mu.Lock()
	recs := slices.Clone(l.recs)
	l.mu.Unlock()
	for _, kv := range recs {
		if err := fn(kv); err != nil {
			return err
		}
	}
	return l.replayErr
}

// listShard keeps the values it replayed, in order.
type listShard struct {
	mu       sync.Mutex
	values   []string
	loaded   bool
	unloaded bool
}

func (s *listShard) Lock()   { s.mu.Lock() }
func (s *listShard) Unlock() { s.mu.Unlock() }
func (s *listShard) ReplayLocked(kv KV) error {
	s.values = append(s.values, string(kv.Value))
	return nil
}
func (s *listShard) OnLoadedLocked()   { s.loaded = true }
func (s *listShard) OnUnloadedLocked() { s.unloaded = true }

func newListRuntime() *Runtime[*listShard] {
	return NewRuntime(Config{Topic: "__test", NumPartitions: 1}, func(*Partition[*listShard]) *listShard { return &listShard{} })
}

// appendValue writes one record through p and replays it in apply, as the
// coordinators do, returning the append's outcome.
func appendValue(ctx context.Context, p *Partition[*listShard], v string) (ran bool, err error) {
	ran = p.Write(ctx, func() ([]KV, func(error)) {
		kv := KV{Key: []byte("k"), Value: []byte(v)}
		return []KV{kv}, func(e error) {
			err = e
			if e == nil {
				_ = p.Shard.ReplayLocked(kv)
			}
		}
	})
	return ran, err
}

func TestRuntimeLookupFollowsLoad(t *testing.T) {
	r := newListRuntime()
	defer r.Close()
	if _, code := r.Lookup("g"); code != kerr.NotCoordinator.Code {
		t.Fatalf("before load: code %d, want NOT_COORDINATOR", code)
	}
	log := &memLog{recs: []KV{{Value: []byte("a")}, {Value: []byte("b")}}, release: make(chan struct{})}
	r.Load(0, 3, log)
	if _, code := r.Lookup("g"); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("while replaying: code %d, want COORDINATOR_LOAD_IN_PROGRESS", code)
	}
	close(log.release)
	p, _ := r.Get(0)
	<-p.Loaded()
	p, code := r.Lookup("g")
	if code != 0 || p.Epoch != 3 {
		t.Fatalf("after load: code %d epoch %d", code, p.Epoch)
	}
	p.Shard.Lock()
	got, loaded := slices.Clone(p.Shard.values), p.Shard.loaded
	p.Shard.Unlock()
	if !slices.Equal(got, []string{"a", "b"}) || !loaded {
		t.Fatalf("replayed %v, loaded %v", got, loaded)
	}
	r.Unload(0)
	if _, code := r.Lookup("g"); code != kerr.NotCoordinator.Code {
		t.Fatalf("after unload: code %d, want NOT_COORDINATOR", code)
	}
	p.Shard.Lock()
	defer p.Shard.Unlock()
	if !p.Shard.unloaded || !p.UnloadedLocked() {
		t.Fatal("shard not told it was unloaded")
	}
}

// A partition whose log cannot be replayed serves nothing rather than a
// partial state.
func TestRuntimeFailedReplayIsNotServed(t *testing.T) {
	r := newListRuntime()
	defer r.Close()
	r.Load(0, 0, &memLog{recs: []KV{{Value: []byte("a")}}, replayErr: errors.New("bad batch")})
	p, _ := r.Get(0)
	<-p.Loaded()
	if _, code := r.Lookup("g"); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("code %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	p.Shard.Lock()
	defer p.Shard.Unlock()
	if p.Shard.loaded {
		t.Fatal("OnLoadedLocked ran after a failed replay")
	}
}

// Writes apply in log order, a failed append applies nothing, and a
// partition unloaded during an append reports ErrNotLeader to apply (its
// append is cancelled) and refuses later writes.
func TestRuntimeWritePath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newListRuntime()
		defer r.Close()
		log := &memLog{}
		r.Load(0, 0, log)
		synctest.Wait()
		p, code := r.Lookup("g")
		if code != 0 {
			t.Fatalf("code %d", code)
		}
		ctx := context.Background()
		var wg sync.WaitGroup
		for _, v := range []string{"1", "2", "3"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if ran, err := appendValue(ctx, p, v); !ran || err != nil {
					t.Errorf("write %s: ran %v err %v", v, ran, err)
				}
			}()
			synctest.Wait() // start them in this order
		}
		wg.Wait()
		log.failErr = errors.New("disk on fire")
		if _, err := appendValue(ctx, p, "lost"); err == nil {
			t.Fatal("failed append reported success")
		}
		log.failErr = nil
		p.Shard.Lock()
		got := slices.Clone(p.Shard.values)
		p.Shard.Unlock()
		var logged []string
		for _, kv := range log.recs {
			logged = append(logged, string(kv.Value))
		}
		if !slices.Equal(got, logged) || !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Fatalf("memory %v, log %v, want both [1 2 3]", got, logged)
		}

		log.appendGate = make(chan struct{}) // the next append blocks
		done := make(chan error)
		go func() {
			_, err := appendValue(ctx, p, "4")
			done <- err
		}()
		synctest.Wait()
		r.Unload(0)
		if err := <-done; !errors.Is(err, context.Canceled) && !errors.Is(err, ErrNotLeader) {
			t.Fatalf("append across an unload: %v", err)
		}
		if ran, _ := appendValue(ctx, p, "5"); ran {
			t.Fatal("write ran on an unloaded partition")
		}
	})
}

// Close joins the goroutines and timers shards started, and none starts
// after it.
func TestRuntimeCloseJoinsWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newListRuntime()
		var ticks, fired int
		r.Load(0, 0, &memLog{})
		synctest.Wait()
		r.Every(time.Second, func(*Partition[*listShard]) { ticks++ })
		r.AfterFunc(2500*time.Millisecond, func() { fired++ })
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if ticks != 3 || fired != 1 {
			t.Fatalf("ticks %d, fired %d; want 3 and 1", ticks, fired)
		}
		r.AfterFunc(time.Second, func() { fired++ })
		r.Close()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if ticks != 3 || fired != 1 {
			t.Fatalf("work ran after Close: ticks %d, fired %d", ticks, fired)
		}
		r.Go(func() { fired++ })
		synctest.Wait()
		if fired != 1 {
			t.Fatal("Go ran after Close")
		}
	})
}
