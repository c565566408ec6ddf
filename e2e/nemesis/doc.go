// Package nemesis is Samsa's standing fault-injection suite: a cluster of
// separate `samsa server` processes, each in a network namespace of its
// own, runs real client workloads while a seeded scheduler injects faults,
// and strict checkers judge what the clients saw.
//
// Topology: the test creates a hub namespace holding a bridge and one
// namespace per node, joined to the bridge by a veth pair, on the private
// subnet 10.99.0.0/24 that exists only inside those namespaces. The test's
// own clients open their sockets in the hub namespace (setns on a locked
// thread). Every node's veth has an htb qdisc with a pass class and a drop
// class (a pfifo of limit 0, since this kernel has neither netem nor the
// gact action); u32 filters on a destination address send a link's packets
// to the drop class (a partition, one-way or both ways) and a classic-BPF
// filter reading the kernel's random number sends a fraction of all packets
// there (packet loss).
//
// Faults: partitions (one node isolated, one-way, a cyclic ring, a
// minority with or without the active controller), packet loss, SIGSTOP
// and SIGKILL of a node (the controller, a partition leader, or any), a
// full disk and a slow disk. Each node's log directory is a small tmpfs,
// which the nemesis fills with a ballast file, seen by the node through a
// passthrough FUSE file system the test serves (package slowfs), whose
// operations the nemesis can make wait 20–500 ms each: fsync only, writes
// and fsync, or everything. A seed fixes the schedule: which fault, on
// which role, with which parameters, for how long; the nodes a role
// resolves to at run time are logged beside it.
//
// Workloads and checkers: idempotent acks=all producers with a consumer
// (every acknowledged record present exactly once at its offset, in order;
// nothing a reader saw disappears), an acks=1 producer with a consumer
// (what was read, below the high watermark, never disappears),
// transactions across partitions committed and aborted (committed ones
// all there, each record at the offset it was acknowledged at; aborted
// ones never read under read_committed), and a
// consumer group committing offsets (committed offsets never go
// backwards).
//
// The tests need root (namespaces, tc, tmpfs and FUSE mounts) and skip
// without it.
// SAMSA_NEMESIS_SEED picks the seed (default: from the clock) and
// SAMSA_NEMESIS_DURATION the length of the fault phase (default 45s, the
// short form CI runs). A failure prints the seed and the schedule. See
// docs/reliability.md.
package nemesis
