package console

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

var errUnknownTopic = kerr.UnknownTopicOrPartition

// withMessage adds the broker's error message to its error code.
func withMessage(err error, msg string) error {
	if msg == "" || err == nil || strings.Contains(err.Error(), msg) {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}

// Browse limits.
const (
	defaultLimit = 50
	maxLimit     = 1000
	browseWait   = 3 * time.Second // how long a browse waits for records that are not there
)

// browseQuery is the message browser's form.
type browseQuery struct {
	Partition int    // -1: all
	From      string // beginning, end, offset, timestamp
	Offset    int64
	Timestamp string // RFC 3339 or milliseconds
	Limit     int
	Filter    string
}

// message is one record as the browser shows it.
type message struct {
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       shown
	Value     shown
	Headers   []header
}

type header struct {
	Key   string
	Value shown
}

// shown is a key, value or header value made readable: text as it is,
// JSON indented, Confluent's schema wire format named, anything else hex.
type shown struct {
	Text   string
	Format string // "", "text", "json", "schema id N", "binary"
	Null   bool
}

type messagesData struct {
	Topic      string
	Partitions []int32
	Query      browseQuery
	Messages   []message
	Scanned    int
	Error      string
}

func (c *Console) messages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	q, err := parseBrowse(r)
	d := messagesData{Topic: topic, Query: q}
	ctx, cancel := c.ctx(r)
	defer cancel()
	details, lerr := c.adm.ListTopics(ctx, topic)
	t, ok := details[topic]
	if lerr != nil || !ok || t.Err != nil {
		c.fail(w, r, http.StatusNotFound, "topic "+topic, cmpErr(lerr, t.Err, errUnknownTopic))
		return
	}
	d.Partitions = t.Partitions.Numbers()
	slices.Sort(d.Partitions)
	if err != nil {
		d.Error = err.Error()
		c.render(w, r, "messages", http.StatusBadRequest, page{Section: "topics", Title: topic + " messages", Data: d})
		return
	}
	if q.Partition >= 0 && !slices.Contains(d.Partitions, int32(q.Partition)) {
		d.Error = fmt.Sprintf("topic %s has no partition %d", topic, q.Partition)
		c.render(w, r, "messages", http.StatusNotFound, page{Section: "topics", Title: topic + " messages", Data: d})
		return
	}
	d.Messages, d.Scanned, err = c.browse(r, topic, d.Partitions, q)
	if err != nil {
		d.Error = err.Error()
	}
	c.render(w, r, "messages", http.StatusOK, page{Section: "topics", Title: topic + " messages", Data: d})
}

func parseBrowse(r *http.Request) (browseQuery, error) {
	q := browseQuery{Partition: -1, From: "end", Limit: defaultLimit}
	v := r.URL.Query()
	var err error
	if p := v.Get("partition"); p != "" && p != "all" {
		if q.Partition, err = strconv.Atoi(p); err != nil || q.Partition < 0 {
			return q, fmt.Errorf("partition %q is not a partition number", p)
		}
	}
	if f := v.Get("from"); f != "" {
		q.From = f
	}
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit <= 0 {
			return q, fmt.Errorf("limit %q is not a positive number", l)
		}
		q.Limit = min(q.Limit, maxLimit)
	}
	q.Filter = v.Get("filter")
	q.Timestamp = v.Get("timestamp")
	switch q.From {
	case "beginning", "end":
	case "offset":
		if q.Offset, err = strconv.ParseInt(v.Get("offset"), 10, 64); err != nil || q.Offset < 0 {
			return q, fmt.Errorf("offset %q is not an offset", v.Get("offset"))
		}
	case "timestamp":
		if _, err := parseTimestamp(q.Timestamp); err != nil {
			return q, err
		}
	default:
		return q, fmt.Errorf("from %q: want beginning, end, offset or timestamp", q.From)
	}
	return q, nil
}

// parseTimestamp takes milliseconds since the epoch or an RFC 3339 time
// (the seconds and zone may be left out: 2026-12-02T10:00 is UTC).
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp %q: want milliseconds or a time like 2026-12-02T10:00:00Z", s)
}

// browse reads up to q.Limit records of each chosen partition from the
// position q names, without a group, and keeps those that match the
// filter. It stops at the end offsets it saw when it began, so it never
// waits for records that are not there.
func (c *Console) browse(r *http.Request, topic string, all []int32, q browseQuery) ([]message, int, error) {
	parts := all
	if q.Partition >= 0 {
		parts = []int32{int32(q.Partition)}
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	starts, err := c.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, 0, err
	}
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, 0, err
	}
	var at kadm.ListedOffsets
	if q.From == "timestamp" {
		ms, _ := parseTimestamp(q.Timestamp)
		if at, err = c.adm.ListOffsetsAfterMilli(ctx, ms, topic); err != nil {
			return nil, 0, err
		}
	}
	offsets := map[int32]kgo.Offset{}
	stop := map[int32]int64{} // the end offset of each partition read
	for _, p := range parts {
		s, ok1 := starts.Lookup(topic, p)
		e, ok2 := ends.Lookup(topic, p)
		if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
			return nil, 0, fmt.Errorf("partition %d: %v", p, cmpErr(s.Err, e.Err, errors.New("no offsets")))
		}
		from := s.Offset
		switch q.From {
		case "end":
			from = max(s.Offset, e.Offset-int64(q.Limit))
		case "offset":
			from = min(max(q.Offset, s.Offset), e.Offset)
		case "timestamp":
			if o, ok := at.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
				from = o.Offset
			} else {
				from = e.Offset
			}
		}
		if from < e.Offset {
			offsets[p] = kgo.NewOffset().At(from)
			stop[p] = e.Offset
		}
	}
	if len(offsets) == 0 {
		return nil, 0, nil
	}
	opts := append(slices.Clone(c.cfg.ClientOpts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	var (
		out     []message
		scanned int
		taken   = map[int32]int{}
	)
	waitCtx, waitCancel := context.WithTimeout(ctx, browseWait)
	defer waitCancel()
	for len(stop) > 0 {
		fs := cl.PollFetches(waitCtx)
		if waitCtx.Err() != nil {
			break
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, waitCtx.Err()) {
				return out, scanned, fmt.Errorf("partition %d: %w", fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(rec *kgo.Record) {
			end, open := stop[rec.Partition]
			if !open {
				return
			}
			if rec.Offset >= end {
				delete(stop, rec.Partition)
				return
			}
			scanned++
			if rec.Offset+1 >= end {
				delete(stop, rec.Partition)
			}
			m := show(rec)
			if !m.matches(q.Filter) || taken[rec.Partition] >= q.Limit {
				return
			}
			taken[rec.Partition]++
			out = append(out, m)
		})
	}
	slices.SortFunc(out, func(a, b message) int {
		if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
			return c
		}
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out, scanned, nil
}

func show(rec *kgo.Record) message {
	m := message{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp, Key: showBytes(rec.Key), Value: showBytes(rec.Value)}
	for _, h := range rec.Headers {
		m.Headers = append(m.Headers, header{Key: h.Key, Value: showBytes(h.Value)})
	}
	return m
}

func showBytes(b []byte) shown {
	switch {
	case b == nil:
		return shown{Null: true}
	case len(b) >= 5 && b[0] == 0:
		// Confluent's wire format: magic 0, a 4-byte schema id, then the
		// encoding: JSON for JSON Schema (shown indented), binary for
		// Avro and Protobuf (shown as hex until the console decodes them
		// through the registry).
		format := fmt.Sprintf("schema id %d", binary.BigEndian.Uint32(b[1:5]))
		body := b[5:]
		var out bytes.Buffer
		if json.Valid(body) && json.Indent(&out, body, "", "  ") == nil {
			return shown{Text: out.String(), Format: format}
		}
		return shown{Text: hex.EncodeToString(body), Format: format}
	case json.Valid(b) && (b[0] == '{' || b[0] == '['):
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			return shown{Text: out.String(), Format: "json"}
		}
	}
	if utf8.Valid(b) {
		return shown{Text: string(b), Format: "text"}
	}
	return shown{Text: hex.EncodeToString(b), Format: "binary"}
}

// matches reports whether the filter text is in the key, the value or a
// header (case-insensitive); an empty filter matches everything.
func (m message) matches(filter string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	in := func(s shown) bool { return strings.Contains(strings.ToLower(s.Text), f) }
	if in(m.Key) || in(m.Value) {
		return true
	}
	for _, h := range m.Headers {
		if strings.Contains(strings.ToLower(h.Key), f) || in(h.Value) {
			return true
		}
	}
	return false
}

// produce writes one record from the browser's form.
func (c *Console) produce(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) {
		return
	}
	topic := r.PathValue("topic")
	rec := &kgo.Record{Topic: topic, Value: []byte(r.PostForm.Get("value"))}
	if k := r.PostForm.Get("key"); k != "" {
		rec.Key = []byte(k)
	}
	for _, line := range strings.Split(r.PostForm.Get("headers"), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
	}
	partition, err := formInt(r, "partition", -1)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "produce to "+topic, err)
		return
	}
	opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0)}
	if partition >= 0 {
		rec.Partition = int32(partition)
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(append(slices.Clone(c.cfg.ClientOpts), opts...)...)
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, "produce to "+topic, err)
		return
	}
	defer cl.Close()
	ctx, cancel := c.ctx(r)
	defer cancel()
	res, err := cl.ProduceSync(ctx, rec).First()
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "produce to "+topic, err)
		return
	}
	c.done(w, r, c.path("topics", topic, "messages"), fmt.Sprintf("produced to partition %d at offset %d", res.Partition, res.Offset))
}
