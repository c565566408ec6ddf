package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// overviewData is the cluster at a glance.
type overviewData struct {
	ClusterID        string
	Controller       int32
	Brokers          []kadm.BrokerDetail
	Topics           int
	Partitions       int
	UnderReplicated  int
	Offline          int
	InternalExcluded int
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "metadata", err)
		return
	}
	d := overviewData{ClusterID: md.Cluster, Controller: md.Controller, Brokers: md.Brokers}
	for _, t := range md.Topics {
		d.Topics++
		for _, p := range t.Partitions {
			d.Partitions++
			switch {
			case p.Leader < 0:
				d.Offline++
			case len(p.ISR) < len(p.Replicas):
				d.UnderReplicated++
			}
		}
	}
	c.render(w, r, "overview", http.StatusOK, page{Section: "overview", Title: "Cluster", Data: d})
}

// topicRow is one line of the topic list.
type topicRow struct {
	Name            string
	Internal        bool
	Partitions      int
	Replication     int
	UnderReplicated int
	Offline         int
	Records         int64 // end minus start offsets, summed: an estimate
}

func (c *Console) topics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	details, err := c.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "list topics", err)
		return
	}
	names := details.Names()
	starts, _ := c.adm.ListStartOffsets(ctx, names...)
	ends, _ := c.adm.ListEndOffsets(ctx, names...)
	var rows []topicRow
	for _, t := range details.Sorted() {
		row := topicRow{Name: t.Topic, Internal: t.IsInternal, Partitions: len(t.Partitions)}
		for _, p := range t.Partitions {
			row.Replication = max(row.Replication, len(p.Replicas))
			switch {
			case p.Leader < 0:
				row.Offline++
			case len(p.ISR) < len(p.Replicas):
				row.UnderReplicated++
			}
			s, okS := starts.Lookup(t.Topic, p.Partition)
			e, okE := ends.Lookup(t.Topic, p.Partition)
			if okS && okE && s.Err == nil && e.Err == nil {
				row.Records += e.Offset - s.Offset
			}
		}
		rows = append(rows, row)
	}
	c.render(w, r, "topics", http.StatusOK, page{Section: "topics", Title: "Topics", Data: rows})
}

func (c *Console) createTopic(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) {
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	partitions, err1 := formInt(r, "partitions", -1)
	replication, err2 := formInt(r, "replication", -1)
	if err := cmpErr(err1, err2); err != nil {
		c.fail(w, r, http.StatusBadRequest, "create topic "+name, err)
		return
	}
	configs := map[string]*string{}
	for _, line := range strings.Split(r.PostForm.Get("configs"), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok {
			v := strings.TrimSpace(v)
			configs[strings.TrimSpace(k)] = &v
		}
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	resp, err := c.adm.CreateTopic(ctx, int32(partitions), int16(replication), configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "create topic "+name, withMessage(err, resp.ErrMessage))
		return
	}
	c.done(w, r, c.path("topics", name), "created topic "+name)
}

func (c *Console) deleteTopic(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) {
		return
	}
	name := r.PathValue("topic")
	ctx, cancel := c.ctx(r)
	defer cancel()
	resp, err := c.adm.DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "delete topic "+name, withMessage(err, resp.ErrMessage))
		return
	}
	c.done(w, r, c.path("topics"), "deleted topic "+name)
}

// partitionRow is one partition of a topic page.
type partitionRow struct {
	kadm.PartitionDetail
	Start, End int64
}

// configRow is one topic config; Default says it is the broker's value.
type configRow struct {
	Key, Value string
	Source     string
	Default    bool
	Sensitive  bool
}

type topicData struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []partitionRow
	Configs    []configRow
}

func (c *Console) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	ctx, cancel := c.ctx(r)
	defer cancel()
	details, err := c.adm.ListTopicsWithInternal(ctx, name)
	if err != nil {
		c.fail(w, r, http.StatusBadGateway, "describe topic "+name, err)
		return
	}
	t, ok := details[name]
	if !ok || t.Err != nil {
		err := t.Err
		if err == nil {
			err = errUnknownTopic
		}
		c.fail(w, r, http.StatusNotFound, "topic "+name, err)
		return
	}
	d := topicData{Name: name, ID: t.ID.String(), Internal: t.IsInternal}
	starts, _ := c.adm.ListStartOffsets(ctx, name)
	ends, _ := c.adm.ListEndOffsets(ctx, name)
	for _, p := range t.Partitions.Sorted() {
		row := partitionRow{PartitionDetail: p, Start: -1, End: -1}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			row.Start = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			row.End = o.Offset
		}
		d.Partitions = append(d.Partitions, row)
	}
	if rcs, err := c.adm.DescribeTopicConfigs(ctx, name); err == nil {
		if rc, err := rcs.On(name, nil); err == nil {
			for _, cf := range rc.Configs {
				row := configRow{Key: cf.Key, Value: cf.MaybeValue(), Source: sourceName(cf.Source), Sensitive: cf.Sensitive}
				row.Default = cf.Source != kmsg.ConfigSourceDynamicTopicConfig
				d.Configs = append(d.Configs, row)
			}
			slices.SortFunc(d.Configs, func(a, b configRow) int { return strings.Compare(a.Key, b.Key) })
		}
	}
	c.render(w, r, "topic", http.StatusOK, page{Section: "topics", Title: name, Data: d})
}

func (c *Console) alterTopicConfig(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) {
		return
	}
	name := r.PathValue("topic")
	key := strings.TrimSpace(r.PostForm.Get("key"))
	alter := kadm.AlterConfig{Op: kadm.SetConfig, Name: key}
	if r.PostForm.Get("op") == "delete" {
		alter.Op = kadm.DeleteConfig
	} else {
		v := r.PostForm.Get("value")
		alter.Value = &v
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	resps, err := c.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{alter}, name)
	if err == nil {
		for _, resp := range resps {
			if resp.Err != nil {
				err = withMessage(resp.Err, resp.ErrMessage)
			}
		}
	}
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "set "+key+" on "+name, err)
		return
	}
	verb := "set " + key
	if alter.Op == kadm.DeleteConfig {
		verb = "reset " + key + " to its default"
	}
	c.done(w, r, c.path("topics", name), verb)
}

func sourceName(s kmsg.ConfigSource) string {
	name := strings.ToLower(strings.TrimSuffix(s.String(), "_CONFIG"))
	return strings.ReplaceAll(name, "_", " ")
}

func formInt(r *http.Request, key string, def int) (int, error) {
	v := strings.TrimSpace(r.Form.Get(key))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &formError{key, v}
	}
	return n, nil
}

type formError struct{ key, value string }

func (e *formError) Error() string { return e.key + ": " + strconv.Quote(e.value) + " is not a number" }

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
