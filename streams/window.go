package streams

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Window is a time window [Start, End) in milliseconds since the epoch.
type Window struct {
	Start, End int64
}

// Windowed is a key of a windowed aggregation: the record key and the
// window its aggregate belongs to.
type Windowed[K any] struct {
	Key    K
	Window Window
}

// TimeWindows are fixed-size windows: tumbling (Advance = Size, each
// record in one window) or hopping (Advance < Size, each record in
// Size/Advance windows), aligned to the epoch. Kafka's TimeWindows.
type TimeWindows struct {
	// Size of each window.
	Size time.Duration
	// Advance is the distance between window starts; 0 means Size.
	Advance time.Duration
	// Grace is how long after a window's end a record may still arrive
	// for it (by stream time); later records are dropped.
	Grace time.Duration
}

// TumblingWindows are windows of size that do not overlap, accepting
// records up to grace late (Kafka's TimeWindows.ofSizeAndGrace).
func TumblingWindows(size, grace time.Duration) TimeWindows {
	return TimeWindows{Size: size, Advance: size, Grace: grace}
}

// HoppingWindows are windows of size starting every advance (Kafka's
// TimeWindows.ofSizeAndGrace(...).advanceBy(advance)).
func HoppingWindows(size, advance, grace time.Duration) TimeWindows {
	return TimeWindows{Size: size, Advance: advance, Grace: grace}
}

func (w TimeWindows) validate() error {
	adv := w.Advance
	if adv == 0 {
		adv = w.Size
	}
	switch {
	case w.Size.Milliseconds() < 1:
		return fmt.Errorf("window size %v: want at least 1ms", w.Size)
	case adv.Milliseconds() < 1 || adv > w.Size:
		return fmt.Errorf("window advance %v: want 1ms to the size %v", adv, w.Size)
	case w.Grace < 0:
		return fmt.Errorf("window grace %v: want >= 0", w.Grace)
	}
	return nil
}

func (w TimeWindows) ms() (size, advance, grace int64) {
	size, advance, grace = w.Size.Milliseconds(), w.Advance.Milliseconds(), w.Grace.Milliseconds()
	if advance == 0 {
		advance = size
	}
	return size, advance, grace
}

// windowsFor lists the windows holding ts, earliest first (Kafka's
// TimeWindows.windowsFor: no window starts before the epoch).
func (w TimeWindows) windowsFor(ts int64) []Window {
	size, advance, _ := w.ms()
	start := max(0, ts-size+advance) / advance * advance
	var out []Window
	for ; start <= ts; start += advance {
		out = append(out, Window{start, start + size})
	}
	return out
}

// TimeWindowedSerde serializes a Windowed key as Kafka's
// TimeWindowedSerializer does: the inner key's bytes, then the window start
// as an 8-byte big-endian integer. The end is not written; the deserializer
// sets it to start + size.
func TimeWindowedSerde[K any](inner Serde[K], size time.Duration) Serde[Windowed[K]] {
	return SerdeFuncs[Windowed[K]]{
		Ser: func(topic string, v Windowed[K]) ([]byte, error) {
			kb, err := inner.Serialize(topic, v.Key)
			if err != nil {
				return nil, err
			}
			return binary.BigEndian.AppendUint64(append([]byte(nil), kb...), uint64(v.Window.Start)), nil
		},
		Deser: func(topic string, b []byte) (Windowed[K], error) {
			var w Windowed[K]
			if len(b) < 8 {
				return w, fmt.Errorf("windowed key serde: %d bytes from topic %q, want at least 8", len(b), topic)
			}
			k, err := inner.Deserialize(topic, b[:len(b)-8])
			if err != nil {
				return w, err
			}
			start := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
			return Windowed[K]{Key: k, Window: Window{start, start + size.Milliseconds()}}, nil
		},
	}
}
