package restproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer is one v2 consumer instance: a franz-go consumer of its group,
// made at the first subscription or assignment. Records polled from the
// cluster but not yet answered wait in pending; positions are the next
// offsets after the records answered, which is what a commit without
// offsets commits.
type consumer struct {
	p         *Proxy
	group, id string
	// owner is the user who created the instance, with principal
	// propagation ("" otherwise); only the owner may use it, and it
	// talks to the cluster with the owner's login (adm, loginOpts).
	owner      string
	adm        *kadm.Client
	loginOpts  []kgo.Opt
	format     *format
	reset      kgo.Offset
	autoCommit bool
	minBytes   int32
	reqTimeout time.Duration
	lastUsed   atomic.Int64 // unix nanoseconds

	// mu serializes the instance's requests.
	mu        sync.Mutex
	cl        *kgo.Client // nil before subscribe or assign
	topics    []string    // subscription
	pattern   string      // subscription by pattern
	assigned  []topicPartition
	pending   []*kgo.Record
	positions map[string]map[int32]int64
	closed    bool

	// revoked collects partitions the group took away (franz-go's
	// callbacks, which may run while mu is held: Close leaves the group
	// under it); the next poll drops their pending records and positions,
	// so nothing is answered or committed for a partition no longer
	// owned. revokedMu is never held while taking mu.
	revokedMu sync.Mutex
	revoked   map[string][]int32
}

type topicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type topicPartitionOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
}

var (
	errAlreadyExists = &apiError{409, 40902, "Consumer with specified consumer ID already exists in the specified consumer group."}
	errIllegalState  = func(msg string) error { return errf(409, 40903, "Illegal state: %s", msg) }
)

func (p *Proxy) routesConsumers(h func(string, func(http.ResponseWriter, *http.Request) error)) {
	const inst = "/consumers/{group}/instances/{instance}"
	h("POST /consumers/{group}", p.createConsumer)
	h("DELETE "+inst, p.deleteConsumer)
	h("POST "+inst+"/subscription", p.withConsumer((*consumer).subscribe))
	h("GET "+inst+"/subscription", p.withConsumer((*consumer).subscription))
	h("DELETE "+inst+"/subscription", p.withConsumer((*consumer).unsubscribe))
	h("POST "+inst+"/assignments", p.withConsumer((*consumer).assign))
	h("GET "+inst+"/assignments", p.withConsumer((*consumer).assignments))
	h("POST "+inst+"/positions", p.withConsumer((*consumer).seek))
	h("POST "+inst+"/positions/beginning", p.withConsumer((*consumer).seekBeginning))
	h("POST "+inst+"/positions/end", p.withConsumer((*consumer).seekEnd))
	h("POST "+inst+"/offsets", p.withConsumer((*consumer).commit))
	h("GET "+inst+"/offsets", p.withConsumer((*consumer).committed))
	h("GET "+inst+"/records", p.withConsumer((*consumer).records))
}

// v2Body checks the content type of a consumer request that has a body.
func v2Body(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength <= 0 {
		return nil
	}
	if !slices.Contains(v2Accept, mediaType(ct)) {
		return errUnsupportedType
	}
	return nil
}

// withConsumer runs f on the instance of the path, under its lock.
func (p *Proxy) withConsumer(f func(*consumer, http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if r.Method == http.MethodPost {
			if err := v2Body(r); err != nil {
				return err
			}
		}
		c := p.instance(r.PathValue("group"), r.PathValue("instance"))
		if c == nil || !c.ownedBy(r) {
			return errInstanceNotFound
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return errInstanceNotFound
		}
		defer c.lastUsed.Store(time.Now().UnixNano())
		return f(c, w, r)
	}
}

// ownedBy reports whether the request's user may use the instance: with
// principal propagation only its creator may, as the instance reads and
// commits as that user.
func (c *consumer) ownedBy(r *http.Request) bool {
	if c.owner == "" {
		return true
	}
	pr := principalOf(r.Context())
	return pr != nil && pr.name == c.owner
}

func (p *Proxy) instance(group, id string) *consumer {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.mu.consumers[group][id]
	if c != nil {
		c.lastUsed.Store(time.Now().UnixNano())
	}
	return c
}

// configValue reads a create request's setting, written as a JSON string
// or number.
func configValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func (p *Proxy) createConsumer(w http.ResponseWriter, r *http.Request) error {
	if err := v2Body(r); err != nil {
		return err
	}
	var req map[string]json.RawMessage
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	invalid := func(format string, args ...any) error {
		return errf(422, 42204, "Invalid consumer configuration: "+format, args...)
	}
	c := &consumer{p: p, group: r.PathValue("group"), format: formats["binary"], reset: kgo.NewOffset().AtEnd(),
		autoCommit: true, minBytes: 1, reqTimeout: DefaultConsumerRequestTimeout, positions: map[string]map[int32]int64{},
		adm: p.admin(r.Context())}
	if pr := principalOf(r.Context()); pr != nil && pr.cl != nil {
		c.owner, c.loginOpts = pr.name, pr.opts
	}
	for k, raw := range req {
		v := configValue(raw)
		if string(raw) == "null" {
			continue
		}
		switch k {
		case "name", "id":
			c.id = v
		case "format":
			f, ok := formats[v]
			if !ok {
				return invalid("format %q is not one of binary, json, avro, jsonschema, protobuf", v)
			}
			c.format = f
		case "auto.offset.reset":
			switch v {
			case "earliest", "smallest":
				c.reset = kgo.NewOffset().AtStart()
			case "latest", "largest":
				c.reset = kgo.NewOffset().AtEnd()
			case "none":
				c.reset = kgo.NewOffset().AtCommitted()
			default:
				return invalid("auto.offset.reset %q is not earliest, latest or none", v)
			}
		case "auto.commit.enable":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalid("auto.commit.enable %q is not true or false", v)
			}
			c.autoCommit = b
		case "fetch.min.bytes":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return invalid("fetch.min.bytes %q is not a byte count", v)
			}
			c.minBytes = int32(n)
		case "consumer.request.timeout.ms":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return invalid("consumer.request.timeout.ms %q is not milliseconds", v)
			}
			c.reqTimeout = time.Duration(n) * time.Millisecond
		}
	}
	if c.id == "" {
		var b [8]byte
		rand.Read(b[:])
		c.id = "rest-consumer-" + hex.EncodeToString(b[:])
	}
	c.lastUsed.Store(time.Now().UnixNano())
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return errf(503, 503, "the proxy is shutting down")
	}
	g := p.mu.consumers[c.group]
	if g == nil {
		g = map[string]*consumer{}
		p.mu.consumers[c.group] = g
	}
	if g[c.id] != nil {
		p.mu.Unlock()
		return errAlreadyExists
	}
	g[c.id] = c
	p.mu.Unlock()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	writeJSON(w, 200, v2Type, map[string]string{"instance_id": c.id,
		"base_uri": scheme + "://" + r.Host + "/consumers/" + c.group + "/instances/" + c.id})
	return nil
}

func (p *Proxy) deleteConsumer(w http.ResponseWriter, r *http.Request) error {
	if c := p.instance(r.PathValue("group"), r.PathValue("instance")); c == nil || !c.ownedBy(r) {
		return errInstanceNotFound
	}
	c := p.remove(r.PathValue("group"), r.PathValue("instance"))
	if c == nil {
		return errInstanceNotFound
	}
	c.close()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// remove takes an instance out of the table; the caller closes it.
func (p *Proxy) remove(group, id string) *consumer {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.mu.consumers[group][id]
	if c != nil {
		delete(p.mu.consumers[group], id)
		if len(p.mu.consumers[group]) == 0 {
			delete(p.mu.consumers, group)
		}
	}
	return c
}

// expireLoop closes instances idle for longer than
// Config.ConsumerInstanceTimeout.
func (p *Proxy) expireLoop() {
	defer close(p.done)
	t := time.NewTicker(max(min(p.cfg.ConsumerInstanceTimeout/4, time.Second), time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			var idle []*consumer
			p.mu.Lock()
			for _, g := range p.mu.consumers {
				for _, c := range g {
					if now.Sub(time.Unix(0, c.lastUsed.Load())) > p.cfg.ConsumerInstanceTimeout {
						idle = append(idle, c)
					}
				}
			}
			p.mu.Unlock()
			for _, c := range idle {
				if p.remove(c.group, c.id) == c {
					p.logger().Info("rest proxy: consumer instance expired", "group", c.group, "instance", c.id)
					c.close()
				}
			}
		}
	}
}

// close commits what was answered when auto commit is on, and leaves the
// group.
func (c *consumer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.stopLocked()
}

// stopLocked ends the current subscription or assignment.
func (c *consumer) stopLocked() {
	if c.cl == nil {
		return
	}
	if c.autoCommit {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.commitLocked(ctx, c.positions); err != nil {
			c.p.logger().Warn("rest proxy: committing on close", "group", c.group, "instance", c.id, "err", err)
		}
		cancel()
	}
	c.cl.Close()
	c.cl, c.topics, c.pattern, c.assigned, c.pending = nil, nil, "", nil, nil
	c.positions = map[string]map[int32]int64{}
}

func (c *consumer) clientOpts() []kgo.Opt {
	return append(append(slices.Clone(c.p.cfg.ClientOpts), c.loginOpts...),
		kgo.ClientID("samsa-rest-proxy"),
		kgo.ConsumeResetOffset(c.reset),
		kgo.FetchMinBytes(c.minBytes))
}

func (c *consumer) subscribe(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Topics       []string `json:"topics"`
		TopicPattern string   `json:"topic_pattern"`
	}
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if (len(req.Topics) == 0) == (req.TopicPattern == "") {
		return errf(409, 40903, "Illegal state: subscription to topics or topic pattern must be supplied")
	}
	if len(c.assigned) > 0 {
		return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive")
	}
	// Commits are the instance's own (commitLocked): only what was
	// answered is ever committed.
	opts := append(c.clientOpts(), kgo.ConsumerGroup(c.group), kgo.DisableAutoCommit(),
		kgo.OnPartitionsRevoked(c.revoke), kgo.OnPartitionsLost(c.revoke))
	if req.TopicPattern != "" {
		if _, err := regexp.Compile(req.TopicPattern); err != nil {
			return errf(422, 422, "invalid topic_pattern: %v", err)
		}
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(req.TopicPattern))
	} else {
		opts = append(opts, kgo.ConsumeTopics(req.Topics...))
	}
	c.stopLocked()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return kafkaError(err)
	}
	c.cl, c.topics, c.pattern = cl, req.Topics, req.TopicPattern
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *consumer) subscription(w http.ResponseWriter, r *http.Request) error {
	topics := slices.Clone(c.topics)
	if c.pattern != "" && c.cl != nil {
		topics = append(topics, c.cl.GetConsumeTopics()...)
	}
	if topics == nil {
		topics = []string{}
	}
	writeJSON(w, 200, v2Type, map[string]any{"topics": topics})
	return nil
}

func (c *consumer) unsubscribe(w http.ResponseWriter, r *http.Request) error {
	c.stopLocked()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// assign consumes the given partitions directly, from the group's
// committed offsets or else by auto.offset.reset.
func (c *consumer) assign(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Partitions []topicPartition `json:"partitions"`
	}
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if len(c.topics) > 0 || c.pattern != "" {
		return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive")
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	committed, err := c.adm.FetchOffsets(ctx, c.group)
	if err != nil {
		return kafkaError(err)
	}
	parts := map[string]map[int32]kgo.Offset{}
	for _, tp := range req.Partitions {
		if parts[tp.Topic] == nil {
			parts[tp.Topic] = map[int32]kgo.Offset{}
		}
		o := c.reset
		if or, ok := committed.Lookup(tp.Topic, tp.Partition); ok && or.Err == nil && or.At >= 0 {
			o = kgo.NewOffset().At(or.At)
		}
		parts[tp.Topic][tp.Partition] = o
	}
	c.stopLocked()
	if len(parts) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	cl, err := kgo.NewClient(append(c.clientOpts(), kgo.ConsumePartitions(parts))...)
	if err != nil {
		return kafkaError(err)
	}
	c.cl, c.assigned = cl, req.Partitions
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *consumer) assignments(w http.ResponseWriter, r *http.Request) error {
	out := []topicPartition{}
	if len(c.assigned) > 0 {
		out = append(out, c.assigned...)
	} else if c.cl != nil {
		ctx, cancel := reqContext(r)
		defer cancel()
		// The group's current assignment of this member.
		dg, err := c.adm.DescribeGroups(ctx, c.group)
		if err == nil {
			member, _ := c.cl.GroupMetadata()
			for _, g := range dg {
				for _, m := range g.Members {
					if m.MemberID != member {
						continue
					}
					if ca, ok := m.Assigned.AsConsumer(); ok {
						for _, t := range ca.Topics {
							for _, p := range t.Partitions {
								out = append(out, topicPartition{t.Topic, p})
							}
						}
					}
				}
			}
		}
	}
	writeJSON(w, 200, v2Type, map[string]any{"partitions": out})
	return nil
}

// seekTo moves the positions of the given partitions.
func (c *consumer) seekTo(offsets map[string]map[int32]int64) error {
	if c.cl == nil {
		return errIllegalState("No current assignment for partition")
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range offsets {
		set[t] = map[int32]kgo.EpochOffset{}
		for p, o := range ps {
			set[t][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	c.pending = slices.DeleteFunc(c.pending, func(r *kgo.Record) bool {
		_, ok := offsets[r.Topic][r.Partition]
		return ok
	})
	if len(c.assigned) > 0 {
		// franz-go's SetOffsets skips partitions no poll has returned
		// yet (a seek right after assign): consume the sought
		// partitions afresh from the offsets instead (partitions not
		// assigned are skipped, as SetOffsets skips them).
		remove := map[string][]int32{}
		add := map[string]map[int32]kgo.Offset{}
		for _, tp := range c.assigned {
			o, ok := offsets[tp.Topic][tp.Partition]
			if !ok {
				continue
			}
			if add[tp.Topic] == nil {
				add[tp.Topic] = map[int32]kgo.Offset{}
			}
			remove[tp.Topic] = append(remove[tp.Topic], tp.Partition)
			add[tp.Topic][tp.Partition] = kgo.NewOffset().At(o)
		}
		c.cl.RemoveConsumePartitions(remove)
		c.cl.AddConsumePartitions(add)
		return nil
	}
	c.cl.SetOffsets(set)
	return nil
}

func (c *consumer) seek(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Offsets []topicPartitionOffset `json:"offsets"`
	}
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	offsets := map[string]map[int32]int64{}
	for _, o := range req.Offsets {
		if offsets[o.Topic] == nil {
			offsets[o.Topic] = map[int32]int64{}
		}
		offsets[o.Topic][o.Partition] = o.Offset
	}
	if err := c.seekTo(offsets); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (c *consumer) seekBeginning(w http.ResponseWriter, r *http.Request) error {
	return c.seekListed(w, r, c.adm.ListStartOffsets)
}

func (c *consumer) seekEnd(w http.ResponseWriter, r *http.Request) error {
	return c.seekListed(w, r, c.adm.ListEndOffsets)
}

func (c *consumer) seekListed(w http.ResponseWriter, r *http.Request, list func(context.Context, ...string) (kadm.ListedOffsets, error)) error {
	var req struct {
		Partitions []topicPartition `json:"partitions"`
	}
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	var topics []string
	for _, tp := range req.Partitions {
		topics = append(topics, tp.Topic)
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	listed, err := list(ctx, topics...)
	if err != nil {
		return kafkaError(err)
	}
	offsets := map[string]map[int32]int64{}
	for _, tp := range req.Partitions {
		lo, ok := listed.Lookup(tp.Topic, tp.Partition)
		if !ok || lo.Err != nil {
			return errPartitionNotFound
		}
		if offsets[tp.Topic] == nil {
			offsets[tp.Topic] = map[int32]int64{}
		}
		offsets[tp.Topic][tp.Partition] = lo.Offset
	}
	if err := c.seekTo(offsets); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// commitLocked commits next-offsets for the group: through the group
// member when subscribed, as a simple consumer when assigned.
func (c *consumer) commitLocked(ctx context.Context, next map[string]map[int32]int64) error {
	if len(next) == 0 {
		return nil
	}
	if len(c.assigned) == 0 && c.cl != nil {
		set := map[string]map[int32]kgo.EpochOffset{}
		for t, ps := range next {
			set[t] = map[int32]kgo.EpochOffset{}
			for p, o := range ps {
				set[t][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
			}
		}
		var cerr error
		c.cl.CommitOffsetsSync(ctx, set, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				cerr = commitErrors(resp)
			}
		})
		return cerr
	}
	os := kadm.Offsets{}
	for t, ps := range next {
		for p, o := range ps {
			os.Add(kadm.Offset{Topic: t, Partition: p, At: o, LeaderEpoch: -1})
		}
	}
	return c.adm.CommitAllOffsets(ctx, c.group, os)
}

// commit serves POST .../offsets. Confluent's v2 offsets name the last
// record consumed: the group stores the next offset, offset+1. Without a
// body it commits every record answered so far.
func (c *consumer) commit(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Offsets []topicPartitionOffset `json:"offsets"`
	}
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	next := c.positions
	if len(req.Offsets) > 0 {
		next = map[string]map[int32]int64{}
		for _, o := range req.Offsets {
			if next[o.Topic] == nil {
				next[o.Topic] = map[int32]int64{}
			}
			next[o.Topic][o.Partition] = o.Offset + 1
		}
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	if err := c.commitLocked(ctx, next); err != nil {
		return kafkaError(err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// committed serves GET .../offsets: the group's committed offsets of the
// partitions in the body.
func (c *consumer) committed(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Partitions []topicPartition `json:"partitions"`
	}
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	committed, err := c.adm.FetchOffsets(ctx, c.group)
	if err != nil {
		return kafkaError(err)
	}
	out := []topicPartitionOffset{}
	for _, tp := range req.Partitions {
		o := topicPartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1}
		if or, ok := committed.Lookup(tp.Topic, tp.Partition); ok && or.Err == nil {
			o.Offset = or.At
			o.Metadata = or.Metadata
		}
		out = append(out, o)
	}
	writeJSON(w, 200, v2Type, map[string]any{"offsets": out})
	return nil
}

type v2Record struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
}

// records serves GET .../records: what is buffered, or else what arrives
// within the timeout, up to max_bytes of keys and values (at least one
// record, so a record larger than max_bytes cannot stall the instance).
func (c *consumer) records(w http.ResponseWriter, r *http.Request) error {
	ct := "application/vnd.kafka." + c.format.name + ".v2+json"
	if !accepts(r, ct) {
		return errFormatMismatch
	}
	timeout := c.reqTimeout
	if s := r.URL.Query().Get("timeout"); s != "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			return errf(400, 400, "timeout %q is not milliseconds", s)
		}
		timeout = min(timeout, time.Duration(ms)*time.Millisecond)
	}
	maxBytes := int64(DefaultConsumerMaxBytes)
	if s := r.URL.Query().Get("max_bytes"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errf(400, 400, "max_bytes %q is not a byte count", s)
		}
		maxBytes = min(maxBytes, n)
	}
	if c.cl == nil {
		return errIllegalState("Consumer is not subscribed to any topics or assigned any partitions")
	}
	c.dropRevokedLocked()
	if c.autoCommit {
		// As a Kafka consumer's auto commit at poll: what the previous
		// answers delivered.
		ctx, cancel := reqContext(r)
		err := c.commitLocked(ctx, c.positions)
		cancel()
		if err != nil {
			c.p.logger().Warn("rest proxy: auto commit", "group", c.group, "instance", c.id, "err", err)
		}
	}
	if len(c.pending) == 0 {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		fs := c.cl.PollFetches(ctx)
		cancel()
		var errs []error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		})
		c.pending = fs.Records()
		if len(c.pending) == 0 && len(errs) > 0 {
			return kafkaError(errors.Join(errs...))
		}
	}
	out := []v2Record{}
	var size int64
	n := 0
	for _, rec := range c.pending {
		size += int64(len(rec.Key) + len(rec.Value))
		if n > 0 && size > maxBytes {
			break
		}
		k, err := c.format.decode(r.Context(), c.p, rec.Key)
		if err != nil {
			return err
		}
		v, err := c.format.decode(r.Context(), c.p, rec.Value)
		if err != nil {
			return err
		}
		out = append(out, v2Record{Topic: rec.Topic, Key: k, Value: v, Partition: rec.Partition, Offset: rec.Offset})
		if c.positions[rec.Topic] == nil {
			c.positions[rec.Topic] = map[int32]int64{}
		}
		c.positions[rec.Topic][rec.Partition] = rec.Offset + 1
		n++
	}
	c.pending = c.pending[n:]
	writeJSON(w, 200, ct, out)
	return nil
}

// commitErrors is the first partition error of an OffsetCommit answer.
func commitErrors(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// instanceCount is the number of open consumer instances.
func (p *Proxy) instanceCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, g := range p.mu.consumers {
		n += len(g)
	}
	return n
}

func (c *consumer) revoke(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.revokedMu.Lock()
	defer c.revokedMu.Unlock()
	if c.revoked == nil {
		c.revoked = map[string][]int32{}
	}
	for t, ps := range lost {
		c.revoked[t] = append(c.revoked[t], ps...)
	}
}

// dropRevokedLocked forgets the pending records and positions of revoked
// partitions.
func (c *consumer) dropRevokedLocked() {
	c.revokedMu.Lock()
	revoked := c.revoked
	c.revoked = nil
	c.revokedMu.Unlock()
	for t, ps := range revoked {
		for _, p := range ps {
			delete(c.positions[t], p)
		}
		c.pending = slices.DeleteFunc(c.pending, func(r *kgo.Record) bool {
			return r.Topic == t && slices.Contains(ps, r.Partition)
		})
	}
}
