package restproxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// v2Type is the content type of v2 answers.
const v2Type = "application/vnd.kafka.v2+json"

// v2 answers accept any of these (or */*).
var v2Accept = []string{v2Type, "application/vnd.kafka+json", "application/json"}

func (p *Proxy) routesV2() {
	h := func(pattern string, f func(http.ResponseWriter, *http.Request) error) {
		p.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if !accepts(r, v2Accept...) && !strings.HasSuffix(pattern, "/records") {
				writeError(w, errNotAcceptable)
				return
			}
			if err := f(w, r); err != nil {
				writeError(w, err)
			}
		})
	}
	h("GET /topics", p.listTopics)
	h("GET /topics/{topic}", p.getTopic)
	h("POST /topics/{topic}", p.produceV2)
	h("GET /topics/{topic}/partitions", p.listPartitions)
	h("GET /topics/{topic}/partitions/{partition}", p.getPartition)
	h("POST /topics/{topic}/partitions/{partition}", p.produceV2)
	h("GET /topics/{topic}/partitions/{partition}/offsets", p.partitionOffsets)
	h("GET /brokers", p.listBrokers)
	p.routesConsumers(h)
}

func (p *Proxy) listTopics(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := reqContext(r)
	defer cancel()
	tds, err := p.admin(ctx).ListTopics(ctx)
	if err != nil {
		return kafkaError(err)
	}
	names := tds.Names()
	slices.Sort(names)
	writeJSON(w, 200, v2Type, names)
	return nil
}

// topicDetail returns a topic's metadata, or 40401.
func (p *Proxy) topicDetail(r *http.Request, topic string) (kadm.TopicDetail, error) {
	ctx, cancel := reqContext(r)
	defer cancel()
	tds, err := p.admin(ctx).ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, kafkaError(err)
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return td, errTopicNotFound
	}
	if td.Err != nil {
		return td, kafkaError(td.Err)
	}
	return td, nil
}

type v2Replica struct {
	Broker int32 `json:"broker"`
	Leader bool  `json:"leader"`
	InSync bool  `json:"in_sync"`
}

type v2Partition struct {
	Partition int32       `json:"partition"`
	Leader    int32       `json:"leader"`
	Replicas  []v2Replica `json:"replicas"`
}

func v2PartitionOf(pd kadm.PartitionDetail) v2Partition {
	out := v2Partition{Partition: pd.Partition, Leader: pd.Leader, Replicas: []v2Replica{}}
	for _, b := range pd.Replicas {
		out.Replicas = append(out.Replicas, v2Replica{Broker: b, Leader: b == pd.Leader, InSync: slices.Contains(pd.ISR, b)})
	}
	return out
}

func v2Partitions(td kadm.TopicDetail) []v2Partition {
	out := []v2Partition{}
	for _, pd := range td.Partitions.Sorted() {
		out = append(out, v2PartitionOf(pd))
	}
	return out
}

func (p *Proxy) getTopic(w http.ResponseWriter, r *http.Request) error {
	topic := r.PathValue("topic")
	td, err := p.topicDetail(r, topic)
	if err != nil {
		return err
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	rcs, err := p.admin(ctx).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return kafkaError(err)
	}
	configs := map[string]*string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return kafkaError(rc.Err)
		}
		for _, c := range rc.Configs {
			configs[c.Key] = c.Value
		}
	}
	writeJSON(w, 200, v2Type, map[string]any{"name": topic, "configs": configs, "partitions": v2Partitions(td)})
	return nil
}

func (p *Proxy) listPartitions(w http.ResponseWriter, r *http.Request) error {
	td, err := p.topicDetail(r, r.PathValue("topic"))
	if err != nil {
		return err
	}
	writeJSON(w, 200, v2Type, v2Partitions(td))
	return nil
}

// partitionDetail returns the topic and partition of the path, or
// 40401/40402.
func (p *Proxy) partitionDetail(r *http.Request) (kadm.PartitionDetail, error) {
	td, err := p.topicDetail(r, r.PathValue("topic"))
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	part, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil {
		return kadm.PartitionDetail{}, errPartitionNotFound
	}
	pd, ok := td.Partitions[int32(part)]
	if !ok {
		return pd, errPartitionNotFound
	}
	return pd, nil
}

func (p *Proxy) getPartition(w http.ResponseWriter, r *http.Request) error {
	pd, err := p.partitionDetail(r)
	if err != nil {
		return err
	}
	writeJSON(w, 200, v2Type, v2PartitionOf(pd))
	return nil
}

func (p *Proxy) partitionOffsets(w http.ResponseWriter, r *http.Request) error {
	pd, err := p.partitionDetail(r)
	if err != nil {
		return err
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	start, err := p.admin(ctx).ListStartOffsets(ctx, pd.Topic)
	if err != nil {
		return kafkaError(err)
	}
	end, err := p.admin(ctx).ListEndOffsets(ctx, pd.Topic)
	if err != nil {
		return kafkaError(err)
	}
	s, _ := start.Lookup(pd.Topic, pd.Partition)
	e, _ := end.Lookup(pd.Topic, pd.Partition)
	if s.Err != nil || e.Err != nil {
		return kafkaError(errors.Join(s.Err, e.Err))
	}
	writeJSON(w, 200, v2Type, map[string]int64{"beginning_offset": s.Offset, "end_offset": e.Offset})
	return nil
}

func (p *Proxy) listBrokers(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := reqContext(r)
	defer cancel()
	bs, err := p.admin(ctx).ListBrokers(ctx)
	if err != nil {
		return kafkaError(err)
	}
	ids := bs.NodeIDs()
	slices.Sort(ids)
	writeJSON(w, 200, v2Type, map[string]any{"brokers": ids})
	return nil
}

// v2Format is the embedded format that a v2 produce request's content
// type names (application/vnd.kafka.FORMAT.v2+json), or 415.
func v2Format(r *http.Request) (*format, error) {
	mt := mediaType(r.Header.Get("Content-Type"))
	name, ok := strings.CutPrefix(mt, "application/vnd.kafka.")
	if !ok {
		return nil, errUnsupportedType
	}
	name, ok = strings.CutSuffix(name, ".v2+json")
	if !ok {
		return nil, errUnsupportedType
	}
	f, ok := formats[name]
	if !ok {
		return nil, errUnsupportedType
	}
	return f, nil
}

type v2ProduceRecord struct {
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition *int32          `json:"partition"`
}

type v2ProduceRequest struct {
	KeySchema     *string           `json:"key_schema"`
	KeySchemaID   *int              `json:"key_schema_id"`
	ValueSchema   *string           `json:"value_schema"`
	ValueSchemaID *int              `json:"value_schema_id"`
	Records       []v2ProduceRecord `json:"records"`
}

type v2Offset struct {
	Partition *int32  `json:"partition"`
	Offset    *int64  `json:"offset"`
	ErrorCode *int    `json:"error_code"`
	Error     *string `json:"error"`
}

// produceV2 serves POST /topics/{topic} and
// /topics/{topic}/partitions/{partition}. Every record is encoded and its
// partition checked before any is produced.
func (p *Proxy) produceV2(w http.ResponseWriter, r *http.Request) error {
	f, err := v2Format(r)
	if err != nil {
		return err
	}
	var req v2ProduceRequest
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if len(req.Records) == 0 {
		return errf(422, 422, "records may not be empty")
	}
	topic := r.PathValue("topic")
	var pathPart *int32
	if s := r.PathValue("partition"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return errPartitionNotFound
		}
		pp := int32(n)
		pathPart = &pp
	}
	n, err := p.partitionCount(r, topic)
	if err != nil {
		return err
	}
	ctx, cancel := reqContext(r)
	defer cancel()
	keys, err := f.codec(ctx, p, topic+"-key", true, req.KeySchema, req.KeySchemaID)
	if err != nil {
		return err
	}
	values, err := f.codec(ctx, p, topic+"-value", false, req.ValueSchema, req.ValueSchemaID)
	if err != nil {
		return err
	}
	recs := make([]*kgo.Record, len(req.Records))
	for i, pr := range req.Records {
		rec := &kgo.Record{Topic: topic, Context: r.Context()}
		if rec.Key, err = keys.encode(pr.Key); err != nil {
			return err
		}
		if rec.Value, err = values.encode(pr.Value); err != nil {
			return err
		}
		part := pr.Partition
		if pathPart != nil {
			part = pathPart
		}
		if part != nil {
			if *part < 0 || *part >= n {
				return errPartitionNotFound
			}
			rec.Context = withPartition(r.Context(), *part)
		}
		recs[i] = rec
	}
	results := p.produce(r.Context(), recs)
	offsets := make([]v2Offset, len(results))
	for i, res := range results {
		if res.err != nil {
			code, msg := errorCode(res.err), res.err.Error()
			offsets[i] = v2Offset{ErrorCode: &code, Error: &msg}
			continue
		}
		offsets[i] = v2Offset{Partition: &res.partition, Offset: &res.offset}
	}
	writeJSON(w, 200, v2Type, map[string]any{"key_schema_id": keys.schemaID, "value_schema_id": values.schemaID, "offsets": offsets})
	return nil
}
