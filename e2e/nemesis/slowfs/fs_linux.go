package slowfs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// maxWrite is the largest WRITE and READ request: the kernel's limit, so
// that one write(2) of a batch is one request, and one delay, as often as
// possible.
const maxWrite = 1 << 20

// FS is a mounted slow file system.
type FS struct {
	// Dir is the mount point; Backing the directory it passes through to.
	Dir, Backing string
	// Delay is the switch of the mount's delay.
	Delay *Delay

	server *fuse.Server
}

// Mount serves backing at dir through a passthrough file system slowed by
// d (a new, off Delay when nil). name is the source shown in
// /proc/self/mountinfo (the type is fuse.slowfs), so that a later process
// can tell its mounts from others; see Mounts.
func Mount(backing, dir, name string, d *Delay) (*FS, error) {
	if d == nil {
		d = &Delay{}
	}
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("slowfs: %w", err)
	}
	lb := root.(*fs.LoopbackNode)
	top := &node{LoopbackNode: lb, delay: d}
	lb.RootData.RootNode = top
	// The kernel caches entries and attributes for a second, as the
	// default; only the process that mounted it writes underneath
	// (a disk-full ballast), into files the node never looks up.
	second := time.Second
	server, err := fs.Mount(dir, top, &fs.Options{
		EntryTimeout: &second,
		AttrTimeout:  &second,
		MountOptions: fuse.MountOptions{
			FsName:               name,
			Name:                 "slowfs",
			DirectMountStrict:    true,
			MaxWrite:             maxWrite,
			DisabledCapabilities: fuse.CAP_PASSTHROUGH,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("slowfs: mount %s on %s: %w", backing, dir, err)
	}
	return &FS{Dir: dir, Backing: backing, Delay: d, server: server}, nil
}

// Unmount switches the delay off and unmounts, retrying while files are
// still open (a node's process that is exiting); after about 5 s it
// detaches the mount lazily instead, which the kernel completes once the
// last file is closed, and says so in the error.
func (f *FS) Unmount() error {
	f.Delay.Off()
	var err error
	for range 20 {
		if err = syscall.Unmount(f.Dir, 0); err == nil {
			// The server's loops end once the kernel lets go of
			// the connection: at once, unless a copy of the mount
			// in another mount namespace is still in use.
			done := make(chan struct{})
			go func() { f.server.Wait(); close(done) }()
			select {
			case <-done:
				return nil
			case <-time.After(10 * time.Second):
				return fmt.Errorf("slowfs: unmounted %s, but the kernel still holds its connection", f.Dir)
			}
		}
		if errors.Is(err, syscall.EINVAL) {
			return nil // not mounted (any more)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if derr := syscall.Unmount(f.Dir, syscall.MNT_DETACH); derr != nil {
		return fmt.Errorf("slowfs: unmount %s: %v; detach: %w", f.Dir, err, derr)
	}
	return fmt.Errorf("slowfs: unmount %s: %w; detached it lazily", f.Dir, err)
}

// node is a loopback node whose data and directory operations wait for
// the delay first. Lookups, attributes, open and close pass straight
// through.
type node struct {
	*fs.LoopbackNode
	delay *Delay
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeReader         = (*node)(nil)
	_ fs.NodeWriter         = (*node)(nil)
	_ fs.NodeWritever       = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ dirStream             = (*dir)(nil)
)

// WrapChild makes every node the loopback creates a slow one.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, delay: n.delay}
	}
	return ops
}

func (n *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	r, ok := f.(fs.FileReader)
	if !ok {
		return nil, syscall.ENOTSUP
	}
	n.delay.wait(ctx, Read)
	return r.Read(ctx, dest, off)
}

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	w, ok := f.(fs.FileWriter)
	if !ok {
		return 0, syscall.ENOTSUP
	}
	n.delay.wait(ctx, Write)
	return w.Write(ctx, data, off)
}

func (n *node) Writev(ctx context.Context, f fs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	w, ok := f.(fs.FileWritever)
	if !ok {
		return 0, syscall.ENOTSUP
	}
	n.delay.wait(ctx, Write)
	return w.Writev(ctx, data, off)
}

func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	s, ok := f.(fs.FileFsyncer)
	if !ok {
		return syscall.ENOTSUP
	}
	n.delay.wait(ctx, Sync)
	return s.Fsync(ctx, flags)
}

func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	a, ok := f.(fs.FileAllocater)
	if !ok {
		return syscall.ENOTSUP
	}
	n.delay.wait(ctx, Write)
	return a.Allocate(ctx, off, size, mode)
}

// Setattr delays a truncation only; chmod, chown and utimes pass.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if _, ok := in.GetSize(); ok {
		n.delay.wait(ctx, Write)
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, size uint64, flags uint64) (uint32, syscall.Errno) {
	n.delay.wait(ctx, Write)
	return n.LoopbackNode.CopyFileRange(ctx, fhIn, offIn, out, fhOut, offOut, size, flags)
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	n.delay.wait(ctx, Meta)
	return n.LoopbackNode.Create(ctx, name, flags, mode, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.delay.wait(ctx, Meta)
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	n.delay.wait(ctx, Meta)
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	n.delay.wait(ctx, Meta)
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	n.delay.wait(ctx, Meta)
	return n.LoopbackNode.Rmdir(ctx, name)
}

// OpendirHandle wraps the directory's handle so that an fsync of the
// directory (which goes to the handle, not the node) is delayed too.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	h, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if ds, ok := h.(dirStream); ok && errno == 0 {
		return &dir{dirStream: ds, delay: n.delay}, fl, 0
	}
	return h, fl, errno
}

// dirStream is what the loopback's directory handle implements.
type dirStream interface {
	fs.DirStream
	fs.FileReaddirenter
	fs.FileReleasedirer
	fs.FileSeekdirer
	fs.FileFsyncdirer
}

type dir struct {
	dirStream
	delay *Delay
}

func (d *dir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	d.delay.wait(ctx, Sync)
	return d.dirStream.Fsyncdir(ctx, flags)
}
