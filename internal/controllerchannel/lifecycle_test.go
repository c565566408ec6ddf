package controllerchannel

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker fences itself once no heartbeat sent within the session
// timeout was answered, and lifts the fence only on an answer that shows it
// unfenced and caught up.
func TestLifecycleSessionLapse(t *testing.T) {
	const timeout = time.Hour // the real timer never fires; the test calls lapse
	start := time.Unix(1000, 0)
	now := start
	var told []bool
	l := NewLifecycle(LifecycleConfig{Logger: slog.New(slog.DiscardHandler), SessionTimeout: timeout,
		OnSession: func(lapsed bool) { told = append(told, lapsed) }, Now: func() time.Time { return now }})
	t.Cleanup(func() {
		l.session.Lock()
		l.session.stopped = true
		l.session.timer.Stop()
		l.session.Unlock()
	})
	answer := func(fenced, caughtUp bool) *kmsg.BrokerHeartbeatResponse {
		r := kmsg.NewPtrBrokerHeartbeatResponse()
		r.IsFenced, r.IsCaughtUp = fenced, caughtUp
		return r
	}

	// Heartbeats before the first answer do not count; the session runs
	// from the send time of the last answered one.
	now = start.Add(2 * time.Second)
	l.answered(start.Add(time.Second), answer(false, true))
	now = start.Add(time.Second + timeout - time.Millisecond)
	l.lapse()
	if l.lapsed() || len(told) != 0 {
		t.Fatalf("lapsed before the deadline (told %v)", told)
	}
	now = start.Add(time.Second + timeout)
	l.lapse()
	if !l.lapsed() || !slices.Equal(told, []bool{true}) {
		t.Fatalf("not lapsed at the deadline (told %v)", told)
	}
	l.lapse()
	if !slices.Equal(told, []bool{true}) {
		t.Fatalf("a second lapse told again: %v", told)
	}

	// Answers that show the broker fenced or behind keep it fenced.
	l.answered(now, answer(true, true))
	l.answered(now, answer(false, false))
	if !l.lapsed() || len(told) != 1 {
		t.Fatalf("fence lifted before the broker caught up (told %v)", told)
	}
	l.answered(now, answer(false, true))
	if l.lapsed() || !slices.Equal(told, []bool{true, false}) {
		t.Fatalf("fence not lifted by an unfenced, caught-up answer (told %v)", told)
	}
}
