package connect

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/samsa-io/samsa/connector"
)

// FileStreamSource reads lines of a file into a topic, with Kafka's keys
// file, topic and batch.size; its source partition is {"filename":file}
// and its offset {"position":byte offset}, as Kafka's.
type FileStreamSource struct{ props map[string]string }

func (*FileStreamSource) Version() string { return version }

// Config defines Kafka's keys.
func (*FileStreamSource) Config() connector.ConfigDef {
	return connector.ConfigDef{
		{Name: "file", Type: connector.TypeString, Importance: connector.High, Doc: "Source filename. If not specified, the standard input will be used"},
		{Name: "topic", Type: connector.TypeList, Required: true, Importance: connector.High, Doc: "The topic to publish data to", Validate: oneTopic},
		{Name: "batch.size", Type: connector.TypeInt, Default: "2000", Importance: connector.Low, Doc: "The maximum number of records the source task can read from the file each time it is polled", Validate: connector.AtLeast(1)},
	}
}

func oneTopic(v any) error {
	if l := v.([]string); len(l) != 1 {
		return fmt.Errorf("'topic' in FileStreamSourceConnector configuration requires definition of a single topic")
	}
	return nil
}

func (c *FileStreamSource) Start(props map[string]string) error {
	if _, err := c.Config().Parse(props); err != nil {
		return err
	}
	c.props = props
	return nil
}

// TaskConfigs gives one task: a file is read sequentially.
func (c *FileStreamSource) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{copyProps(c.props)}, nil
}

func (*FileStreamSource) Stop() error { return nil }

func (*FileStreamSource) NewTask() connector.SourceTask { return &fileSourceTask{} }

type fileSourceTask struct {
	name, topic string
	batch       int
	f           *os.File
	r           *bufio.Reader
	pos         int64
	partial     []byte
}

func (t *fileSourceTask) Start(offsets connector.OffsetReader, props map[string]string) error {
	v, err := (&FileStreamSource{}).Config().Parse(props)
	if err != nil {
		return err
	}
	t.name, t.topic, t.batch = props["file"], v["topic"].([]string)[0], int(v["batch.size"].(int64))
	if t.name == "" {
		t.r = bufio.NewReader(os.Stdin)
		return nil
	}
	if off := offsets.Offset(map[string]any{"filename": t.name}); off != nil {
		if p, ok := off["position"].(int64); ok {
			t.pos = p
		} else if p, ok := off["position"].(float64); ok {
			t.pos = int64(p)
		}
	}
	return nil
}

// open opens the file when it appears and seeks to the stored position.
func (t *fileSourceTask) open() error {
	f, err := os.Open(t.name)
	if err != nil {
		return err
	}
	if _, err := f.Seek(t.pos, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	t.f, t.r = f, bufio.NewReader(f)
	return nil
}

func (t *fileSourceTask) Poll(ctx context.Context) ([]*connector.Record, error) {
	if t.r == nil {
		if err := t.open(); err != nil {
			return nil, sleepCtx(ctx, time.Second)
		}
	}
	var out []*connector.Record
	for len(out) < t.batch {
		line, err := t.r.ReadBytes('\n')
		t.partial = append(t.partial, line...)
		if err != nil {
			break // the rest of a partial line waits for the next poll
		}
		t.pos += int64(len(t.partial))
		text := strings.TrimRight(string(t.partial), "\r\n")
		t.partial = t.partial[:0]
		out = append(out, &connector.Record{
			Topic: t.topic, Partition: -1,
			ValueSchema: connector.StringSchema, Value: text,
			SourcePartition: map[string]any{"filename": t.name},
			SourceOffset:    map[string]any{"position": t.pos},
		})
	}
	if len(out) == 0 {
		return nil, sleepCtx(ctx, time.Second)
	}
	return out, nil
}

func (*fileSourceTask) Commit() error { return nil }

func (t *fileSourceTask) Stop() error {
	if t.f != nil {
		return t.f.Close()
	}
	return nil
}

// sleepCtx waits d or until ctx ends; it never fails the caller.
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
	return nil
}

// FileStreamSink appends the values of records to a file, one per line
// (Kafka's FileStreamSinkConnector, key file).
type FileStreamSink struct{ props map[string]string }

func (*FileStreamSink) Version() string { return version }

func (*FileStreamSink) Config() connector.ConfigDef {
	return connector.ConfigDef{
		{Name: "file", Type: connector.TypeString, Importance: connector.High, Doc: "Destination filename. If not specified, the standard output will be used"},
	}
}

func (c *FileStreamSink) Start(props map[string]string) error {
	c.props = props
	return nil
}

// TaskConfigs gives one task: the file is written in order.
func (c *FileStreamSink) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{copyProps(c.props)}, nil
}

func (*FileStreamSink) Stop() error { return nil }

func (*FileStreamSink) NewTask() connector.SinkTask { return &fileSinkTask{} }

type fileSinkTask struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

func (t *fileSinkTask) Start(props map[string]string) error {
	if props["file"] == "" {
		t.w = bufio.NewWriter(os.Stdout)
		return nil
	}
	f, err := os.OpenFile(props["file"], os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("couldn't find or create file '%s' for FileStreamSinkTask: %w", props["file"], err)
	}
	if err := dropTornLine(f); err != nil {
		f.Close()
		return fmt.Errorf("FileStreamSinkTask: %s: %w", props["file"], err)
	}
	t.f, t.w = f, bufio.NewWriter(f)
	return nil
}

// dropTornLine cuts a last line without its newline: a worker killed
// while it flushed left it, and as its offsets were not committed the
// records come again. (Kafka's sink would append to the torn line.)
func dropTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	const chunk = 4096
	end := st.Size()
	for pos := end; pos > 0; {
		n := min(pos, chunk)
		pos -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, pos); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			if cut := pos + int64(i) + 1; cut != end {
				return f.Truncate(cut)
			}
			return nil
		}
	}
	return f.Truncate(0)
}

func (t *fileSinkTask) Put(records []*connector.Record) error {
	for _, r := range records {
		t.w.WriteString(javaString(r.Value))
		t.w.WriteByte('\n')
	}
	return nil
}

// Flush writes the buffer and syncs the file, so committed offsets never
// run ahead of the file.
func (t *fileSinkTask) Flush(map[connector.TopicPartition]int64) error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	if t.f != nil {
		return t.f.Sync()
	}
	return nil
}

func (t *fileSinkTask) Stop() error {
	if t.f != nil {
		return t.f.Close()
	}
	return nil
}

func copyProps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func checkRegex(s string) error {
	if s == "" {
		return nil
	}
	_, err := regexp.Compile(s)
	return err
}

// javaString writes a value as Java's toString does, which is what
// Kafka's FileStreamSink writes: {k=v, k2=v2} for maps, [a, b] for lists,
// Struct{f=v,g=w} for structs.
func javaString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case []byte:
		return string(x)
	case map[string]any:
		var parts []string
		for _, k := range connector.SortedKeys(x) {
			parts = append(parts, k+"="+javaString(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = javaString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *connector.Struct:
		var parts []string
		for _, f := range x.Schema.Fields {
			if fv := x.Get(f.Name); fv != nil {
				parts = append(parts, f.Name+"="+javaString(fv))
			}
		}
		return "Struct{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v)
}
