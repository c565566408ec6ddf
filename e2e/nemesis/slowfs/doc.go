// Package slowfs is the nemesis suite's slow disk: a passthrough
// (loopback) FUSE file system that the test process serves over a
// directory of the real file system (each node's tmpfs), mounted where the
// node's log.dirs point, with a delay that can be switched on and off
// while the node runs.
//
// While a Delay is on, every operation of the chosen kinds (Ops) waits D
// in the serving goroutine before it is passed through: writes (write,
// truncate, fallocate, copy_file_range), syncs (fsync and fdatasync of a
// file or a directory), reads, and metadata changes (create, mkdir,
// rename, unlink, rmdir). Everything else (lookups, attributes, open,
// close) passes straight through. Each FUSE request is one operation: the
// kernel splits a large write or read into requests of up to MaxWrite
// (1 MiB), so a 3 MiB write waits 3·D. A request the kernel interrupts
// (the caller got a signal, e.g. SIGKILL) stops waiting and is passed
// through, so a node killed in a slow write dies at once.
//
// With the delay off the mount is a plain passthrough: errors of the
// underlying file system (ENOSPC of a full tmpfs) reach the caller
// unchanged, statfs reports the underlying file system, and shared
// writable mmap works (the mount does not use direct_io). Kernel FUSE
// passthrough (CAP_PASSTHROUGH, where reads and writes bypass the server)
// is disabled, or no write would reach the delay.
//
// Mount needs root and /dev/fuse; it calls mount(2) itself, as there may
// be no fusermount binary. The server runs in the calling process: if
// that process dies, the mount is left behind and every access to it
// fails with ENOTCONN until it is unmounted (Mounts lists what is mounted,
// so a later run can sweep it).
package slowfs
