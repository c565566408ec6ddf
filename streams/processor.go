package streams

import (
	"fmt"
	"time"
)

// Processor is a node of the Processor API. The runtime makes one instance
// per task (from the supplier given to AddProcessor), calls Init once, Process
// for every record that reaches the node, in order, and Close when the task
// goes away (rebalance or shutdown). All calls for one task come from one
// goroutine.
type Processor[KIn, VIn, KOut, VOut any] interface {
	Init(ctx ProcessorContext[KOut, VOut]) error
	Process(r Record[KIn, VIn]) error
	Close() error
}

// ProcessorFunc is a stateless Processor: Init and Close do nothing.
type ProcessorFunc[KIn, VIn, KOut, VOut any] func(ctx ProcessorContext[KOut, VOut], r Record[KIn, VIn]) error

// PunctuationType says which clock a punctuator follows.
type PunctuationType int

const (
	// StreamTime punctuators fire as the task's stream time (the largest
	// record timestamp it has processed) advances; no records, no firing.
	StreamTime PunctuationType = iota
	// WallClockTime punctuators fire by the system clock, checked between
	// polls, so a busy or idle task still punctuates.
	WallClockTime
)

// RecordMetadata says where the record being processed came from.
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
}

// TaskID names a task: the sub-topology and the input partition it owns,
// written like Kafka Streams' "0_3".
type TaskID struct {
	Subtopology int
	Partition   int32
}

func (t TaskID) String() string { return fmt.Sprintf("%d_%d", t.Subtopology, t.Partition) }

// Cancellable stops a punctuator.
type Cancellable interface{ Cancel() }

// ProcessorContext is what a processor sees of its task.
type ProcessorContext[K, V any] interface {
	// Forward sends r to the node's children, or only to the named ones.
	Forward(r Record[K, V], children ...string)
	// Schedule calls fn every interval on the given clock with that clock's
	// current time. Stream-time schedules are aligned to multiples of
	// interval; wall-clock ones start interval from now. Missed intervals
	// fire once, not once each.
	Schedule(interval time.Duration, typ PunctuationType, fn func(now time.Time)) Cancellable
	// RecordMetadata is the input record being processed; false inside a
	// punctuator.
	RecordMetadata() (RecordMetadata, bool)
	TaskID() TaskID
	ApplicationID() string
	// StreamTime is the largest timestamp the task has processed.
	StreamTime() time.Time
	// StateStore returns a store connected to this processor; read it
	// typed with GetKeyValueStore.
	StateStore(name string) any
}

// procUntyped is a processor as the runtime drives it.
type procUntyped interface {
	init(c *nodeCtx) error
	process(r rec) error
	close() error
}

type typedProc[KI, VI, KO, VO any] struct{ p Processor[KI, VI, KO, VO] }

func (t typedProc[KI, VI, KO, VO]) init(c *nodeCtx) error { return t.p.Init(typedCtx[KO, VO]{c}) }
func (t typedProc[KI, VI, KO, VO]) process(r rec) error   { return t.p.Process(fromRec[KI, VI](r)) }
func (t typedProc[KI, VI, KO, VO]) close() error          { return t.p.Close() }

type funcProc[KI, VI, KO, VO any] struct {
	fn  ProcessorFunc[KI, VI, KO, VO]
	ctx ProcessorContext[KO, VO]
}

func (f *funcProc[KI, VI, KO, VO]) Init(ctx ProcessorContext[KO, VO]) error {
	f.ctx = ctx
	return nil
}
func (f *funcProc[KI, VI, KO, VO]) Process(r Record[KI, VI]) error { return f.fn(f.ctx, r) }
func (f *funcProc[KI, VI, KO, VO]) Close() error                   { return nil }

// typedCtx is the typed face of a node's context.
type typedCtx[K, V any] struct{ c *nodeCtx }

func (t typedCtx[K, V]) Forward(r Record[K, V], children ...string) { t.c.forward(toRec(r), children) }
func (t typedCtx[K, V]) Schedule(iv time.Duration, typ PunctuationType, fn func(time.Time)) Cancellable {
	return t.c.task.schedule(iv, typ, fn)
}
func (t typedCtx[K, V]) RecordMetadata() (RecordMetadata, bool) {
	if t.c.task.current == nil {
		return RecordMetadata{}, false
	}
	return *t.c.task.current, true
}
func (t typedCtx[K, V]) TaskID() TaskID        { return t.c.task.id }
func (t typedCtx[K, V]) ApplicationID() string { return t.c.task.appID }
func (t typedCtx[K, V]) StreamTime() time.Time { return time.UnixMilli(t.c.task.streamTime) }
func (t typedCtx[K, V]) StateStore(name string) any {
	if !t.c.node.hasStore(name) {
		panic(fmt.Sprintf("streams: processor %q is not connected to state store %q", t.c.node.name, name))
	}
	return t.c.task.stores[name].typed
}
