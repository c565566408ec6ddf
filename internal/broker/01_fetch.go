package broker

// Fetch, versions 4-18.
//
// Behavior:
//   - Batches are returned as stored: bytes from the log, never decoded.
//     On a connection they stay in their segment files until written
//     (storage.FileSlice in a wire.FetchWithFiles): sent with sendfile
//     on plain TCP, pread into the frame on TLS (internal/network).
//   - Limits: partition_max_bytes per partition and max_bytes for the whole
//     response, except that the first partition with data returns at least
//     one whole batch even when it is larger (KIP-74), so a consumer can
//     always make progress.
//   - Long poll: when fewer than min_bytes are ready, the request parks
//     up to max_wait_ms, as in Kafka's fetch purgatory (DelayedFetch):
//     each append, high watermark move or role change of one of its
//     partitions re-reads that partition alone, and the fetch answers
//     once its partitions hold min_bytes. Reading a partition that
//     fails (OFFSET_OUT_OF_RANGE, NOT_LEADER, a leader epoch error, ...)
//     or finds a diverging epoch answers at once, before or while
//     parked, as Kafka's ReplicaManager.fetchMessages does
//     (errorReadingData). A partition refused before it is read (not
//     authorized, unknown topic, no such partition) does not end the
//     wait, as Kafka filters those out first; a fetch with nothing else
//     is answered at once.
//   - A follower's parked fetch also answers when this node starts
//     leading a partition the follower replicates, so that its next
//     fetch can name the new partition at once (a fetch's partitions are
//     fixed when it is sent).
//   - Topics are named up to v12 and given by id from v13
//     (UNKNOWN_TOPIC_ID for an id we do not know).
//   - v18's per-partition HighWatermark (KIP-1166: the high watermark the
//     fetching replica knows, so that a leader can answer at once when
//     its own is newer) is read by Kafka's KRaft quorum only; Kafka 4.4's
//     broker ignores it for partition fetches, and so does Samsa (a move
//     of the high watermark already wakes a parked follower fetch).
//   - Fetch sessions (KIP-227, v7+) as Kafka's FetchManager keeps them
//     (internal/fetchsession): epoch 0 is a full fetch that opens a
//     session when the cache has room (session id 0 otherwise), epoch -1
//     a full fetch without one; either closes the session it names. A
//     later epoch continues a session: the request names only changed and
//     forgotten partitions, every partition of the session is read, and
//     the response carries only those with records, a moved high
//     watermark or log start offset, an error, a diverging epoch or a
//     preferred replica. FETCH_SESSION_ID_NOT_FOUND for an unknown
//     session, INVALID_FETCH_SESSION_EPOCH for an epoch out of step,
//     FETCH_SESSION_TOPIC_ID_ERROR when a session opened with topic names
//     (v7-12) continues with ids (v13+) or the reverse; each answered at
//     once with no partitions. Followers' sessions are privileged in
//     eviction. Before v7 there are no sessions.
//   - current_leader_epoch is checked: older → FENCED_LEADER_EPOCH, newer →
//     UNKNOWN_LEADER_EPOCH.
//   - read_uncommitted consumers read up to the high watermark;
//     read_committed (isolation_level 1) stop at the last stable offset
//     (the first offset of the oldest open transaction) and get the
//     aborted transactions overlapping the returned batches, so the client
//     drops their records. Both are told the last stable offset.
//   - Consumers (replica id -1) are served by the partition leader only:
//     a follower answers NOT_LEADER_OR_FOLLOWER.
//   - A replica id >= 0 (replica_id before v15, replica_state.replica_id
//     from v15) is a follower replicating: the leader records its position
//     (which may advance the high watermark), reads up to the log end
//     offset, and answers diverging_epoch when the follower's log diverged
//     at its last fetched epoch. It long-polls like a consumer; a move of
//     the high watermark also wakes it.
//   - Authorization (KafkaApis): a consumer needs READ on each topic, a
//     follower CLUSTER_ACTION on the cluster; a partition without it
//     answers TOPIC_AUTHORIZATION_FAILED (a consumer's unknown topic id is
//     UNKNOWN_TOPIC_ID first, as its name is not known to authorize).

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/fetchsession"
	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/metrics"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/storage"
	"github.com/samsa-io/samsa/internal/wire"
)

func handleFetch(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	replicaID := fetchReplicaID(req)
	fctx := b.fetchSessions.NewContext(req.Version, req.SessionID, req.SessionEpoch, replicaID >= 0,
		fetchRequestPartitions(req), forgottenPartitions(req), b.cfg.Now().UnixMilli())
	if fctx.Kind == fetchsession.Error {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.Version = req.Version
		resp.ErrorCode = fctx.ErrorCode
		return resp, nil
	}
	z := b.authz(c)
	readable := z.topics(kmsg.ACLOperationRead)
	if replicaID >= 0 {
		ok := z.cluster(kmsg.ACLOperationClusterAction)
		readable = func(string) bool { return ok }
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	// The batches stay in their segment files until the connection
	// writes them (sendfile); without a connection (a handler called
	// in-process) they are read into memory.
	r := b.fetchOnce(req, fctx.Partitions, replicaID, readable, c != nil)
	if r.total >= int(req.MinBytes) || req.MaxWaitMillis <= 0 || len(r.watch) == 0 || r.urgent {
		return b.fetchResponse(req, fctx, r), nil
	}
	if err := b.parkFetch(ctx, req, fctx, r, time.Until(deadline)); err != nil {
		r.releaseFiles()
		return nil, err
	}
	return b.fetchResponse(req, fctx, r), nil
}

// parkFetch waits, at most timeout, until the partitions of r hold
// min_bytes in all or one of them fails (Kafka's DelayedFetch): each
// append, high watermark move or role change of a watched partition
// re-reads that partition alone. A follower's fetch also ends when this
// node starts leading one of its partitions (followerFetches).
func (b *Broker) parkFetch(ctx context.Context, req *kmsg.FetchRequest, fctx *fetchsession.Context, r *fetchRead, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	back := away(ctx) // waiting for records is not handling (quota.go)
	defer back()
	w := replica.NewFetchWaiter(len(r.parts))
	defer w.Stop()
	var kicked <-chan struct{}
	if r.replicaID >= 0 {
		var unpark func()
		kicked, unpark = b.parkedFollowers.park(r.replicaID)
		defer unpark()
	}
	for _, i := range r.watch {
		w.Watch(r.ps[i], i, r.moves[i])
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var changed []int
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-kicked:
			return nil
		case <-w.C:
		}
		changed = w.Changed(changed[:0])
		for _, i := range changed {
			b.readPartition(req, r, i, fctx.Partitions[i].Request)
		}
		if r.total >= int(req.MinBytes) || r.urgent {
			return nil
		}
	}
}

// followerFetches are the parked fetches of follower replicas, by
// replica id. When this node starts leading a partition, the parked
// fetches of its followers answer at once, so that they fetch the new
// partition now rather than after replica.fetch.wait.max.ms (a follower
// adds a partition to its next fetch only). The zero value is ready.
type followerFetches struct {
	mu     sync.Mutex
	parked map[int32]map[chan struct{}]struct{}
}

// park registers a parked fetch of replica id; kicked receives when it
// should answer. unpark ends the registration.
func (f *followerFetches) park(id int32) (kicked <-chan struct{}, unpark func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parked == nil {
		f.parked = make(map[int32]map[chan struct{}]struct{})
	}
	if f.parked[id] == nil {
		f.parked[id] = make(map[chan struct{}]struct{})
	}
	f.parked[id][ch] = struct{}{}
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.parked[id], ch)
		if len(f.parked[id]) == 0 {
			delete(f.parked, id)
		}
	}
}

// kick answers the parked fetches of the replicas ids.
func (f *followerFetches) kick(ids []int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		for ch := range f.parked[id] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// count is how many fetches of replica id are parked.
func (f *followerFetches) count(id int32) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parked[id])
}

// fetchRequestPartitions lists the partitions a request names, in order,
// keyed by topic id from v13 and by name before.
func fetchRequestPartitions(req *kmsg.FetchRequest) []fetchsession.Partition {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	parts := make([]fetchsession.Partition, 0, n)
	for i := range req.Topics {
		rt := &req.Topics[i]
		key := fetchsession.Key{Topic: rt.Topic}
		if req.Version >= 13 {
			key = fetchsession.Key{TopicID: rt.TopicID}
		}
		for _, rp := range rt.Partitions {
			key.Partition = rp.Partition
			parts = append(parts, fetchsession.Partition{Key: key, Request: fetchsession.Request{
				FetchOffset:        rp.FetchOffset,
				LogStartOffset:     rp.LogStartOffset,
				MaxBytes:           rp.PartitionMaxBytes,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
				LastFetchedEpoch:   rp.LastFetchedEpoch,
			}})
		}
	}
	return parts
}

// forgottenPartitions lists the partitions a request drops from its
// session.
func forgottenPartitions(req *kmsg.FetchRequest) []fetchsession.Key {
	var keys []fetchsession.Key
	for _, ft := range req.ForgottenTopics {
		key := fetchsession.Key{Topic: ft.Topic}
		if req.Version >= 13 {
			key = fetchsession.Key{TopicID: ft.TopicID}
		}
		for _, p := range ft.Partitions {
			key.Partition = p
			keys = append(keys, key)
		}
	}
	return keys
}

// fetchRead is the reading of a fetch's partitions.
type fetchRead struct {
	replicaID int32 // -1: a consumer
	budget    int   // max_bytes
	// parts answers each partition of the fetch context, in order;
	// names are their topics' names ("" for an unknown topic id).
	parts []kmsg.FetchResponseTopicPartition
	names []string
	// ps are the partitions read (nil: refused before reading), and
	// moves their Partition.Moves when last read.
	ps    []*replica.Partition
	moves []uint64
	// watch are the indexes of the partitions read, whose changes a
	// parked fetch waits for.
	watch []int
	// total is how many record bytes parts hold.
	total int
	// urgent: reading a partition failed or found a diverging epoch
	// (waiting would only delay the news).
	urgent bool
	// files, when not nil, hold each partition's batches instead of its
	// RecordBatches: slices of segment files, released by whoever holds
	// them last (the connection's writer, once they are sent).
	files []*storage.FileSlice
}

// recordBytes is the size of partition i's batches.
func (r *fetchRead) recordBytes(i int) int {
	if r.files != nil && r.files[i] != nil {
		return r.files[i].Len()
	}
	return len(r.parts[i].RecordBatches)
}

// releaseFiles releases the files of a read that is not answered.
func (r *fetchRead) releaseFiles() {
	for i, f := range r.files {
		if f != nil {
			f.Release()
			r.files[i] = nil
		}
	}
}

// fetchOnce reads every partition of a fetch once, for a consumer
// (replicaID -1) or a follower, of the topics readable allows.
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, parts []fetchsession.Partition, replicaID int32, readable func(topic string) bool, files bool) *fetchRead {
	img := b.cfg.Image()
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = int(^uint32(0) >> 1)
	}
	r := &fetchRead{replicaID: replicaID, budget: budget,
		parts: make([]kmsg.FetchResponseTopicPartition, len(parts)), names: make([]string, len(parts)),
		ps: make([]*replica.Partition, len(parts)), moves: make([]uint64, len(parts))}
	if files {
		r.files = make([]*storage.FileSlice, len(parts))
	}
	r.watch = make([]int, 0, len(parts))
	var t *metadata.TopicImage
	var known bool
	for i, fp := range parts {
		if i == 0 || fp.TopicID != parts[i-1].TopicID || fp.Topic != parts[i-1].Topic {
			if req.Version >= 13 {
				t, known = img.TopicByID(metadata.Uuid(fp.TopicID))
			} else {
				t, known = img.Topic(fp.Topic)
			}
		}
		sp := &r.parts[i]
		resetFetchPartition(sp, fp.Partition)
		name := fp.Topic
		if known {
			name = t.Name
		}
		r.names[i] = name
		if (known || req.Version < 13 || replicaID >= 0) && !readable(name) {
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			continue
		}
		if !known {
			sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if req.Version >= 13 {
				sp.ErrorCode = kerr.UnknownTopicID.Code
			}
			continue
		}
		p, ok := b.cfg.Replicas.Partition(t.Name, fp.Partition)
		if !ok {
			sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if fp.Partition >= 0 && int(fp.Partition) < len(t.Partitions) {
				// In the metadata, so read, and not led here.
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				r.urgent = true
			}
			continue
		}
		r.ps[i] = p
		r.watch = append(r.watch, i)
		b.readPartition(req, r, i, fp.Request)
	}
	return r
}

// resetFetchPartition makes sp the answer of a partition not read yet.
func resetFetchPartition(sp *kmsg.FetchResponseTopicPartition, partition int32) {
	sp.Default()
	sp.Partition = partition
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	// Records are nullable on the wire, but Kafka always sends a
	// (possibly empty) record set, and librdkafka rejects a null one
	// ("invalid MessageSetSize -1").
	sp.RecordBatches = []byte{}
}

// readPartition reads partition i of r (again), replacing its answer.
func (b *Broker) readPartition(req *kmsg.FetchRequest, r *fetchRead, i int, rp fetchsession.Request) {
	sp, p := &r.parts[i], r.ps[i]
	r.total -= r.recordBytes(i)
	if r.files != nil && r.files[i] != nil {
		r.files[i].Release()
		r.files[i] = nil
	}
	resetFetchPartition(sp, sp.Partition)
	r.moves[i] = p.Moves()
	maxBytes := min(int(rp.MaxBytes), r.budget-r.total)
	var n int
	switch {
	case r.replicaID >= 0:
		var file **storage.FileSlice
		if r.files != nil {
			file = &r.files[i]
		}
		n = b.fetchForFollower(p, r.replicaID, rp, sp, file, maxBytes)
	case !p.IsLeader():
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
	case r.files != nil:
		n = b.fetchPartitionSlice(p, rp, sp, &r.files[i], maxBytes, r.total == 0, req.IsolationLevel == 1)
	default:
		n = b.fetchPartition(p, rp, sp, maxBytes, r.total == 0, req.IsolationLevel == 1)
	}
	r.total += n
	r.urgent = r.urgent || sp.ErrorCode != 0 || sp.DivergingEpoch.Epoch >= 0
}

// fetchResponse completes the fetch context with what was read and
// builds the response: every partition read, except that an incremental
// response leaves out those with nothing new. Consecutive partitions of
// one topic share a topic entry, as in Kafka's FetchResponse.
func (b *Broker) fetchResponse(req *kmsg.FetchRequest, fctx *fetchsession.Context, r *fetchRead) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.Version = req.Version
	results := make([]fetchsession.Result, len(r.parts))
	var tm *metrics.TopicCounters // BrokerTopicMetrics of the topic, resolved once
	for i := range r.parts {
		sp := &r.parts[i]
		if r.ps[i] != nil {
			tm = b.cfg.Metrics.Fetched(tm, r.names[i], r.recordBytes(i), sp.ErrorCode, r.replicaID >= 0)
		}
		results[i] = fetchsession.Result{RecordBytes: r.recordBytes(i), HighWatermark: sp.HighWatermark,
			LogStartOffset: sp.LogStartOffset, ErrorCode: sp.ErrorCode, PreferredReplica: sp.PreferredReadReplica,
			Diverging: sp.DivergingEpoch.Epoch >= 0}
	}
	var include []bool
	resp.SessionID, resp.ErrorCode, include = fctx.Respond(results, b.cfg.Now().UnixMilli())
	if resp.ErrorCode != 0 {
		r.releaseFiles()
		return resp
	}
	var withFiles *wire.FetchWithFiles
	if r.files != nil {
		withFiles = &wire.FetchWithFiles{FetchResponse: resp, Files: make([]wire.FileRecords, 0, len(fctx.Partitions))}
	}
	var prev *fetchsession.Partition
	for i := range fctx.Partitions {
		if include != nil && !include[i] {
			if r.files != nil && r.files[i] != nil {
				r.files[i].Release()
			}
			continue
		}
		if withFiles != nil {
			var f wire.FileRecords
			if r.files[i] != nil {
				f = r.files[i]
			}
			withFiles.Files = append(withFiles.Files, f)
		}
		fp := &fctx.Partitions[i]
		if prev == nil || fp.TopicID != prev.TopicID || fp.Topic != prev.Topic {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = r.names[i], fp.TopicID
			st.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, topicRun(fctx.Partitions, i))
			resp.Topics = append(resp.Topics, st)
		}
		prev = fp
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, r.parts[i])
	}
	if withFiles != nil {
		return withFiles
	}
	return resp
}

// topicRun is how many partitions from parts[i] on belong to its topic,
// in a row: the most a response's topic entry holds.
func topicRun(parts []fetchsession.Partition, i int) int {
	n := 1
	for j := i + 1; j < len(parts) && parts[j].TopicID == parts[i].TopicID && parts[j].Topic == parts[i].Topic; j++ {
		n++
	}
	return n
}

// fetchPartitionSlice is fetchPartition with the batches left in their
// segment file: *file is set to them.
func (b *Broker) fetchPartitionSlice(p *replica.Partition, rp fetchsession.Request, sp *kmsg.FetchResponseTopicPartition, file **storage.FileSlice, maxBytes int, first, readCommitted bool) int {
	off := p.Offsets()
	sp.HighWatermark = off.HighWatermark
	sp.LastStableOffset = off.LastStableOffset
	sp.LogStartOffset = off.LogStartOffset
	if err := replica.CheckLeaderEpoch(rp.CurrentLeaderEpoch, off.LeaderEpoch); err != nil {
		sp.ErrorCode = b.errCode(err, "fetch")
		return 0
	}
	slice, snap, aborted, err := p.ReadIsolatedSlice(rp.FetchOffset, maxBytes, first, readCommitted)
	sp.HighWatermark = snap.HighWatermark
	sp.LastStableOffset = snap.LastStableOffset
	sp.LogStartOffset = snap.LogStartOffset
	if err != nil {
		sp.ErrorCode = b.errCode(err, "fetch")
		return 0
	}
	setAbortedTransactions(sp, aborted, readCommitted)
	return setSlice(sp, file, slice)
}

// setSlice puts the batches of slice in a partition's answer: in *file,
// or in RecordBatches when the storage read them into memory. It returns
// their size.
func setSlice(sp *kmsg.FetchResponseTopicPartition, file **storage.FileSlice, slice *storage.FileSlice) int {
	if slice == nil {
		return 0
	}
	if b := slice.Bytes(); b != nil {
		slice.Release()
		sp.RecordBatches = b
		return len(b)
	}
	*file = slice
	return slice.Len()
}

// setAbortedTransactions sets a read_committed answer's aborted
// transactions.
func setAbortedTransactions(sp *kmsg.FetchResponseTopicPartition, aborted []replica.AbortedTxn, readCommitted bool) {
	if !readCommitted {
		return
	}
	// An empty list rather than null, as Kafka answers read_committed.
	sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(aborted))
	for _, a := range aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		sp.AbortedTransactions = append(sp.AbortedTransactions, at)
	}
}

// fetchPartition fills one partition's answer and returns its byte count.
func (b *Broker) fetchPartition(p *replica.Partition, rp fetchsession.Request, sp *kmsg.FetchResponseTopicPartition, maxBytes int, first, readCommitted bool) int {
	off := p.Offsets()
	sp.HighWatermark = off.HighWatermark
	sp.LastStableOffset = off.LastStableOffset
	sp.LogStartOffset = off.LogStartOffset
	if err := replica.CheckLeaderEpoch(rp.CurrentLeaderEpoch, off.LeaderEpoch); err != nil {
		sp.ErrorCode = b.errCode(err, "fetch")
		return 0
	}
	data, snap, aborted, err := p.ReadIsolated(rp.FetchOffset, maxBytes, first, readCommitted)
	sp.HighWatermark = snap.HighWatermark
	sp.LastStableOffset = snap.LastStableOffset
	sp.LogStartOffset = snap.LogStartOffset
	if err != nil {
		sp.ErrorCode = b.errCode(err, "fetch")
		return 0
	}
	setAbortedTransactions(sp, aborted, readCommitted)
	if len(data) > 0 {
		sp.RecordBatches = data
	}
	return len(data)
}

// fetchForFollower serves one partition to a follower replica and
// returns the byte count. With file not nil the batches are left in
// their segment file and *file is set to them.
func (b *Broker) fetchForFollower(p *replica.Partition, replicaID int32, rp fetchsession.Request, sp *kmsg.FetchResponseTopicPartition, file **storage.FileSlice, maxBytes int) int {
	res, err := p.FetchForFollower(replica.FollowerFetch{
		ReplicaID:          replicaID,
		FetchOffset:        rp.FetchOffset,
		LastFetchedEpoch:   rp.LastFetchedEpoch,
		CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
		MaxBytes:           max(maxBytes, 0),
		Slice:              file != nil,
	})
	if err != nil {
		sp.ErrorCode = b.errCode(err, "follower fetch")
		return 0
	}
	sp.HighWatermark = res.Offsets.HighWatermark
	sp.LastStableOffset = res.Offsets.LastStableOffset
	sp.LogStartOffset = res.Offsets.LogStartOffset
	if res.Diverging != nil {
		sp.DivergingEpoch.Epoch = res.Diverging.Epoch
		sp.DivergingEpoch.EndOffset = res.Diverging.EndOffset
		return 0
	}
	if res.Slice != nil {
		return setSlice(sp, file, res.Slice)
	}
	if len(res.Records) > 0 {
		sp.RecordBatches = res.Records
	}
	return len(res.Records)
}

// newFetchSessions is the broker's fetch session cache, of
// max.incremental.fetch.session.cache.slots sessions (Kafka's default
// without a configuration).
func newFetchSessions(cfg *config.Config) *fetchsession.Cache {
	slots := 1000
	if cfg != nil {
		slots = cfg.MaxIncrementalFetchSessionCacheSlots
	}
	return fetchsession.NewCache(slots)
}

// fetchReplicaID is the replica a Fetch comes from: a follower's node id,
// or -1 for a consumer (v15+ carry it in ReplicaState).
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}
