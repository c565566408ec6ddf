package restproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// v3Data is a key or value of a v3 produce request.
type v3Data struct {
	Type                string          `json:"type"`
	Data                json.RawMessage `json:"data"`
	Subject             *string         `json:"subject"`
	SubjectNameStrategy *string         `json:"subject_name_strategy"`
	Schema              *string         `json:"schema"`
	SchemaID            *int            `json:"schema_id"`
	SchemaVersion       *int            `json:"schema_version"`
}

type v3Header struct {
	Name  string  `json:"name"`
	Value *string `json:"value"` // base64
}

type v3Record struct {
	PartitionID *int32     `json:"partition_id"`
	Headers     []v3Header `json:"headers"`
	Key         *v3Data    `json:"key"`
	Value       *v3Data    `json:"value"`
	Timestamp   *time.Time `json:"timestamp"`
}

// dataInfo is what a delivery report says of a key or value.
type dataInfo struct {
	typ      string // "" for a key or value the request left out
	schemaID *int
	subject  string // of a schema type
}

// schemaFormats names the embedded format of each v3 schema data type.
var schemaFormats = map[string]string{"AVRO": "avro", "JSONSCHEMA": "jsonschema", "PROTOBUF": "protobuf"}

// schemaTypeNames are the v3 data types of the registry's schema types.
var schemaTypeNames = map[sr.SchemaType]string{sr.TypeAvro: "AVRO", sr.TypeJSON: "JSONSCHEMA", sr.TypeProtobuf: "PROTOBUF"}

// subjectName is the subject of a key or value: subject when given, else
// the one strategy names, as Confluent's serializers' strategies do:
// TOPIC_NAME {topic}-key or {topic}-value; RECORD_NAME the schema's record
// name (recordName); TOPIC_RECORD_NAME {topic}-{record name}. The record
// name needs the schema: schema (of type typ) or schema_id.
func (d *v3Data) subjectName(ctx context.Context, p *Proxy, topic string, isKey bool, strategy, typ string) (string, error) {
	if d.Subject != nil {
		return *d.Subject, nil
	}
	if strategy == "TOPIC_NAME" {
		if isKey {
			return topic + "-key", nil
		}
		return topic + "-value", nil
	}
	var text string
	var refs map[string]string
	switch {
	case d.Schema != nil:
		text = *d.Schema
	case d.SchemaID != nil:
		got, err := p.schemas.cl.SchemaByID(ctx, *d.SchemaID)
		if err != nil {
			return "", registryError(err)
		}
		text, typ = got.Schema, schemaTypeNames[got.Type]
		refs = map[string]string{}
		for _, r := range got.References {
			rs, err := p.schemas.cl.SchemaByVersion(ctx, r.Subject, r.Version)
			if err != nil {
				return "", registryError(err)
			}
			refs[r.Name] = rs.Schema.Schema
		}
	default:
		return "", errf(400, 400, "Cannot use schema_subject_strategy=%s without schema_id or schema.", strategy)
	}
	name, err := recordName(typ, text, refs)
	if err != nil {
		return "", errInvalidSchema(err)
	}
	if strategy == "TOPIC_RECORD_NAME" {
		return topic + "-" + name, nil
	}
	return name, nil
}

// recordName is the fully qualified name of a schema's record, as
// Confluent's RecordNameStrategy takes it: an Avro named type's full name,
// a protobuf schema's first message's full name, a JSON schema's title.
func recordName(typ, text string, refs map[string]string) (string, error) {
	switch typ {
	case "AVRO":
		var top struct {
			Type      any    `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		}
		if err := json.Unmarshal([]byte(text), &top); err != nil || top.Name == "" {
			return "", fmt.Errorf("the Avro schema is not a named type: it has no record name")
		}
		if strings.Contains(top.Name, ".") || top.Namespace == "" {
			return top.Name, nil
		}
		return top.Namespace + "." + top.Name, nil
	case "PROTOBUF":
		parsed, err := parseProtobuf(text, refs)
		if err != nil {
			return "", err
		}
		return string(parsed.(protoreflect.FileDescriptor).Messages().Get(0).FullName()), nil
	case "JSONSCHEMA":
		var top struct {
			Title string `json:"title"`
		}
		if err := json.Unmarshal([]byte(text), &top); err != nil || top.Title == "" {
			return "", fmt.Errorf("the JSON schema has no title to name its record")
		}
		return top.Title, nil
	}
	return "", fmt.Errorf("a %s schema has no record name", typ)
}

// encode returns the bytes of d; a missing d is a null key or value.
// AVRO, JSONSCHEMA and PROTOBUF data is written as the embedded format of
// that name writes it, with the schema of schema_id, of schema_version of
// the subject, registered from schema under the subject, or else the
// subject's latest. The subject is subject, or the one the
// subject_name_strategy names (subjectName). Data without a type is of
// the type of the schema its schema_id or schema_version names, AVRO with
// a schema, else JSON.
func (d *v3Data) encode(ctx context.Context, p *Proxy, topic string, isKey bool) ([]byte, dataInfo, error) {
	if d == nil {
		return nil, dataInfo{}, nil
	}
	// Which of schema_id, schema_version and schema may go together,
	// as Confluent's proxy checks them.
	switch {
	case d.SchemaID != nil && (d.SchemaVersion != nil || d.Schema != nil):
		return nil, dataInfo{}, errf(400, 400, "schema_id goes with neither schema_version nor schema")
	case d.SchemaVersion != nil && d.Schema != nil:
		return nil, dataInfo{}, errf(400, 400, "schema_version does not go with schema")
	}
	strategy := "TOPIC_NAME"
	if d.SubjectNameStrategy != nil {
		strategy = strings.ToUpper(*d.SubjectNameStrategy)
		if !slices.Contains([]string{"TOPIC_NAME", "RECORD_NAME", "TOPIC_RECORD_NAME"}, strategy) {
			return nil, dataInfo{}, errf(400, 400, "subject_name_strategy %s is not TOPIC_NAME, RECORD_NAME or TOPIC_RECORD_NAME", *d.SubjectNameStrategy)
		}
	}
	typ := strings.ToUpper(d.Type)
	byRegistry := d.SchemaID != nil || d.SchemaVersion != nil
	if typ == "" {
		typ = "JSON"
		if d.Schema != nil {
			typ = "AVRO"
		}
	}
	if schemaFormats[typ] != "" || d.Type == "" && byRegistry {
		if p.schemas == nil {
			return nil, dataInfo{typ: typ}, errNoRegistry
		}
		if d.Type == "" && d.SchemaID != nil {
			st, err := p.schemas.typeOf(ctx, *d.SchemaID)
			if err != nil {
				return nil, dataInfo{typ: typ}, err
			}
			typ = schemaTypeNames[st]
		}
		subject, err := d.subjectName(ctx, p, topic, isKey, strategy, typ)
		if err != nil {
			return nil, dataInfo{typ: typ}, err
		}
		if d.Schema == nil && d.SchemaID == nil {
			version := -1
			if d.SchemaVersion != nil {
				version = *d.SchemaVersion
			}
			ss, err := p.schemas.cl.SchemaByVersion(ctx, subject, version)
			if err != nil {
				return nil, dataInfo{typ: typ}, registryError(err)
			}
			d.SchemaID = &ss.ID
			if d.Type == "" {
				typ = schemaTypeNames[ss.Type]
			}
		}
		d.Subject = &subject
	}
	info := dataInfo{typ: typ}
	if schemaFormats[typ] == "" && isNull(d.Data) {
		return nil, info, nil
	}
	var b []byte
	var err error
	switch typ {
	case "BINARY":
		b, err = encodeBinary(d.Data)
	case "JSON":
		b, err = encodeJSON(d.Data)
	case "STRING":
		var s string
		if json.Unmarshal(d.Data, &s) != nil {
			return nil, info, errf(400, 400, "STRING data must be a JSON string")
		}
		b = []byte(s)
	case "AVRO", "JSONSCHEMA", "PROTOBUF":
		var c codec
		if c, err = formats[schemaFormats[typ]].codec(ctx, p, *d.Subject, isKey, d.Schema, d.SchemaID); err == nil {
			info.schemaID, info.subject = c.schemaID, *d.Subject
			b, err = c.encode(d.Data)
		}
	default:
		return nil, info, errf(400, 400, "data type %s is not served (BINARY, JSON, STRING, AVRO, JSONSCHEMA and PROTOBUF are)", d.Type)
	}
	return b, info, err
}

// report is one record's delivery report.
type report map[string]any

func reportError(err error) report {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = kafkaError(err)
	}
	return report{"error_code": ae.status, "message": ae.msg}
}

// v3ProduceRecords serves POST .../topics/{topic}/records: one JSON
// record, or a stream of them on one connection. Each record is produced
// as it is read and answered by its own delivery report, in order, as
// soon as the cluster acknowledges it. The first report's error_code is
// the answer's HTTP status.
func (p *Proxy) v3ProduceRecords(v *v3req) (int, any, error) {
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return 0, nil, err
	}
	n := int32(len(td.Partitions))
	http.NewResponseController(v.w).EnableFullDuplex()
	futures := make(chan chan report, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		enc := json.NewEncoder(v.w)
		for f := range futures {
			rep := <-f
			if first {
				v.w.Header().Set("Content-Type", v3Type)
				v.w.WriteHeader(rep["error_code"].(int))
				first = false
			}
			enc.Encode(rep)
			http.NewResponseController(v.w).Flush()
		}
	}()
	resolved := func(r report) chan report {
		c := make(chan report, 1)
		c <- r
		return c
	}
	body := &perRecordLimit{r: v.r.Body, max: p.cfg.MaxRequestBytes}
	dec := json.NewDecoder(body)
	for count := 0; ; count++ {
		var rec v3Record
		body.n = 0
		err := dec.Decode(&rec)
		if errors.Is(err, io.EOF) {
			if count == 0 {
				futures <- resolved(reportError(errf(400, 400, "Request body is empty")))
			}
			break
		}
		if err != nil {
			futures <- resolved(reportError(decodeError(err)))
			break
		}
		kr, keyType, valType, err := p.v3Record(v, &rec, n)
		if err != nil {
			futures <- resolved(reportError(err))
			continue
		}
		f := make(chan report, 1)
		futures <- f
		p.client(v.r.Context()).Produce(v.r.Context(), kr, func(r *kgo.Record, err error) {
			f <- v.delivered(r, keyType, valType, err)
		})
	}
	close(futures)
	<-done
	return 0, nil, nil
}

// delivered is the delivery report of a produced record.
func (v *v3req) delivered(r *kgo.Record, keyType, valType dataInfo, err error) report {
	if err != nil {
		return report{"error_code": 500, "message": err.Error()}
	}
	return report{"error_code": 200, "cluster_id": v.cluster, "topic_name": r.Topic, "partition_id": r.Partition,
		"offset": r.Offset, "timestamp": r.Timestamp.UTC().Format(time.RFC3339Nano),
		"key": dataReport(keyType, r.Key), "value": dataReport(valType, r.Value)}
}

// v3ProduceBatch serves POST .../records:batch: {"entries": [records with
// an "id"]}, answered 207 with the successes and failures by id.
func (p *Proxy) v3ProduceBatch(v *v3req) (int, any, error) {
	var req struct {
		Entries []struct {
			ID string `json:"id"`
			v3Record
		} `json:"entries"`
	}
	if err := decodeBody(v.r, &req, false); err != nil {
		return 0, nil, err
	}
	if len(req.Entries) == 0 {
		return 0, nil, errf(400, 400, "entries may not be empty")
	}
	td, err := p.v3TopicDetail(v)
	if err != nil {
		return 0, nil, err
	}
	reports := make([]report, len(req.Entries))
	var wg sync.WaitGroup
	for i := range req.Entries {
		e := &req.Entries[i]
		kr, keyType, valType, err := p.v3Record(v, &e.v3Record, int32(len(td.Partitions)))
		if err != nil {
			reports[i] = reportError(err)
			continue
		}
		wg.Add(1)
		p.client(v.r.Context()).Produce(v.r.Context(), kr, func(r *kgo.Record, err error) {
			reports[i] = v.delivered(r, keyType, valType, err)
			wg.Done()
		})
	}
	wg.Wait()
	successes, failures := []report{}, []report{}
	for i, rep := range reports {
		rep["id"] = req.Entries[i].ID
		if rep["error_code"] == 200 {
			delete(rep, "error_code")
			successes = append(successes, rep)
		} else {
			failures = append(failures, rep)
		}
	}
	return 207, map[string]any{"successes": successes, "failures": failures}, nil
}

func dataReport(info dataInfo, b []byte) any {
	if info.typ == "" {
		return nil
	}
	m := map[string]any{"type": info.typ, "size": len(b)}
	if info.schemaID != nil {
		m["schema_id"] = *info.schemaID
	}
	if info.subject != "" {
		m["subject"] = info.subject
	}
	return m
}

// v3Record turns one request record into a Kafka record.
func (p *Proxy) v3Record(v *v3req, rec *v3Record, partitions int32) (*kgo.Record, dataInfo, dataInfo, error) {
	topic := v.r.PathValue("topic")
	kr := &kgo.Record{Topic: topic, Context: v.r.Context()}
	keyInfo, valInfo := dataInfo{}, dataInfo{}
	var err error
	if kr.Key, keyInfo, err = rec.Key.encode(v.r.Context(), p, topic, true); err != nil {
		return nil, keyInfo, valInfo, err
	}
	if kr.Value, valInfo, err = rec.Value.encode(v.r.Context(), p, topic, false); err != nil {
		return nil, keyInfo, valInfo, err
	}
	for _, h := range rec.Headers {
		var val []byte
		if h.Value != nil {
			if val, err = base64.StdEncoding.DecodeString(*h.Value); err != nil {
				return nil, keyInfo, valInfo, errf(400, 400, "header %s: value is not base64", h.Name)
			}
		}
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Name, Value: val})
	}
	if rec.Timestamp != nil {
		kr.Timestamp = *rec.Timestamp
	}
	if rec.PartitionID != nil {
		if *rec.PartitionID < 0 || *rec.PartitionID >= partitions {
			return nil, keyInfo, valInfo, errf(404, 40403, "This server does not host this topic-partition.")
		}
		kr.Context = withPartition(v.r.Context(), *rec.PartitionID)
	}
	return kr, keyInfo, valInfo, nil
}

// perRecordLimit bounds the bytes read for one record of a stream (the
// decoder's read-ahead counts toward the record it is decoding).
type perRecordLimit struct {
	r   io.Reader
	max int64
	n   int64
}

func (l *perRecordLimit) Read(b []byte) (int, error) {
	if l.n >= l.max {
		return 0, &http.MaxBytesError{Limit: l.max}
	}
	if int64(len(b)) > l.max-l.n {
		b = b[:l.max-l.n]
	}
	n, err := l.r.Read(b)
	l.n += int64(n)
	return n, err
}
