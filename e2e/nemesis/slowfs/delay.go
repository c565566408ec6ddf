package slowfs

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Ops is a set of kinds of file system operation.
type Ops uint8

const (
	// Write is write(2) and its kin: WRITE requests (including the
	// write-back of dirty mmap'd pages), truncation to a size,
	// fallocate and copy_file_range.
	Write Ops = 1 << iota
	// Sync is fsync and fdatasync of a file or a directory.
	Sync
	// Read is a READ request (the page cache serves repeated reads
	// without one).
	Read
	// Meta is a change to a directory: create, mkdir, rename, unlink,
	// rmdir.
	Meta

	// All is every kind a Delay can slow.
	All = Write | Sync | Read | Meta
)

// opKinds lists the kinds of Ops in the order String and Counts use.
var opKinds = [...]struct {
	op   Ops
	name string
}{{Write, "write"}, {Sync, "fsync"}, {Read, "read"}, {Meta, "meta"}}

// String names the kinds in the set, joined by "+" ("write+fsync"), or
// "all", or "none".
func (o Ops) String() string {
	switch o {
	case All:
		return "all"
	case 0:
		return "none"
	}
	var names []string
	for _, k := range opKinds {
		if o&k.op != 0 {
			names = append(names, k.name)
		}
	}
	return strings.Join(names, "+")
}

// Delay is the switch of a slow disk: while it is on, each operation of
// its kinds waits D before it runs. Its methods are safe for concurrent
// use; the zero value is off and sleeps on the real clock.
type Delay struct {
	// Sleep waits d or until ctx is done (the kernel interrupted the
	// request). Nil: a timer. Tests put a recorder here.
	Sleep func(ctx context.Context, d time.Duration)

	setting atomic.Pointer[setting]
	delayed [len(opKinds)]atomic.Int64
}

type setting struct {
	d   time.Duration
	ops Ops
}

// Set makes every later operation of the kinds in ops wait d; d <= 0 or
// empty ops switch the delay off. Operations already waiting keep the
// delay they started with.
func (d *Delay) Set(delay time.Duration, ops Ops) {
	if delay <= 0 || ops == 0 {
		d.setting.Store(nil)
		return
	}
	d.setting.Store(&setting{d: delay, ops: ops})
}

// Off switches the delay off.
func (d *Delay) Off() { d.Set(0, 0) }

// Current returns the delay and the kinds it applies to (0, 0 when off).
func (d *Delay) Current() (time.Duration, Ops) {
	if s := d.setting.Load(); s != nil {
		return s.d, s.ops
	}
	return 0, 0
}

// Counts is how many operations of each kind a Delay has slowed.
type Counts struct{ Write, Sync, Read, Meta int64 }

// Counts returns how many operations were delayed so far.
func (d *Delay) Counts() Counts {
	return Counts{d.delayed[0].Load(), d.delayed[1].Load(), d.delayed[2].Load(), d.delayed[3].Load()}
}

// Sub returns the operations delayed since an earlier count.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{c.Write - earlier.Write, c.Sync - earlier.Sync, c.Read - earlier.Read, c.Meta - earlier.Meta}
}

func (c Counts) String() string {
	return fmt.Sprintf("write %d, fsync %d, read %d, meta %d", c.Write, c.Sync, c.Read, c.Meta)
}

// wait delays an operation of kind op if the delay is on for it.
func (d *Delay) wait(ctx context.Context, op Ops) {
	s := d.setting.Load()
	if s == nil || s.ops&op == 0 {
		return
	}
	for i, k := range opKinds {
		if k.op == op {
			d.delayed[i].Add(1)
		}
	}
	if d.Sleep != nil {
		d.Sleep(ctx, s.d)
		return
	}
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
