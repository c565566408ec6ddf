package connect

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/samsa-io/samsa/connector"
)

// DatagenSource generates struct records {id, task, name, ts} for tests
// and demos: keys topic, max.records (per task, -1 = endless),
// interval.ms between records and tasks.max parallel tasks. Its offset
// {"seq":n} makes a restarted task continue the sequence.
type DatagenSource struct{ props map[string]string }

func (*DatagenSource) Version() string { return version }

func (*DatagenSource) Config() connector.ConfigDef {
	return connector.ConfigDef{
		{Name: "topic", Type: connector.TypeString, Required: true, Importance: connector.High, Doc: "The topic to write to", Validate: connector.NonEmpty},
		{Name: "max.records", Type: connector.TypeLong, Default: "-1", Importance: connector.Medium, Doc: "Records each task generates; -1 for no limit"},
		{Name: "interval.ms", Type: connector.TypeLong, Default: "100", Importance: connector.Medium, Doc: "Pause between records in milliseconds", Validate: connector.AtLeast(0)},
	}
}

func (c *DatagenSource) Start(props map[string]string) error {
	if _, err := c.Config().Parse(props); err != nil {
		return err
	}
	c.props = props
	return nil
}

// TaskConfigs gives maxTasks tasks, each its own sequence.
func (c *DatagenSource) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	var out []map[string]string
	for i := range maxTasks {
		p := copyProps(c.props)
		p["task.id"] = strconv.Itoa(i)
		out = append(out, p)
	}
	return out, nil
}

func (*DatagenSource) Stop() error { return nil }

func (*DatagenSource) NewTask() connector.SourceTask { return &datagenTask{} }

var datagenSchema = &connector.Schema{Type: connector.StructT, Name: "io.samsa.connect.Datagen", Fields: []connector.Field{
	{Name: "id", Schema: connector.Int64Schema},
	{Name: "task", Schema: connector.Int32Schema},
	{Name: "name", Schema: connector.StringSchema},
	{Name: "ts", Schema: connector.Int64Schema},
}}

type datagenTask struct {
	topic     string
	task      int32
	seq, max  int64
	interval  time.Duration
	partition map[string]any
}

func (t *datagenTask) Start(offsets connector.OffsetReader, props map[string]string) error {
	v, err := (&DatagenSource{}).Config().Parse(props)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(props["task.id"])
	t.topic, t.task, t.max = v["topic"].(string), int32(n), v["max.records"].(int64)
	t.interval = time.Duration(v["interval.ms"].(int64)) * time.Millisecond
	t.partition = map[string]any{"task": props["task.id"]}
	if off := offsets.Offset(t.partition); off != nil {
		if s, ok := off["seq"].(int64); ok {
			t.seq = s
		}
	}
	return nil
}

func (t *datagenTask) Poll(ctx context.Context) ([]*connector.Record, error) {
	if t.max >= 0 && t.seq >= t.max {
		return nil, sleepCtx(ctx, time.Second)
	}
	if t.interval > 0 {
		sleepCtx(ctx, t.interval)
	}
	t.seq++
	v := connector.NewStruct(datagenSchema).Put("id", t.seq).Put("task", t.task).
		Put("name", fmt.Sprintf("user-%d", t.seq%100)).Put("ts", time.Now().UnixMilli())
	return []*connector.Record{{
		Topic: t.topic, Partition: -1,
		KeySchema: connector.StringSchema, Key: strconv.FormatInt(t.seq, 10),
		ValueSchema: datagenSchema, Value: v,
		SourcePartition: t.partition, SourceOffset: map[string]any{"seq": t.seq},
	}}, nil
}

func (*datagenTask) Commit() error { return nil }
func (*datagenTask) Stop() error   { return nil }
