package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	allTopic   = "nem-all" // idempotent acks=all, and the group's input
	oneTopic   = "nem-one" // acks=1
	txnTopic   = "nem-txn" // transactions across every partition
	partitions = 3
	group      = "nem-group"
)

// anomalies collects what the checkers find; the test fails on any.
type anomalies struct {
	mu   sync.Mutex
	list []string
}

func (a *anomalies) add(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, fmt.Sprintf(format, args...))
}

func (a *anomalies) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.list...)
}

// newClient makes a client whose sockets live in the clients' namespace.
type newClient func(opts ...kgo.Opt) (*kgo.Client, error)

// ack is an acknowledged record: where it went and its sequence number.
type ack struct {
	offset int64
	seq    int
}

// seqProducer writes sequence numbers to every partition of a topic,
// acks=all and idempotent (or acks=1 without idempotence), and records
// what was acknowledged.
type seqProducer struct {
	topic  string
	cl     *kgo.Client
	mu     sync.Mutex
	acked  [partitions][]ack
	failed atomic.Int64
}

func startSeqProducer(ctx context.Context, nc newClient, topic string, acksAll bool, stop *atomic.Bool, wg *sync.WaitGroup) (*seqProducer, error) {
	opts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RecordDeliveryTimeout(90 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.MaxBufferedRecords(3000),
	}
	if acksAll {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	cl, err := nc(opts...)
	if err != nil {
		return nil, err
	}
	p := &seqProducer{topic: topic, cl: cl}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for seq := 0; !stop.Load() && ctx.Err() == nil; seq++ {
			for part := range int32(partitions) {
				s := seq
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(strconv.Itoa(seq))}, func(r *kgo.Record, err error) {
					if err != nil {
						p.failed.Add(1)
						return
					}
					p.mu.Lock()
					p.acked[r.Partition] = append(p.acked[r.Partition], ack{r.Offset, s})
					p.mu.Unlock()
				})
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return p, nil
}

// watcher reads a topic continuously and remembers every record it saw
// by partition and offset.
type watcher struct {
	mu   sync.Mutex
	seen [partitions]map[int64]string
}

func startWatcher(ctx context.Context, nc newClient, topic string, readCommitted bool, wg *sync.WaitGroup) (*watcher, error) {
	opts := []kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := nc(opts...)
	if err != nil {
		return nil, err
	}
	w := &watcher{}
	for i := range w.seen {
		w.seen[i] = map[int64]string{}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			w.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { w.seen[r.Partition][r.Offset] = string(r.Value) })
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// txnOutcome is what the transactional producer knows of a transaction.
type txnOutcome int

const (
	txnCommitted txnOutcome = iota // EndTransaction(commit) succeeded
	txnAborted                     // never asked to commit
	txnUnknown                     // commit asked, answer lost
)

// txnProducer writes transactions of one record per partition, values
// "<txn>/<partition>", committing three of four and aborting the rest.
type txnProducer struct {
	mu       sync.Mutex
	outcomes map[int]txnOutcome
	// acks holds, per transaction, where each partition's record was
	// acknowledged, for explaining a transaction that goes missing.
	acks map[int]*[partitions]txnAck
}

// txnAck is a transactional record's acknowledgement: offset and the
// producer id and epoch it was written with (offset -1: not acknowledged).
type txnAck struct {
	offset int64
	pid    int64
	epoch  int16
}

func startTxnProducer(ctx context.Context, nc newClient, stop *atomic.Bool, wg *sync.WaitGroup, logf func(string, ...any)) *txnProducer {
	tp := &txnProducer{outcomes: map[int]txnOutcome{}, acks: map[int]*[partitions]txnAck{}}
	set := func(n int, o txnOutcome) { tp.mu.Lock(); tp.outcomes[n] = o; tp.mu.Unlock() }
	wg.Add(1)
	go func() {
		defer wg.Done()
		var cl *kgo.Client
		defer func() {
			if cl != nil {
				cl.Close()
			}
		}()
		for n := 0; !stop.Load() && ctx.Err() == nil; n++ {
			if cl == nil {
				var err error
				cl, err = nc(
					kgo.TransactionalID("nem-txn-producer"),
					kgo.TransactionTimeout(15*time.Second),
					kgo.RecordPartitioner(kgo.ManualPartitioner()),
					kgo.ProduceRequestTimeout(5*time.Second),
					kgo.RecordDeliveryTimeout(20*time.Second),
					kgo.RetryTimeout(20*time.Second),
					kgo.MetadataMinAge(250*time.Millisecond),
				)
				if err != nil {
					logf("txn producer: %v", err)
					time.Sleep(time.Second)
					continue
				}
			}
			commit := n%4 != 3
			set(n, txnAborted)
			err := cl.BeginTransaction()
			if err == nil {
				var failed atomic.Int32
				acks := &[partitions]txnAck{{offset: -1}, {offset: -1}, {offset: -1}}
				tp.mu.Lock()
				tp.acks[n] = acks
				tp.mu.Unlock()
				for part := range int32(partitions) {
					cl.Produce(ctx, &kgo.Record{Topic: txnTopic, Partition: part, Value: fmt.Appendf(nil, "%d/%d", n, part)},
						func(r *kgo.Record, err error) {
							if err != nil {
								failed.Add(1)
								return
							}
							tp.mu.Lock()
							acks[r.Partition] = txnAck{r.Offset, r.ProducerID, r.ProducerEpoch}
							tp.mu.Unlock()
						})
				}
				fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err = cl.Flush(fctx)
				cancel()
				if err == nil {
					// Flush does not report failed records, and
					// EndTransaction(TryCommit) after produces that all
					// failed returns nil without committing anything
					// (no partition was added): count a commit only
					// when every record was acknowledged.
					how := kgo.TryAbort
					if commit && failed.Load() == 0 {
						how = kgo.TryCommit
						set(n, txnUnknown)
					}
					ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
					err = cl.EndTransaction(ectx, how)
					cancel()
					if err == nil && how == kgo.TryCommit {
						set(n, txnCommitted)
					}
				}
			}
			if err != nil {
				// Start over with a new client: its InitProducerID
				// fences this one and aborts what it left open.
				cl.Close()
				cl = nil
				if ctx.Err() == nil && !stop.Load() {
					time.Sleep(200 * time.Millisecond)
				}
				continue
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return tp
}

// groupWatch follows the group's committed offsets; its members consume
// the main topic, committing synchronously what each poll returned.
type groupWatch struct {
	mu        sync.Mutex
	last      map[int32]int64 // last committed offset fetched per partition
	commits   atomic.Int64
	fetches   atomic.Int64
	backwards int
}

func startGroup(ctx context.Context, nc newClient, members int, wg *sync.WaitGroup, an *anomalies) (*groupWatch, error) {
	gw := &groupWatch{last: map[int32]int64{}}
	for m := range members {
		cl, err := nc(
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(allTopic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(),
			kgo.SessionTimeout(10*time.Second),
			kgo.FetchMaxWait(250*time.Millisecond),
			kgo.MetadataMinAge(250*time.Millisecond),
			kgo.ClientID(fmt.Sprintf("member-%d", m)),
		)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for ctx.Err() == nil {
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				fs := cl.PollRecords(pctx, 500)
				cancel()
				if recs := fs.Records(); len(recs) > 0 {
					cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					if err := cl.CommitRecords(cctx, recs...); err == nil {
						gw.commits.Add(1)
					}
					cancel()
				}
			}
		}()
	}
	// The observer: committed offsets, fetched once a second, must never
	// go backwards.
	adm, err := nc()
	if err != nil {
		return nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer adm.Close()
		ad := kadm.NewClient(adm)
		for ctx.Err() == nil {
			time.Sleep(time.Second)
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			offs, err := ad.FetchOffsets(fctx, group)
			cancel()
			if err != nil {
				continue
			}
			gw.fetches.Add(1)
			gw.observe(offs, an)
		}
	}()
	return gw, nil
}

func (gw *groupWatch) observe(offs kadm.OffsetResponses, an *anomalies) {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.Topic != allTopic || o.At < 0 {
			return
		}
		if prev, ok := gw.last[o.Partition]; ok && o.At < prev {
			gw.backwards++
			an.add("group %s: committed offset of %s-%d went backwards from %d to %d", group, allTopic, o.Partition, prev, o.At)
		}
		gw.last[o.Partition] = o.At
	})
}

// readAll reads every partition of topic from the start: up to the high
// watermark for read_uncommitted, and for read_committed until nothing new
// comes for a few polls (call it once no transaction is open).
func readAll(ctx context.Context, nc newClient, topic string, readCommitted bool) ([partitions]map[int64]string, error) {
	var out [partitions]map[int64]string
	for i := range out {
		out[i] = map[int64]string{}
	}
	opts := []kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := nc(opts...)
	if err != nil {
		return out, err
	}
	defer cl.Close()
	ends := map[int32]int64{}
	if !readCommitted {
		lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			return out, err
		}
		lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	}
	done := func() bool {
		for p := range int32(partitions) {
			if int64(len(out[p])) < ends[p] {
				return false
			}
		}
		return true
	}
	for idle := 0; ; {
		if ctx.Err() != nil {
			return out, fmt.Errorf("reading %s back: %w", topic, ctx.Err())
		}
		if !readCommitted && done() {
			return out, nil
		}
		if readCommitted && idle >= 4 {
			return out, nil
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition][r.Offset] = string(r.Value); got++ })
		if got == 0 {
			idle++
		} else {
			idle = 0
		}
	}
}

// checkSeq checks the log of a sequence-number topic: everything a reader
// saw is still there; and with acked (the idempotent acks=all producer's
// acknowledgements), sequence numbers strictly increase with the offset
// (no duplicate, no reordering) and every acknowledged record is at its
// offset. An acks=1 producer without idempotence may duplicate on retry
// and lose what only the leader had, so its topic gets the first check
// only. It returns how many records it checked.
func checkSeq(topic string, final [partitions]map[int64]string, acked *[partitions][]ack, seen *watcher, an *anomalies) int {
	checked := 0
	for p := range partitions {
		offs := sortedKeys(final[p])
		if acked == nil {
			offs = nil
		}
		prev, prevOff := -1, int64(-1)
		for _, o := range offs {
			seq, err := strconv.Atoi(final[p][o])
			if err != nil {
				an.add("%s-%d: offset %d holds %q, not a sequence number", topic, p, o, final[p][o])
				continue
			}
			if seq <= prev {
				an.add("%s-%d: offset %d holds seq %d after seq %d at offset %d: duplicated or reordered", topic, p, o, seq, prev, prevOff)
			}
			prev, prevOff = seq, o
		}
		if acked != nil {
			for _, a := range acked[p] {
				if got, ok := final[p][a.offset]; !ok || got != strconv.Itoa(a.seq) {
					an.add("%s-%d: acknowledged seq %d at offset %d is lost (found %q, present %v)", topic, p, a.seq, a.offset, got, ok)
				}
				checked++
			}
		}
		seen.mu.Lock()
		for o, v := range seen.seen[p] {
			if got, ok := final[p][o]; !ok || got != v {
				an.add("%s-%d: a reader saw %q at offset %d, now %q (present %v)", topic, p, v, o, got, ok)
			}
			checked++
		}
		seen.mu.Unlock()
	}
	return checked
}

// checkTxns checks the read_committed log of the transactional topic:
// each transaction all or nothing, a committed one all there, an aborted
// one never, and nothing a read_committed reader saw gone.
func checkTxns(final [partitions]map[int64]string, tp *txnProducer, seen *watcher, an *anomalies) (checked, committed, aborted, unknown int) {
	count := map[int]int{}
	for p := range partitions {
		for _, v := range final[p] {
			n, part, ok := strings.Cut(v, "/")
			txn, err := strconv.Atoi(n)
			if !ok || err != nil || part != strconv.Itoa(p) {
				an.add("%s-%d: unexpected record %q", txnTopic, p, v)
				continue
			}
			count[txn]++
			checked++
		}
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for txn, c := range count {
		if c != partitions {
			an.add("transaction %d: %d of %d records committed (not all-or-nothing, or duplicated)", txn, c, partitions)
		}
		if o, ok := tp.outcomes[txn]; !ok || o == txnAborted {
			an.add("transaction %d was never committed (outcome %v, known %v) but %d of its records are read_committed", txn, o, ok, c)
		}
	}
	for txn, o := range tp.outcomes {
		switch o {
		case txnCommitted:
			committed++
			// Each record where it was acknowledged: a committed
			// transaction is never lost, moved or partly there.
			acks := tp.acks[txn]
			for p := range partitions {
				want := fmt.Sprintf("%d/%d", txn, p)
				if acks == nil || acks[p].offset < 0 {
					an.add("transaction %d: counted committed but %s was never acknowledged (workload bug)", txn, want)
					continue
				}
				if got, ok := final[p][acks[p].offset]; !ok || got != want {
					an.add("transaction %d: committed %s acknowledged at offset %d of %s-%d is lost (found %q, present %v)", txn, want, acks[p].offset, txnTopic, p, got, ok)
				}
			}
		case txnAborted:
			aborted++
		case txnUnknown:
			unknown++
		}
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for p := range partitions {
		for o, v := range seen.seen[p] {
			if got, ok := final[p][o]; !ok || got != v {
				an.add("%s-%d: a read_committed reader saw %q at offset %d, now %q (present %v)", txnTopic, p, v, o, got, ok)
			}
		}
	}
	return checked, committed, aborted, unknown
}

func sortedKeys(m map[int64]string) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rawRecord is one record of a read_uncommitted read that keeps control
// records: a transaction marker has control set, commit its type and
// coordEpoch the coordinator epoch it carries.
type rawRecord struct {
	offset     int64
	value      string
	pid        int64
	epoch      int16
	control    bool
	commit     bool
	coordEpoch int32
}

// readRaw reads every partition of topic read_uncommitted, transaction
// markers included, up to the high watermark: what a read_committed reader
// filters, for explaining a transaction it does not see.
func readRaw(ctx context.Context, nc newClient, topic string) ([partitions][]rawRecord, error) {
	var out [partitions][]rawRecord
	cl, err := nc(
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return out, err
	}
	defer cl.Close()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return out, err
	}
	ends := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	// Offsets are not dense here (nothing is compacted, but a read may
	// start above the log start), so progress is the next offset to read.
	next := map[int32]int64{}
	for {
		done := true
		for p := range int32(partitions) {
			if next[p] < ends[p] {
				done = false
			}
		}
		if done {
			return out, nil
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("reading %s back with markers: %w", topic, ctx.Err())
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			rr := rawRecord{offset: r.Offset, value: string(r.Value), pid: r.ProducerID, epoch: r.ProducerEpoch, control: r.Attrs.IsControl()}
			if rr.control {
				// Key: version int16, type int16 (0 abort, 1 commit);
				// value: version int16, coordinator epoch int32.
				if len(r.Key) >= 4 {
					rr.commit = r.Key[3] == 1 && r.Key[2] == 0
				}
				rr.coordEpoch = -1
				if len(r.Value) >= 6 {
					rr.coordEpoch = int32(uint32(r.Value[2])<<24 | uint32(r.Value[3])<<16 | uint32(r.Value[4])<<8 | uint32(r.Value[5]))
				}
				rr.value = ""
			}
			out[r.Partition] = append(out[r.Partition], rr)
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
}

// lostTxns lists the transactions the producer saw commit of which the
// read_committed log has no record (checkTxns reports each as an anomaly).
func lostTxns(final [partitions]map[int64]string, tp *txnProducer) []int {
	present := map[int]bool{}
	for p := range partitions {
		for _, v := range final[p] {
			if n, _, ok := strings.Cut(v, "/"); ok {
				if txn, err := strconv.Atoi(n); err == nil {
					present[txn] = true
				}
			}
		}
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var lost []int
	for txn, o := range tp.outcomes {
		if o == txnCommitted && !present[txn] {
			lost = append(lost, txn)
		}
	}
	slices.Sort(lost)
	return lost
}

// explainLostTxns says, for each lost transaction and partition, whether
// its record is in the read_uncommitted log and which markers of its
// producer surround it: absent (never written, or truncated), covered by
// an ABORT (a commit decided but aborted on the partitions), followed by a
// COMMIT (present and committed, yet hidden from read_committed: the LSO or
// the aborted-transactions index is wrong), or followed by no marker (left
// open).
func explainLostTxns(raw [partitions][]rawRecord, final [partitions]map[int64]string, lost []int, tp *txnProducer) []string {
	var out []string
	for _, txn := range lost {
		var parts []string
		tp.mu.Lock()
		acks := tp.acks[txn]
		tp.mu.Unlock()
		for p := range partitions {
			want := fmt.Sprintf("%d/%d", txn, p)
			i := slices.IndexFunc(raw[p], func(r rawRecord) bool { return !r.control && r.value == want })
			if i < 0 {
				s := fmt.Sprintf("p%d: absent", p)
				if acks != nil {
					a := acks[p]
					s += fmt.Sprintf(" (acknowledged at offset %d, producer %d epoch %d; the log there: %s)", a.offset, a.pid, a.epoch, describeAt(raw[p], a.offset))
				}
				parts = append(parts, s)
				continue
			}
			r := raw[p][i]
			s := fmt.Sprintf("p%d: at offset %d (producer %d epoch %d)", p, r.offset, r.pid, r.epoch)
			if j := lastMarker(raw[p][:i], r.pid); j >= 0 {
				m := raw[p][j]
				s += fmt.Sprintf("; previous marker %s", describeMarker(m))
			}
			if j := slices.IndexFunc(raw[p][i+1:], func(m rawRecord) bool { return m.control && m.pid == r.pid }); j >= 0 {
				m := raw[p][i+1+j]
				s += fmt.Sprintf("; ended by %s", describeMarker(m))
				// Records of the same producer between the two: a marker
				// that was skipped makes two transactions one.
				others := 0
				for _, o := range raw[p][i+1 : i+1+j] {
					if !o.control && o.pid == r.pid {
						others++
					}
				}
				if others > 0 {
					s += fmt.Sprintf(" after %d more records of the producer", others)
				}
			} else {
				s += "; no marker after it (transaction open)"
			}
			later := 0
			for o := range final[p] {
				if o > r.offset {
					later++
				}
			}
			s += fmt.Sprintf("; %d read_committed records after it", later)
			parts = append(parts, s)
		}
		out = append(out, fmt.Sprintf("lost transaction %d: %s", txn, strings.Join(parts, " | ")))
	}
	return out
}

// describeAt says what the log holds at offset: a record and its
// producer, a marker, or nothing.
func describeAt(rs []rawRecord, offset int64) string {
	i := slices.IndexFunc(rs, func(r rawRecord) bool { return r.offset == offset })
	if i < 0 {
		return "nothing"
	}
	r := rs[i]
	if r.control {
		return describeMarker(r)
	}
	s := fmt.Sprintf("%q (producer %d epoch %d)", r.value, r.pid, r.epoch)
	if j := lastMarker(rs[:i], r.pid); j >= 0 {
		s += "; previous marker of its producer " + describeMarker(rs[j])
	}
	return s
}

// lastMarker is the index of the last marker of pid in rs, or -1.
func lastMarker(rs []rawRecord, pid int64) int {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].control && rs[i].pid == pid {
			return i
		}
	}
	return -1
}

func describeMarker(m rawRecord) string {
	typ := "ABORT"
	if m.commit {
		typ = "COMMIT"
	}
	return fmt.Sprintf("%s at offset %d (epoch %d, coordinator epoch %d)", typ, m.offset, m.epoch, m.coordEpoch)
}
