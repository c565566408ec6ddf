package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// setupTopics checks the source topics exist, works out each
// sub-topology's task count, and creates the internal topics: repartition
// topics with the partition count of the sub-topology writing them,
// changelogs (compacted) with that of the sub-topology owning the store.
func (a *App) setupTopics(ctx context.Context) error {
	cl, err := kgo.NewClient(a.clientOpts()...)
	if err != nil {
		return fmt.Errorf("streams: client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	var external, sinks []string
	for _, s := range a.top.subs {
		for _, t := range s.sourceTopics() {
			if !t.internal {
				external = append(external, t.name)
			}
		}
		for _, n := range s.sinks {
			if !n.internal {
				sinks = append(sinks, n.topics[0])
			}
		}
	}
	md, err := adm.ListTopics(ctx, append(external, sinks...)...)
	if err != nil {
		return fmt.Errorf("streams: metadata of source and sink topics: %w", err)
	}
	parts := map[topicRef]int{}
	for _, t := range external {
		d, ok := md[t]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return fmt.Errorf("streams: source topic %q does not exist (create it before starting the app)", t)
		}
		parts[topicRef{t, false}] = len(d.Partitions)
	}
	for _, t := range sinks {
		if d, ok := md[t]; !ok || d.Err != nil {
			return fmt.Errorf("streams: sink topic %q does not exist (create it before starting the app)", t)
		}
	}

	// Resolve sub-topologies in dependency order: one reading a repartition
	// topic needs the count of the one writing it.
	tasks := map[int]int{}
	for progress := true; progress; {
		progress = false
		for _, s := range a.top.subs {
			if _, done := tasks[s.id]; done {
				continue
			}
			n, ok, err := taskCount(s, parts)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			tasks[s.id] = n
			progress = true
			for _, sk := range s.sinks {
				if sk.internal {
					r := topicRef{sk.topics[0], true}
					parts[r] = max(parts[r], n)
				}
			}
		}
	}
	if len(tasks) != len(a.top.subs) {
		return errors.New("streams: invalid topology: repartition topics form a cycle")
	}

	for r, n := range parts {
		if r.internal {
			if err := a.ensureTopic(ctx, adm, r.resolve(a.cfg.ApplicationID), n, map[string]*string{
				"cleanup.policy": kadm.StringPtr("delete"),
				"retention.ms":   kadm.StringPtr("-1"),
			}); err != nil {
				return err
			}
		}
	}
	for _, s := range a.top.subs {
		for _, st := range s.stores {
			if a.top.stores[st].logged() {
				if err := a.ensureTopic(ctx, adm, changelogTopic(a.cfg.ApplicationID, st), tasks[s.id],
					a.top.stores[st].changelogConfigs()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// taskCount is the number of tasks of s: the largest partition count of its
// sources. A sub-topology with state needs all its sources co-partitioned
// (equal counts), so that task p's store sees partition p of each.
func taskCount(s *subtopology, parts map[topicRef]int) (int, bool, error) {
	var counts []int
	for _, t := range s.sourceTopics() {
		n, ok := parts[t]
		if !ok {
			return 0, false, nil
		}
		counts = append(counts, n)
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if len(s.stores) > 0 && lo != hi {
		return 0, false, fmt.Errorf("streams: topics %v of sub-topology %d are not co-partitioned: partition counts %v", s.sourceTopics(), s.id, counts)
	}
	return hi, true, nil
}

// ensureTopic creates an internal topic, or checks the existing one has the
// expected partition count.
func (a *App) ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, int32(partitions), a.cfg.ReplicationFactor, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		a.log.Info("created internal topic", "topic", topic, "partitions", partitions)
		return nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("streams: create internal topic %s: %w", topic, err)
	}
	md, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("streams: metadata of %s: %w", topic, err)
	}
	if got := len(md[topic].Partitions); got != partitions {
		return fmt.Errorf("streams: internal topic %s has %d partitions, the topology needs %d", topic, got, partitions)
	}
	return nil
}

// restore loads each logged store of tk from its changelog partition, from
// the start to the end offset read now.
func (a *App) restore(ctx context.Context, tk *task) error {
	for name, si := range tk.stores {
		if si.changelog == "" {
			continue
		}
		n, err := a.restoreStore(ctx, si, tk.id.Partition)
		if err != nil {
			return fmt.Errorf("streams: task %s: restore %s: %w", tk.id, name, err)
		}
		a.log.Info("restored store", "task", tk.id.String(), "store", name, "records", n, "keys", len(si.raw.m))
	}
	return nil
}

func (a *App) restoreStore(ctx context.Context, si *storeInst, p int32) (int, error) {
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		si.changelog: {p: kgo.NewOffset().AtStart()},
	})}
	if a.eos() {
		// Only committed writes, and the markers too, so that the end
		// offset (a marker's, often) is seen to be reached.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	cl, err := kgo.NewClient(a.clientOpts(opts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var end int64
	if a.eos() {
		if end, err = waitNoOpenTransaction(ctx, adm, si.changelog, p); err != nil {
			return 0, err
		}
	} else {
		ends, err := adm.ListEndOffsets(ctx, si.changelog)
		if err != nil {
			return 0, err
		}
		o, ok := ends.Lookup(si.changelog, p)
		if !ok || o.Err != nil {
			return 0, fmt.Errorf("end offset of %s-%d: %v", si.changelog, p, o.Err)
		}
		end = o.Offset
	}
	starts, err := adm.ListStartOffsets(ctx, si.changelog)
	if err != nil {
		return 0, err
	}
	if start, ok := starts.Lookup(si.changelog, p); ok && start.Err == nil && start.Offset >= end {
		return 0, nil
	}
	n := 0
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return n, err
		}
		caught := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end-1 {
				caught = true
			}
			if r.Offset >= end || r.Attrs.IsControl() {
				return
			}
			si.raw.restore(r.Key, r.Value, r.Timestamp.UnixMilli())
			n++
		})
		if caught {
			return n, nil
		}
	}
}
