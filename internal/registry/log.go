package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicLog is the registry's view of its _schemas topic: one goroutine
// replays it into the store from the start, and writes wait until the
// replay has passed them, so the store never holds what the log does not.
type topicLog struct {
	topic  string
	cl     *kgo.Client
	st     *store
	logger *slog.Logger

	mu      sync.Mutex
	applied int64         // offset after the last replayed record
	moved   chan struct{} // closed and replaced when applied moves
	err     error         // why the replay stopped, if it did

	cancel context.CancelFunc
	done   chan struct{}
}

// openLog creates the topic if it is missing (compacted, one partition,
// the broker's default replication factor) and starts the replay.
func openLog(ctx context.Context, topic string, opts []kgo.Opt, st *store, logger *slog.Logger) (*topicLog, error) {
	opts = append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": strp("compact")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		cl.Close()
		return nil, fmt.Errorf("create %s: %w", topic, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	l := &topicLog{topic: topic, cl: cl, st: st, logger: logger,
		moved: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go l.replay(rctx)
	if err := l.catchUp(ctx); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *topicLog) replay(ctx context.Context) {
	defer close(l.done)
	for {
		fs := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			l.logger.Warn("schema registry: reading topic", "topic", t, "partition", p, "err", err)
		})
		var last int64 = -1
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			k, err := decodeKey(r.Key)
			if err == nil {
				err = l.st.apply(record{Key: k, Value: r.Value})
			}
			if err != nil {
				l.logger.Warn("schema registry: skipped record", "topic", r.Topic, "offset", r.Offset, "err", err)
			}
		})
		if last >= 0 {
			l.advance(last + 1)
		}
	}
}

func (l *topicLog) advance(off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off > l.applied {
		l.applied = off
		close(l.moved)
		l.moved = make(chan struct{})
	}
}

// waitApplied returns once every record before off has been replayed.
func (l *topicLog) waitApplied(ctx context.Context, off int64) error {
	for {
		l.mu.Lock()
		applied, moved := l.applied, l.moved
		l.mu.Unlock()
		if applied >= off {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return errors.New("schema registry: topic reader stopped")
		}
	}
}

// catchUp waits until the store holds everything in the topic now. A
// topic just created may not have a leader yet: the end offset is asked
// again until it has one or ctx ends.
func (l *topicLog) catchUp(ctx context.Context) error {
	adm := kadm.NewClient(l.cl)
	for {
		ends, err := adm.ListEndOffsets(ctx, l.topic)
		if err == nil {
			if end, ok := ends.Lookup(l.topic, 0); ok && end.Err == nil {
				return l.waitApplied(ctx, end.Offset)
			} else if ok {
				err = end.Err
			} else {
				err = errors.New("no partition 0 yet")
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("end offset of %s: %w (%w)", l.topic, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// write appends records and waits until the store has replayed them.
func (l *topicLog) write(ctx context.Context, recs ...*kgo.Record) error {
	for _, r := range recs {
		r.Topic, r.Partition = l.topic, 0
	}
	res := l.cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		return err
	}
	var last int64
	for _, r := range res {
		last = max(last, r.Record.Offset)
	}
	return l.waitApplied(ctx, last+1)
}

func (l *topicLog) close() {
	l.cancel()
	<-l.done
	l.cl.Close()
}
