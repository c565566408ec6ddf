package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/connector"
)

// kv is one keyed record of a log; a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

// logStore is a keyed log applied in order: the config and offset topics
// in distributed mode, memory (and a file) in standalone mode.
type logStore interface {
	// Start replays what the log holds through apply, then keeps
	// applying new records (from any writer) as they arrive.
	Start(ctx context.Context, apply func(kv)) error
	// Write appends records and returns once they were applied.
	Write(ctx context.Context, recs ...kv) error
	Close()
}

// memLog applies writes at once; with a file it also keeps the latest
// value per key there (standalone mode's offset.storage.file.filename).
type memLog struct {
	file  string
	mu    sync.Mutex
	apply func(kv)
	all   map[string][]byte
}

func (l *memLog) Start(_ context.Context, apply func(kv)) error {
	l.apply, l.all = apply, map[string][]byte{}
	if l.file == "" {
		return nil
	}
	b, err := os.ReadFile(l.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var stored map[string]string
	if err := json.Unmarshal(b, &stored); err != nil {
		return fmt.Errorf("%s: %w", l.file, err)
	}
	for k, v := range stored {
		l.all[k] = []byte(v)
		apply(kv{k, []byte(v)})
	}
	return nil
}

func (l *memLog) Write(_ context.Context, recs ...kv) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		if r.value == nil {
			delete(l.all, r.key)
		} else {
			l.all[r.key] = r.value
		}
	}
	if l.file != "" {
		if err := l.saveLocked(); err != nil {
			return err
		}
	}
	for _, r := range recs {
		l.apply(r)
	}
	return nil
}

// saveLocked replaces the file atomically (write a temporary file, sync,
// rename).
func (l *memLog) saveLocked() error {
	out := map[string]string{}
	for k, v := range l.all {
		out[k] = string(v)
	}
	b, _ := json.Marshal(out)
	tmp := l.file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, l.file); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(l.file)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func (*memLog) Close() {}

// kafkaLog is a compacted topic read from its start by its own client;
// Write produces and waits until the reader has applied the records.
type kafkaLog struct {
	opts       []kgo.Opt
	topic      string
	partitions int32
	rf         int16

	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	changed chan struct{}   // closed and replaced when next moves
	next    map[int32]int64 // per partition: the offset after the last applied record
	readErr error
}

// Start creates the topic when it is missing (compacted, as Kafka), reads
// it to its end and then tails it.
func (l *kafkaLog) Start(ctx context.Context, apply func(kv)) error {
	cl, err := kgo.NewClient(append(l.opts, kgo.ConsumeTopics(l.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return err
	}
	l.cl = cl
	l.next = map[int32]int64{}
	l.changed = make(chan struct{})
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, l.partitions, l.rf, map[string]*string{"cleanup.policy": ptr("compact")}, l.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		cl.Close()
		return fmt.Errorf("creating topic %s: %w", l.topic, err)
	}
	// A topic just created may not be known to every broker yet.
	var ends kadm.ListedOffsets
	for {
		ends, err = adm.ListEndOffsets(ctx, l.topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		cl.Close()
		return fmt.Errorf("reading the end of %s: %w", l.topic, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.read(runCtx, apply)
	var waitErr error
	ends.Each(func(e kadm.ListedOffset) {
		if waitErr == nil {
			waitErr = l.waitApplied(ctx, e.Partition, e.Offset)
		}
	})
	if waitErr != nil {
		l.Close()
		return fmt.Errorf("reading %s: %w", l.topic, waitErr)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func (l *kafkaLog) read(ctx context.Context, apply func(kv)) {
	defer close(l.done)
	for {
		fs := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			l.mu.Lock()
			l.readErr = err
			l.mu.Unlock()
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				apply(kv{string(r.Key), r.Value})
			}
			if n := len(p.Records); n > 0 {
				l.mu.Lock()
				l.next[p.Partition] = p.Records[n-1].Offset + 1
				close(l.changed)
				l.changed = make(chan struct{})
				l.mu.Unlock()
			}
		})
	}
}

// catchUp waits until every record written to the topic before the call
// was applied.
func (l *kafkaLog) catchUp(ctx context.Context) error {
	ends, err := kadm.NewClient(l.cl).ListEndOffsets(ctx, l.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("reading the end of %s: %w", l.topic, err)
	}
	var waitErr error
	ends.Each(func(e kadm.ListedOffset) {
		if waitErr == nil {
			waitErr = l.waitApplied(ctx, e.Partition, e.Offset)
		}
	})
	return waitErr
}

// waitApplied waits until the reader applied every record of partition
// p before offset end. It counts the offsets of records handed out, so a
// topic ending in a transaction marker (never handed out) would not be
// read "to the end": Connect's topics are written without transactions.
func (l *kafkaLog) waitApplied(ctx context.Context, p int32, end int64) error {
	for {
		l.mu.Lock()
		got, ch := l.next[p], l.changed
		l.mu.Unlock()
		if got >= end {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (l *kafkaLog) Write(ctx context.Context, recs ...kv) error {
	var krs []*kgo.Record
	for _, r := range recs {
		krs = append(krs, &kgo.Record{Topic: l.topic, Key: []byte(r.key), Value: r.value})
	}
	res := l.cl.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		return fmt.Errorf("writing to %s: %w", l.topic, err)
	}
	for _, r := range res {
		if err := l.waitApplied(ctx, r.Record.Partition, r.Record.Offset+1); err != nil {
			return err
		}
	}
	return nil
}

// send produces without waiting (status records).
func (l *kafkaLog) send(key string, value []byte) {
	l.cl.Produce(context.Background(), &kgo.Record{Topic: l.topic, Key: []byte(key), Value: value}, nil)
}

func (l *kafkaLog) Close() {
	if l.cancel != nil {
		l.cancel()
		<-l.done
	}
	if l.cl != nil {
		l.cl.Close()
	}
}

// offsetStore holds source offsets by connector and source partition,
// indexed by the canonical JSON of the key so keys written by a Java
// worker (another field order) are found too.
type offsetStore struct {
	log logStore
	mu  sync.Mutex
	m   map[string]offsetEntry // canonical key JSON -> entry
}

type offsetEntry struct {
	connector string
	partition map[string]any
	offset    map[string]any
}

var schemaless = &connector.JsonConverter{SchemasEnable: false}

func offsetKey(conn string, partition map[string]any) string {
	b, _ := json.Marshal([]any{conn, partition})
	return string(b)
}

// apply is the log's apply function.
func (s *offsetStore) apply(r kv) {
	_, k, err := schemaless.ToConnect("", []byte(r.key))
	arr, ok := k.([]any)
	if err != nil || !ok || len(arr) != 2 {
		return // not a Connect offset key
	}
	conn, _ := arr[0].(string)
	part, _ := arr[1].(map[string]any)
	key := offsetKey(conn, part)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.value == nil {
		delete(s.m, key)
		return
	}
	_, v, err := schemaless.ToConnect("", r.value)
	off, _ := v.(map[string]any)
	if err == nil {
		s.m[key] = offsetEntry{conn, part, off}
	}
}

func (s *offsetStore) get(conn string, partition map[string]any) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[offsetKey(conn, normalize(partition))].offset
}

// normalize passes a partition through JSON so its numbers compare as
// the stored ones.
func normalize(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	_, v, _ := schemaless.ToConnect("", b)
	out, _ := v.(map[string]any)
	return out
}

func (s *offsetStore) list(conn string) []offsetEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []offsetEntry
	for _, k := range connector.SortedKeys(s.m) {
		if e := s.m[k]; e.connector == conn {
			out = append(out, e)
		}
	}
	return out
}

// put writes offsets (nil offset: delete) for conn's partitions.
func (s *offsetStore) put(ctx context.Context, conn string, entries []offsetEntry) error {
	var recs []kv
	for _, e := range entries {
		r := kv{key: offsetKey(conn, e.partition)}
		if e.offset != nil {
			r.value, _ = json.Marshal(e.offset)
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil
	}
	return s.log.Write(ctx, recs...)
}

// reader gives a task the offsets of its connector.
type offsetReader struct {
	s    *offsetStore
	conn string
}

func (r offsetReader) Offset(partition map[string]any) map[string]any {
	return r.s.get(r.conn, partition)
}
