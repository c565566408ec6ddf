package controller

import (
	"context"
	"encoding/binary"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// collisionKey maps names that collide in metric names ('.' vs '_').
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// placement chooses replicas over the eligible brokers (unfenced, not in
// controlled shutdown).
type placement struct {
	brokers    []int32 // eligible, sorted; rack-alternating when racks are set
	racks      map[int32]string
	numRacks   int
	registered map[int32]bool
	eligible   map[int32]bool
}

func newPlacement(img *metadata.Image) *placement {
	p := &placement{registered: map[int32]bool{}, eligible: map[int32]bool{}, racks: map[int32]string{}}
	byRack := map[string][]int32{}
	allRacked := true
	for _, b := range img.Brokers() {
		p.registered[b.ID] = true
		if !b.Eligible() {
			continue
		}
		p.eligible[b.ID] = true
		p.brokers = append(p.brokers, b.ID)
		if b.Rack == nil {
			allRacked = false
			continue
		}
		p.racks[b.ID] = *b.Rack
		byRack[*b.Rack] = append(byRack[*b.Rack], b.ID)
	}
	if !allRacked || len(byRack) < 2 {
		p.racks = nil // rack-unaware, as Kafka when not every broker has a rack
		return p
	}
	// Kafka's rack-alternated broker list: first broker of each rack, then
	// the second of each, and so on.
	p.numRacks = len(byRack)
	names := slices.Sorted(maps.Keys(byRack))
	p.brokers = p.brokers[:0]
	for i := 0; len(p.brokers) < len(p.eligible); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				p.brokers = append(p.brokers, byRack[r][i])
			}
		}
	}
	return p
}

// place assigns count partitions of rf replicas starting at partition
// first. Leaders go round-robin from a random start over the brokers, so
// they are balanced. Without racks the followers are the next brokers in id
// order; with racks the followers are chosen as Kafka's rack-aware
// assignment does, each on a rack that has no replica yet while there is
// one, with a shift per round so followers spread too.
func (p *placement) place(first, count int32, rf int16, start int) ([][]int32, *wire.Error) {
	n := len(p.brokers)
	if int(rf) > n {
		return nil, wire.Errorf(kerr.InvalidReplicationFactor,
			"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, n)
	}
	out := make([][]int32, count)
	for i := range out {
		pid := int(first) + i
		if p.racks == nil {
			replicas := make([]int32, rf)
			for j := range replicas {
				replicas[j] = p.brokers[(start+pid+j)%n]
			}
			out[i] = replicas
			continue
		}
		out[i] = p.placeRackAware(pid, int(rf), start)
	}
	return out, nil
}

func (p *placement) placeRackAware(pid, rf, start int) []int32 {
	n := len(p.brokers)
	firstIdx := (pid + start) % n
	shift := (start + pid/n) % n // Kafka's nextReplicaShift, random start included
	leader := p.brokers[firstIdx]
	replicas := []int32{leader}
	racks := map[string]bool{p.racks[leader]: true}
	for k := 0; len(replicas) < rf; k++ {
		b := p.brokers[(firstIdx+1+(shift*p.numRacks+k)%(n-1))%n]
		if slices.Contains(replicas, b) {
			continue
		}
		if racks[p.racks[b]] && len(racks) < p.numRacks {
			continue
		}
		replicas = append(replicas, b)
		racks[p.racks[b]] = true
	}
	return replicas
}

// checkManual validates one explicit replica list (Kafka's
// validateManualPartitionAssignment); rf < 0 means "any length".
func (p *placement) checkManual(replicas []int32, rf int) *wire.Error {
	if len(replicas) == 0 {
		return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	seen := map[int32]bool{}
	for _, r := range replicas {
		if seen[r] {
			return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", r)
		}
		seen[r] = true
		if !p.registered[r] {
			return wire.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
	}
	if rf >= 0 && len(replicas) != rf {
		return wire.Errorf(kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return nil
}

// partitionRecord builds a new partition: the ISR is the eligible
// replicas (all of them when placed by place) and the leader the first.
func (p *placement) partitionRecord(id metadata.Uuid, part int32, replicas []int32) (*metadata.PartitionRecord, *wire.Error) {
	var isr []int32
	for _, r := range replicas {
		if p.eligible[r] {
			isr = append(isr, r)
		}
	}
	if len(isr) == 0 {
		return nil, wire.Errorf(kerr.InvalidReplicaAssignment, "All brokers specified in the partition assignment for partition %d are fenced.", part)
	}
	return &metadata.PartitionRecord{PartitionID: part, TopicID: id, Replicas: replicas, ISR: isr, Leader: isr[0]}, nil
}

func (c *Controller) randomStart() int {
	var b [4]byte
	if _, err := c.cfg.Rand.Read(b[:]); err != nil {
		return 0
	}
	return int(binary.BigEndian.Uint32(b[:]) & 0x7fffffff)
}

// CreateTopics creates topics; each topic succeeds or fails on its own and
// all successful ones are written in one batch. A valid topic's
// partitions count against the requester's controller_mutation_rate
// (quotas.go), validate_only too as in Kafka: from v6 a topic the quota
// refuses answers THROTTLING_QUOTA_EXCEEDED; throttle_time_ms says how
// long the client should wait.
func (c *Controller) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := kmsg.NewPtrCreateTopicsResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	quota := c.mutationQuota(ctx, req.Version, 6)

	counts := map[string]int{}
	for _, t := range req.Topics {
		counts[t.Topic]++
	}
	var recs []metadata.Record
	var ok []int                   // indexes into resp.Topics of topics being written
	pending := map[string]string{} // collision key → name, for this request
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		var tr []metadata.Record
		switch {
		case err != nil:
			rt.ErrorCode, rt.ErrorMessage = wire.ErrorCodeAndMessage(err)
		case counts[t.Topic] > 1:
			rt.ErrorCode, rt.ErrorMessage = wire.ErrorCodeAndMessage(wire.Errorf(kerr.InvalidRequest, "Duplicate topic name."))
		default:
			var aerr *wire.Error
			tr, aerr = c.decideCreateTopic(img, &t, &rt, pending)
			if aerr == nil {
				aerr = c.recordMutations(quota, int(rt.NumPartitions))
			}
			if aerr != nil {
				rt.ErrorCode, rt.ErrorMessage = wire.ErrorCodeAndMessage(aerr)
				rt.NumPartitions, rt.ReplicationFactor, rt.TopicID = -1, -1, [16]byte{}
			} else {
				pending[collisionKey(t.Topic)] = t.Topic
				recs = append(recs, tr...)
				ok = append(ok, len(resp.Topics))
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	werr := checkUserOpSize(recs)
	if werr == nil && !req.ValidateOnly {
		werr = c.writeLocked(ctx, recs)
	}
	if werr != nil {
		code, msg := wire.ErrorCodeAndMessage(werr)
		for _, i := range ok {
			rt := &resp.Topics[i]
			rt.ErrorCode, rt.ErrorMessage = code, msg
			rt.NumPartitions, rt.ReplicationFactor, rt.TopicID = -1, -1, [16]byte{}
		}
	}
	resp.ThrottleMillis = c.throttleMillis(quota)
	return resp
}

// MaxRecordsPerUserOp bounds the metadata records one client request may
// produce (Kafka's MAX_RECORDS_PER_USER_OP): a topic of 2^31 partitions is
// refused before anything is placed, so no request can exhaust the
// controller's memory or the metadata log.
const MaxRecordsPerUserOp = 10000

// errTooLarge is Kafka's answer to an operation over MaxRecordsPerUserOp.
var errTooLarge = wire.Errorf(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")

// checkUserOpSize refuses a request whose records, all topics together,
// exceed MaxRecordsPerUserOp.
func checkUserOpSize(recs []metadata.Record) error {
	if len(recs) > MaxRecordsPerUserOp {
		return errTooLarge
	}
	return nil
}

// decideCreateTopic validates one topic against img and returns its records,
// filling the success fields of rt.
func (c *Controller) decideCreateTopic(img *metadata.Image, t *kmsg.CreateTopicsRequestTopic, rt *kmsg.CreateTopicsResponseTopic, pending map[string]string) ([]metadata.Record, *wire.Error) {
	if err := metadata.ValidateTopicName(t.Topic); err != nil {
		return nil, wire.Errorf(kerr.InvalidTopicException, "%s", err)
	}
	if t.Topic == metadata.MetadataTopicName {
		return nil, wire.Errorf(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", t.Topic)
	}
	if _, exists := img.Topic(t.Topic); exists {
		return nil, wire.Errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Topic)
	}
	key := collisionKey(t.Topic)
	if other, clash := pending[key]; clash {
		return nil, wire.Errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, other)
	}
	// Only a name with '.' or '_' can collide with another name: one
	// without has itself as its key, and the only name with that key is
	// itself (TopicAlreadyExists above). This skips a pass over every
	// topic per topic created for most names.
	if strings.ContainsAny(t.Topic, "._") {
		for _, e := range img.Topics() {
			if collisionKey(e.Name) == key {
				return nil, wire.Errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, e.Name)
			}
		}
	}
	pl := newPlacement(img)
	var assignment [][]int32
	if len(t.ReplicaAssignment) > 0 {
		var aerr *wire.Error
		if assignment, aerr = manualAssignment(pl, t); aerr != nil {
			return nil, aerr
		}
	} else {
		parts, rf := t.NumPartitions, t.ReplicationFactor
		if parts == -1 {
			parts = c.cfg.DefaultNumPartitions
		}
		if rf == -1 {
			rf = c.cfg.DefaultReplicationFactor
		}
		if parts <= 0 {
			return nil, wire.Errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if rf <= 0 {
			return nil, wire.Errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		}
		if parts > MaxRecordsPerUserOp {
			return nil, errTooLarge
		}
		var aerr *wire.Error
		if assignment, aerr = pl.place(0, parts, rf, c.randomStart()); aerr != nil {
			return nil, aerr
		}
	}
	configs := map[string]string{}
	for _, cfg := range t.Configs {
		if cfg.Value == nil {
			return nil, wire.Errorf(kerr.InvalidConfig, "Null value not supported for topic configs: %s", cfg.Name)
		}
		if c.cfg.ValidateTopicConfig != nil {
			if err := c.cfg.ValidateTopicConfig(cfg.Name, *cfg.Value); err != nil {
				return nil, wire.Errorf(kerr.InvalidConfig, "%v", err)
			}
		}
		configs[cfg.Name] = *cfg.Value
	}
	id, err := metadata.RandomUuid(c.cfg.Rand)
	if err != nil {
		return nil, wire.Errorf(kerr.UnknownServerError, "%v", err)
	}
	recs := []metadata.Record{&metadata.TopicRecord{Name: t.Topic, TopicID: id}}
	for i, replicas := range assignment {
		pr, aerr := pl.partitionRecord(id, int32(i), replicas)
		if aerr != nil {
			return nil, aerr
		}
		recs = append(recs, pr)
	}
	for _, name := range slicesSortedKeys(configs) {
		v := configs[name]
		recs = append(recs, &metadata.ConfigRecord{ResourceType: metadata.ResourceTopic, ResourceName: t.Topic, Name: name, Value: &v})
	}
	rt.TopicID = id
	rt.NumPartitions = int32(len(assignment))
	rt.ReplicationFactor = int16(len(assignment[0]))
	return recs, nil
}

func manualAssignment(pl *placement, t *kmsg.CreateTopicsRequestTopic) ([][]int32, *wire.Error) {
	if t.ReplicationFactor != -1 {
		return nil, wire.Errorf(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
	}
	if t.NumPartitions != -1 {
		return nil, wire.Errorf(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
	}
	out := make([][]int32, len(t.ReplicaAssignment))
	rf := -1
	for _, a := range t.ReplicaAssignment {
		if a.Partition < 0 || int(a.Partition) >= len(out) {
			return nil, wire.Errorf(kerr.InvalidReplicaAssignment, "Partitions should be a consecutive 0-based integer sequence")
		}
		if out[a.Partition] != nil {
			return nil, wire.Errorf(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
		}
		if err := pl.checkManual(a.Replicas, rf); err != nil {
			return nil, err
		}
		rf = len(a.Replicas)
		out[a.Partition] = slices.Clone(a.Replicas)
	}
	return out, nil
}

func slicesSortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// DeleteTopics deletes topics by name (v0-5) or by name or id (v6+), all in
// one batch; brokers serve versions 1-6. A deleted topic's configs go with
// it; each broker deletes the logs when the removal is published to it.
// Its partitions count against the requester's controller_mutation_rate
// as in CreateTopics, strictly from v5.
func (c *Controller) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	topics := req.Topics
	if len(topics) == 0 {
		for _, n := range req.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = &n
			topics = append(topics, t)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	quota := c.mutationQuota(ctx, req.Version, 5)

	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, t := range topics {
		if t.Topic != nil {
			names[*t.Topic]++
		}
		ids[t.TopicID]++
	}
	var recs []metadata.Record
	var ok []int
	deleting := map[metadata.Uuid]bool{}
	for _, t := range topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		var aerr error
		switch {
		case err != nil:
			aerr = err
		case t.Topic != nil && t.TopicID != [16]byte{}:
			aerr = wire.Errorf(kerr.InvalidRequest, "You may not specify both topic name and topic id.")
		case t.Topic == nil && t.TopicID == [16]byte{}:
			aerr = wire.Errorf(kerr.InvalidRequest, "Neither topic name nor id were specified.")
		case t.Topic != nil && names[*t.Topic] > 1:
			aerr = wire.Errorf(kerr.InvalidRequest, "Duplicate topic name.")
		case t.Topic == nil && ids[t.TopicID] > 1:
			aerr = wire.Errorf(kerr.InvalidRequest, "Duplicate topic id.")
		}
		var ti *metadata.TopicImage
		if aerr == nil {
			var found bool
			if t.Topic != nil {
				if ti, found = img.Topic(*t.Topic); !found {
					aerr = &wire.Error{Code: kerr.UnknownTopicOrPartition}
				}
			} else if ti, found = img.TopicByID(t.TopicID); !found {
				aerr = &wire.Error{Code: kerr.UnknownTopicID}
			}
		}
		if aerr == nil && deleting[ti.ID] {
			aerr = wire.Errorf(kerr.InvalidRequest, "Duplicate topic id.") // named once by name, once by id
		}
		if aerr == nil {
			if qerr := c.recordMutations(quota, len(ti.Partitions)); qerr != nil {
				aerr = qerr
			}
		}
		if aerr != nil {
			rt.ErrorCode, rt.ErrorMessage = wire.ErrorCodeAndMessage(aerr)
		} else {
			deleting[ti.ID] = true
			name := ti.Name
			rt.Topic, rt.TopicID = &name, ti.ID
			recs = append(recs, &metadata.RemoveTopicRecord{TopicID: ti.ID})
			ok = append(ok, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if werr := c.writeLocked(ctx, recs); werr != nil {
		code, msg := wire.ErrorCodeAndMessage(werr)
		for _, i := range ok {
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = code, msg
		}
	}
	resp.ThrottleMillis = c.throttleMillis(quota)
	return resp
}

// CreatePartitions adds partitions to existing topics (versions 0-3):
// counts may only grow; each broker creates the new partitions' logs when
// the change is published to it. The new partitions count against the
// requester's controller_mutation_rate as in CreateTopics, strictly from
// v3.
func (c *Controller) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)
	quota := c.mutationQuota(ctx, req.Version, 3)
	counts := map[string]int{}
	for _, t := range req.Topics {
		counts[t.Topic]++
	}
	var recs []metadata.Record
	var ok []int
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var aerr error = err
		if aerr == nil && counts[t.Topic] > 1 {
			aerr = wire.Errorf(kerr.InvalidRequest, "Duplicate topic name.")
		}
		var tr []metadata.Record
		if aerr == nil {
			var e *wire.Error
			if tr, e = c.decideCreatePartitions(img, &t); e == nil {
				e = c.recordMutations(quota, len(tr)) // one record per new partition
			}
			if e != nil {
				aerr = e
			}
		}
		if aerr != nil {
			rt.ErrorCode, rt.ErrorMessage = wire.ErrorCodeAndMessage(aerr)
		} else {
			recs = append(recs, tr...)
			ok = append(ok, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	werr := checkUserOpSize(recs)
	if werr == nil && !req.ValidateOnly {
		werr = c.writeLocked(ctx, recs)
	}
	if werr != nil {
		code, msg := wire.ErrorCodeAndMessage(werr)
		for _, i := range ok {
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = code, msg
		}
	}
	resp.ThrottleMillis = c.throttleMillis(quota)
	return resp
}

func (c *Controller) decideCreatePartitions(img *metadata.Image, t *kmsg.CreatePartitionsRequestTopic) ([]metadata.Record, *wire.Error) {
	ti, found := img.Topic(t.Topic)
	if !found {
		return nil, &wire.Error{Code: kerr.UnknownTopicOrPartition}
	}
	cur := int32(len(ti.Partitions))
	switch {
	case t.Count < cur:
		return nil, wire.Errorf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, cur, t.Count)
	case t.Count == cur:
		return nil, wire.Errorf(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
	}
	add := t.Count - cur
	if add > MaxRecordsPerUserOp {
		return nil, errTooLarge
	}
	pl := newPlacement(img)
	rf := len(ti.Partitions[0].Replicas)
	var assignment [][]int32
	if t.Assignment != nil {
		if int32(len(t.Assignment)) != add {
			return nil, wire.Errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(t.Assignment))
		}
		for _, a := range t.Assignment {
			if err := pl.checkManual(a.Replicas, rf); err != nil {
				return nil, err
			}
			assignment = append(assignment, slices.Clone(a.Replicas))
		}
	} else {
		var aerr *wire.Error
		if assignment, aerr = pl.place(cur, add, int16(rf), c.randomStart()); aerr != nil {
			return nil, aerr
		}
	}
	var recs []metadata.Record
	for i, replicas := range assignment {
		pr, aerr := pl.partitionRecord(ti.ID, cur+int32(i), replicas)
		if aerr != nil {
			return nil, aerr
		}
		recs = append(recs, pr)
	}
	return recs, nil
}

// topicAPIs are topics.go's rows of the API table (api.go).
func topicAPIs() []API {
	return []API{
		api(kmsg.CreateTopics, 2, 7, (*Controller).CreateTopics,
			func(req *kmsg.CreateTopicsRequest, err error) *kmsg.CreateTopicsResponse {
				r := req.ResponseKind().(*kmsg.CreateTopicsResponse)
				for _, t := range req.Topics {
					rt := kmsg.NewCreateTopicsResponseTopic()
					rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, wire.ErrorCode(err), failedMessage(err)
					rt.NumPartitions, rt.ReplicationFactor = -1, -1
					r.Topics = append(r.Topics, rt)
				}
				return r
			},
			func(r *kmsg.CreateTopicsResponse) bool {
				return len(r.Topics) > 0 && r.Topics[0].ErrorCode == notController
			}),
		api(kmsg.DeleteTopics, 1, 6, (*Controller).DeleteTopics,
			func(req *kmsg.DeleteTopicsRequest, err error) *kmsg.DeleteTopicsResponse {
				r := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
				add := func(name *string, id [16]byte) {
					rt := kmsg.NewDeleteTopicsResponseTopic()
					rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, wire.ErrorCode(err), failedMessage(err)
					r.Topics = append(r.Topics, rt)
				}
				for _, n := range req.TopicNames {
					add(&n, [16]byte{})
				}
				for _, t := range req.Topics {
					add(t.Topic, t.TopicID)
				}
				return r
			},
			func(r *kmsg.DeleteTopicsResponse) bool {
				return len(r.Topics) > 0 && r.Topics[0].ErrorCode == notController
			}),
		api(kmsg.CreatePartitions, 0, 3, (*Controller).CreatePartitions,
			func(req *kmsg.CreatePartitionsRequest, err error) *kmsg.CreatePartitionsResponse {
				r := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
				for _, t := range req.Topics {
					rt := kmsg.NewCreatePartitionsResponseTopic()
					rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, wire.ErrorCode(err), failedMessage(err)
					r.Topics = append(r.Topics, rt)
				}
				return r
			},
			func(r *kmsg.CreatePartitionsResponse) bool {
				return len(r.Topics) > 0 && r.Topics[0].ErrorCode == notController
			}),
	}
}
