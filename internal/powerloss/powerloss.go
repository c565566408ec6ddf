// Package powerloss models a power failure for tests. A Disk is the Fault
// hook of internal/storage (LogConfig.Fault) and internal/raft
// (Config.Fault): both call it before every write and fsync of a log
// segment with the file's path, so it can keep, per file, the size known
// to be on disk after the last fsync. PowerOff then freezes the machine:
// every later hooked write and fsync fails with EIO, as if the node were
// dead. Image copies the node's directories the way the disk would hold
// them when the power comes back: each tracked file cut to its synced
// size, or, with tearing on, keeping a random part of its unsynced tail,
// possibly with one corrupt byte (pages that reached the platter, a torn
// sector). A test restarts the node on the image and abandons the frozen
// original.
//
// This is a crash tracker on the real file system, not a virtual file
// system (pebble's vfs.MemFS with its crash clone): the hooks see segment
// writes and fsyncs only, so some things a real power loss can do are not
// modelled:
//
//   - Directory entries. A created, renamed or removed file is taken to be
//     durable at once; a real crash may undo a create, rename or remove
//     whose directory was not fsynced. Both packages fsync the directory
//     after such changes, so the gap is between the change and that fsync.
//   - Files written without a hook: checkpoints, snapshots, quorum-state,
//     meta.properties. Both packages write them atomically (temporary
//     file, fsync, rename), so their content is durable when they appear;
//     the copy takes whichever version is there.
//   - Files replaced without fsync (the storage package's
//     partition.metadata: a temporary file renamed over the old one)
//     report "replace" before the rename and
//     "sync" once they are durable. Until then Image gives the version
//     that was durable before the first unsynced replace (or no file, if
//     there was none), or with tearing on, at random that one, the new
//     one or an empty file.
//   - Index files (.index, .timeindex, .txnindex) are copied as they are;
//     the storage package rebuilds the indexes of every segment at or
//     after the recovery point after an unclean shutdown, and the
//     segments below it were fsynced with their indexes.
//   - A file written past its recorded size by a write whose hook ran
//     before PowerOff but which finished after it is cut like any other
//     unsynced tail; an fsync whose hook ran before PowerOff counts as
//     done even if the copy overtakes it (the hooks run before the
//     operation), which can only make the image kinder, never harsher.
package powerloss

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Disk tracks what was fsynced; its zero value is not usable, use New.
type Disk struct {
	mu      sync.Mutex
	durable map[string]int64 // path → size at its last fsync
	// prior: path → its durable content (nil: no file) while it is
	// replaced without fsync ("replace" until "sync").
	prior map[string][]byte
	off   bool
	rng   *rand.Rand // nil: cut exactly at the synced size
}

// New returns a Disk. With tear set, Image keeps a random part of each
// unsynced tail, maybe with a corrupt byte, chosen by seed.
func New(tear bool, seed uint64) *Disk {
	d := &Disk{durable: map[string]int64{}, prior: map[string][]byte{}}
	if tear {
		d.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	return d
}

// Fault is the hook to set as LogConfig.Fault and raft's Config.Fault.
func (d *Disk) Fault(op, path string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return &os.PathError{Op: op, Path: path, Err: syscall.EIO}
	}
	if op == "replace" {
		path = filepath.Clean(path)
		if _, pending := d.prior[path]; !pending {
			b, err := os.ReadFile(path)
			if err != nil {
				b = nil
			} else if b == nil {
				b = []byte{}
			}
			d.prior[path] = b
		}
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		// A directory fsync, or a file about to be created (raft's
		// temporary files): nothing to track.
		return nil
	}
	path = filepath.Clean(path)
	size := fi.Size()
	switch op {
	case "write":
		// What the file holds before its first write in this process was
		// on disk already (written by an earlier run, or just created
		// empty); a file shorter than its synced size was truncated.
		if dur, ok := d.durable[path]; !ok || size < dur {
			d.durable[path] = size
		}
	case "sync":
		d.durable[path] = size
		delete(d.prior, path)
	}
	return nil
}

// PowerOff freezes the disk: every later hooked write and fsync fails.
func (d *Disk) PowerOff() {
	d.mu.Lock()
	d.off = true
	d.mu.Unlock()
}

// Loss is what Image dropped from one file.
type Loss struct {
	Path     string // in the source tree
	Size     int64  // bytes the file held
	Durable  int64  // bytes fsynced
	Kept     int64  // bytes the image holds
	Corrupt  bool   // one byte of the kept unsynced tail was flipped
	Unsynced int64  // Size - Durable
}

func (l Loss) String() string {
	s := fmt.Sprintf("%s: %d of %d unsynced bytes lost (kept %d)", l.Path, l.Size-l.Kept, l.Unsynced, l.Kept)
	if l.Corrupt {
		s += ", a kept byte corrupt"
	}
	return s
}

// Image copies the tree src to dst (which must not exist) as the disk
// holds it after the power comes back, and reports each file that lost
// bytes. Call it after PowerOff.
func (d *Disk) Image(src, dst string) ([]Loss, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var losses []Loss
	err := filepath.WalkDir(src, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walking (a temporary file)
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if de.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !de.Type().IsRegular() {
			return nil
		}
		if prior, pending := d.prior[filepath.Clean(path)]; pending {
			return d.imageReplaced(path, out, prior)
		}
		size, err := copyFile(path, out)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		dur, ok := d.durable[filepath.Clean(path)]
		if !ok || size <= dur {
			return nil
		}
		l := Loss{Path: path, Size: size, Durable: dur, Kept: dur, Unsynced: size - dur}
		if d.rng != nil && d.rng.IntN(2) == 0 {
			l.Kept += d.rng.Int64N(size - dur + 1)
		}
		if err := os.Truncate(out, l.Kept); err != nil {
			return err
		}
		if l.Kept > dur && d.rng.IntN(3) == 0 {
			if err := flipByte(out, dur+d.rng.Int64N(l.Kept-dur), byte(1+d.rng.IntN(255))); err != nil {
				return err
			}
			l.Corrupt = true
		}
		losses = append(losses, l)
		return nil
	})
	return losses, err
}

// imageReplaced writes out as the disk may hold a file replaced without
// fsync: its prior durable version (none: no file), or, tearing, at
// random that, the current version or an empty file.
func (d *Disk) imageReplaced(path, out string, prior []byte) error {
	pick := 0
	if d.rng != nil {
		pick = d.rng.IntN(3)
	}
	switch pick {
	case 1:
		_, err := copyFile(path, out)
		if os.IsNotExist(err) {
			return nil
		}
		return err
	case 2:
		return os.WriteFile(out, nil, 0o644)
	}
	if prior == nil {
		return nil
	}
	return os.WriteFile(out, prior, 0o644)
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func flipByte(path string, off int64, mask byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err = f.ReadAt(b, off); err == nil {
		_, err = f.WriteAt([]byte{b[0] ^ mask}, off)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
