package raft

// The simulation's disk (see sim_test.go): the node's real files in a RAM
// directory, with faults injected through Config.Fault and a crash model
// that knows which bytes of each segment were fsynced.
//
// The log writes segments with write+fsync (both hooked) and every other
// file (quorum-state, checkpoints) atomically: temporary file, fsync,
// rename, directory fsync, with one hooked "write" first. Truncations
// fsync too. So the only bytes a crash can lose are segment bytes written
// after the last successful fsync of that file: exactly those a failed
// fsync left behind. At a crash each such tail is cut back to the synced
// size, or partly kept (some pages reached the disk), possibly with a
// corrupt byte (a torn sector).

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

type diskMode int

const (
	diskOK        diskMode = iota
	diskFull               // writes fail with ENOSPC, some after writing garbage
	diskSyncFails          // segment fsyncs fail with EIO, some dropping the dirty pages
	diskStateFull          // only quorum-state cannot be written
)

func (m diskMode) String() string {
	return [...]string{"ok", "full", "fsync-fails", "quorum-state-full"}[m]
}

type simDisk struct {
	s    *sim
	id   uint64
	mode diskMode
	rate float64 // chance that a matching operation fails
	gen  int
	// durable is, per segment path, the size known to be on disk.
	durable map[string]int64
	// crashNow: the process died at a write or fsync of the current
	// turn (a crash point); the simulation crashes the node when the
	// turn ends, and every later operation of the turn fails.
	crashNow bool
	// injected: some operation failed by injection (since start reset it).
	injected bool
}

// startFault turns on a random fault mode for dur milliseconds.
func (d *simDisk) startFault(dur int64) {
	d.s.stats.diskFaults++
	d.gen++
	gen := d.gen
	d.mode = diskMode(1 + d.s.rng.IntN(3))
	d.rate = []float64{1, 1, 0.5, 0.2}[d.s.rng.IntN(4)]
	d.s.logf("n%d DISK %s (rate %.1f) for %dms", d.id, d.mode, d.rate, dur)
	d.s.after(dur, func() {
		if d.gen == gen && d.mode != diskOK {
			d.mode = diskOK
			d.s.logf("n%d disk ok", d.id)
		}
	})
}

func (d *simDisk) hook(op, path string) error {
	seg := strings.HasSuffix(path, segmentSuffix)
	var size int64
	if seg {
		fi, err := os.Stat(path)
		if err != nil {
			d.s.fail("n%d: stat %s: %v", d.id, path, err)
			return err
		}
		size = fi.Size()
	}
	if seg {
		d.s.logf("n%d disk: %s %s size %d durable %d", d.id, op, filepath.Base(path), size, d.durable[path])
	}
	if d.crashNow {
		return &os.PathError{Op: op, Path: path, Err: syscall.EIO}
	}
	if !d.s.healed && d.s.rng.Float64() < d.s.crashPoint {
		// Die here: before this write, or after a write and before its
		// fsync (the crash then loses or tears the unsynced bytes).
		d.crashNow = true
		d.s.logf("n%d CRASH POINT at %s %s", d.id, op, filepath.Base(path))
		return &os.PathError{Op: op, Path: path, Err: syscall.EIO}
	}
	switch op {
	case "write":
		if seg {
			// Anything the file holds now is synced, or was cut back
			// by a truncation (which fsyncs).
			if dur, ok := d.durable[path]; !ok || size < dur {
				d.durable[path] = size
			}
		}
		if !d.failWrite(path) {
			return nil
		}
		if seg && d.s.rng.IntN(3) == 0 {
			// A short write: some bytes landed before the disk filled.
			garbage := make([]byte, 1+d.s.rng.IntN(40))
			for i := range garbage {
				garbage[i] = byte(d.s.rng.Uint32())
			}
			appendFile(d, path, garbage)
		}
		d.s.stats.injected++
		d.injected = true
		d.s.logf("n%d disk: write %s fails ENOSPC", d.id, filepath.Base(path))
		return &os.PathError{Op: op, Path: path, Err: syscall.ENOSPC}
	case "sync":
		if !seg {
			return nil
		}
		if d.mode == diskSyncFails && d.s.rng.Float64() < d.rate {
			d.s.stats.injected++
			d.injected = true
			if d.s.rng.IntN(2) == 0 {
				// The kernel dropped the dirty pages (Linux after a
				// failed writeback): the unsynced bytes are gone now.
				if err := os.Truncate(path, d.durable[path]); err != nil {
					d.s.fail("n%d: truncate: %v", d.id, err)
				}
				d.s.logf("n%d disk: fsync %s fails EIO, unsynced bytes dropped", d.id, filepath.Base(path))
			} else {
				d.s.logf("n%d disk: fsync %s fails EIO", d.id, filepath.Base(path))
			}
			return &os.PathError{Op: "fsync", Path: path, Err: syscall.EIO}
		}
		d.durable[path] = size
	}
	return nil
}

func (d *simDisk) failWrite(path string) bool {
	switch d.mode {
	case diskFull:
	case diskStateFull:
		if filepath.Base(path) != hardStateFile+".tmp" {
			return false
		}
	default:
		return false
	}
	return d.s.rng.Float64() < d.rate
}

func appendFile(d *simDisk, path string, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.Write(b)
		f.Close()
	}
	if err != nil {
		d.s.fail("n%d: append garbage: %v", d.id, err)
	}
}

// crash loses what was not fsynced: each segment's unsynced tail is cut,
// or partly kept, maybe with a corrupt byte.
func (d *simDisk) crash(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil {
		d.s.fail("n%d: read dir: %v", d.id, err)
		return
	}
	for _, de := range des { // sorted by name
		path := filepath.Join(dir, de.Name())
		if !strings.HasSuffix(path, segmentSuffix) {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			d.s.fail("n%d: stat: %v", d.id, err)
			return
		}
		dur, ok := d.durable[path]
		if !ok || fi.Size() <= dur {
			continue
		}
		keep := dur
		if d.s.rng.IntN(2) == 0 {
			keep += d.s.rng.Int64N(fi.Size() - dur + 1)
		}
		if err := os.Truncate(path, keep); err != nil {
			d.s.fail("n%d: truncate: %v", d.id, err)
			return
		}
		d.s.logf("n%d crash: %s keeps %d of %d unsynced bytes", d.id, de.Name(), keep-dur, fi.Size()-dur)
		if keep > dur && d.s.rng.IntN(3) == 0 {
			off := dur + d.s.rng.Int64N(keep-dur)
			flip := byte(1 + d.s.rng.IntN(255))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err == nil {
				b := make([]byte, 1)
				if _, err = f.ReadAt(b, off); err == nil {
					_, err = f.WriteAt([]byte{b[0] ^ flip}, off)
				}
				f.Close()
			}
			if err != nil {
				d.s.fail("n%d: corrupt: %v", d.id, err)
				return
			}
			d.s.logf("n%d crash: %s corrupt byte at %d", d.id, de.Name(), off)
		}
		d.durable[path] = keep
	}
}
