package metadata

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Publisher receives every new image with the delta that produced it. It is
// called synchronously on the apply path, in registration order, so it must
// be quick; it may call Image but not Register or WaitFor (the Loader holds
// its lock), and must not propose to raft (the raft goroutine is waiting).
type Publisher interface {
	Publish(d *Delta, img *Image)
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(d *Delta, img *Image)

// Publish calls f.
func (f PublisherFunc) Publish(d *Delta, img *Image) { f(d, img) }

// Loader replays committed metadata entries into images. It implements the
// raft package's Applier.
type Loader struct {
	logger *slog.Logger
	image  atomic.Pointer[Image]

	mu struct {
		sync.Mutex
		publishers []Publisher
		// changed is closed and replaced whenever the image advances.
		changed chan struct{}
		// full is the full delta of the image fullOf, which Register
		// gives every publisher registered before the image advances
		// (signalLocked drops it): building one replays the whole
		// image, seconds at 100,000 partitions, and a node registers
		// half a dozen publishers at start-up.
		full   *Delta
		fullOf *Image
	}
}

// NewLoader returns a Loader holding the empty image of clusterID (from
// meta.properties). logger may be nil.
func NewLoader(clusterID string, logger *slog.Logger) *Loader {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Loader{logger: logger}
	l.image.Store(NewImage(clusterID))
	l.mu.changed = make(chan struct{})
	return l
}

// Image returns the latest image; safe from any goroutine.
func (l *Loader) Image() *Image { return l.image.Load() }

// Register adds a publisher. It first receives the current image as a full
// delta, so it never misses or repeats a change.
func (l *Loader) Register(p Publisher) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	img := l.image.Load()
	d := l.mu.full
	if l.mu.fullOf != img {
		var err error
		if d, err = fullDelta(img); err != nil {
			return err
		}
		l.mu.full, l.mu.fullOf = d, img
	}
	p.Publish(d, img)
	l.mu.publishers = append(l.mu.publishers, p)
	return nil
}

// Apply decodes one committed entry and replays its records atomically:
// on any error the image is unchanged except for its Offset.
func (l *Loader) Apply(index uint64, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.image.Load()
	recs, err := DecodeBatch(data)
	if err != nil {
		l.skipLocked(prev, index)
		return fmt.Errorf("metadata entry %d: %w", index, err)
	}
	b := newBuilder(prev)
	b.index = index
	for _, r := range recs {
		if err := b.apply(r); err != nil {
			l.skipLocked(prev, index)
			return fmt.Errorf("metadata entry %d: replay %T: %w", index, r, err)
		}
	}
	b.next.Offset = index
	l.publishLocked(b.delta(), b.next)
	return nil
}

// skipLocked advances Offset past a rejected entry so WaitFor still
// returns for it; nothing is published because nothing changed.
func (l *Loader) skipLocked(prev *Image, index uint64) {
	next := *prev
	next.Offset = index
	l.image.Store(&next)
	l.signalLocked()
}

func (l *Loader) publishLocked(d *Delta, img *Image) {
	l.image.Store(img)
	for _, p := range l.mu.publishers {
		p.Publish(d, img)
	}
	l.signalLocked()
}

func (l *Loader) signalLocked() {
	l.mu.full, l.mu.fullOf = nil, nil
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
}

const snapshotFormatV1 = 1

// Snapshot serialises the latest image as records (see doc.go).
func (l *Loader) Snapshot() ([]byte, error) {
	img := l.image.Load()
	b := []byte{snapshotFormatV1}
	b = binary.AppendUvarint(b, img.Offset)
	batch, err := EncodeBatch(img.records())
	if err != nil {
		return nil, err
	}
	return append(b, batch...), nil
}

// Restore replaces the image with one rebuilt from a Snapshot and publishes
// it as a full delta.
func (l *Loader) Restore(data []byte) error {
	if len(data) < 2 || data[0] != snapshotFormatV1 {
		return errors.New("unknown metadata snapshot format")
	}
	offset, n := binary.Uvarint(data[1:])
	if n <= 0 {
		return errors.New("metadata snapshot truncated")
	}
	recs, err := DecodeBatch(data[1+n:])
	if err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := newBuilder(NewImage(l.image.Load().ClusterID))
	b.index = offset
	for _, r := range recs {
		if err := b.apply(r); err != nil {
			return fmt.Errorf("metadata snapshot: replay %T: %w", r, err)
		}
	}
	b.next.Offset = offset
	d := b.delta()
	d.Full = true
	l.publishLocked(d, b.next)
	return nil
}

// WaitFor blocks until the image includes index or ctx ends.
func (l *Loader) WaitFor(ctx context.Context, index uint64) error {
	for {
		l.mu.Lock()
		ch := l.mu.changed
		l.mu.Unlock()
		if l.image.Load().Offset >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
