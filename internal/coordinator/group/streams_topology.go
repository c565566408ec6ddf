package group

import (
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeatResponse.Status (KIP-1071).
const (
	sgStatusStaleTopology         = 0
	sgStatusMissingSourceTopics   = 1
	sgStatusIncorrectlyPartition  = 2
	sgStatusMissingInternalTopics = 3
	sgStatusShutdownApplication   = 4
	sgStatusAssignmentDelayed     = 5
)

// configuredTopology is a topology checked against the cluster's topics
// (Kafka's ConfiguredTopology): how many tasks each subtopology has, and
// what stops it from being assigned. It is derived on each heartbeat,
// never stored.
type configuredTopology struct {
	ready    bool
	numTasks map[string]int32    // subtopology -> task count
	sources  map[string][]string // subtopology -> source topics, regex matches included
	internal map[string]int32    // internal topic -> partition count
	inputs   map[string][]string // subtopology -> source and repartition source topics
	statuses []kmsg.StreamsGroupHeartbeatResponseStatus
	create   []kmsg.CreateTopicsRequestTopic // internal topics to create
	hash     int64                           // of the partition counts of the topics it uses
}

func status(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	return kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: code, StatusDetail: detail}
}

// configureTopology validates t against topics: source topics must exist,
// copartitioned topics must agree on their partition count, and internal
// (repartition and changelog) topics must exist with the derived count;
// missing ones are returned for creation.
func configureTopology(t *sgTopology, topics map[string]TopicInfo) *configuredTopology {
	ct := &configuredTopology{numTasks: map[string]int32{}, inputs: map[string][]string{}, internal: map[string]int32{}}
	h := fnv.New64a()
	used := map[string]bool{}
	partitionsOf := func(name string) (int32, bool) {
		ti, ok := topics[name]
		if ok && !used[name] {
			used[name] = true
		}
		return ti.Partitions, ok
	}
	defer func() {
		for _, name := range slices.Sorted(maps.Keys(used)) {
			fmt.Fprintf(h, "%s/%d;", name, topics[name].Partitions)
		}
		ct.hash = int64(h.Sum64())
	}()

	// Source topics, including those a regex matches.
	sources := map[string][]string{}
	var missing []string
	for _, s := range t.subs {
		srcs := slices.Clone(s.SourceTopics)
		for _, re := range s.SourceTopicRegex {
			if rx, err := regexp.Compile("^(?:" + re + ")$"); err == nil {
				for _, name := range slices.Sorted(maps.Keys(topics)) {
					if rx.MatchString(name) && !strings.HasPrefix(name, "__") {
						srcs = append(srcs, name)
					}
				}
			}
		}
		for _, name := range srcs {
			if _, ok := partitionsOf(name); !ok {
				missing = append(missing, name)
			}
		}
		sources[s.SubtopologyID] = srcs
	}
	ct.sources = sources
	if len(missing) > 0 {
		slices.Sort(missing)
		missing = slices.Compact(missing)
		ct.statuses = append(ct.statuses, status(sgStatusMissingSourceTopics, "Source topics "+strings.Join(missing, ", ")+" are missing."))
		return ct
	}

	// Repartition topics: a fixed count, or the largest source count of
	// the subtopologies writing to them.
	repart := map[string]int32{}
	for _, s := range t.subs {
		for _, r := range s.RepartitionSourceTopics {
			if r.NumPartitions > 0 {
				repart[r.Topic] = r.NumPartitions
			}
		}
	}
	inputsOf := func(sub string) (int32, bool) {
		var n int32
		for _, name := range sources[sub] {
			p, _ := partitionsOf(name)
			n = max(n, p)
		}
		for _, s := range t.subs {
			if s.SubtopologyID != sub {
				continue
			}
			for _, r := range s.RepartitionSourceTopics {
				p, ok := repart[r.Topic]
				if !ok {
					return 0, false
				}
				n = max(n, p)
			}
		}
		return n, n > 0
	}
	for range len(t.subs) + 1 {
		for _, s := range t.subs {
			for _, r := range s.RepartitionSourceTopics {
				if _, ok := repart[r.Topic]; ok {
					continue
				}
				var n int32
				for _, up := range t.subs {
					if slices.Contains(up.RepartitionSinkTopics, r.Topic) {
						if p, ok := inputsOf(up.SubtopologyID); ok {
							n = max(n, p)
						}
					}
				}
				if n > 0 {
					repart[r.Topic] = n
				}
			}
		}
	}

	// Copartition groups.
	for _, s := range t.subs {
		for _, g := range s.CopartitionGroups {
			var names []string
			counts := map[int32]bool{}
			var largest int32
			for _, i := range g.SourceTopics {
				if int(i) < len(s.SourceTopics) {
					p, _ := partitionsOf(s.SourceTopics[i])
					names = append(names, s.SourceTopics[i])
					counts[p] = true
					largest = max(largest, p)
				}
			}
			if len(counts) > 1 {
				slices.Sort(names)
				ct.statuses = append(ct.statuses, status(sgStatusIncorrectlyPartition,
					fmt.Sprintf("Following topics do not have the same number of partitions: [%s]", strings.Join(names, ", "))))
				return ct
			}
			for _, i := range g.RepartitionSourceTopics {
				if int(i) >= len(s.RepartitionSourceTopics) {
					continue
				}
				r := s.RepartitionSourceTopics[i]
				if r.NumPartitions > 0 {
					largest = max(largest, r.NumPartitions)
				} else if largest > 0 {
					repart[r.Topic] = largest
				}
			}
		}
	}

	for _, s := range t.subs {
		n, ok := inputsOf(s.SubtopologyID)
		if !ok {
			ct.statuses = append(ct.statuses, status(sgStatusIncorrectlyPartition,
				fmt.Sprintf("The number of partitions of the repartition topics of subtopology %s cannot be determined.", s.SubtopologyID)))
			return ct
		}
		ct.numTasks[s.SubtopologyID] = n
		ins := slices.Clone(sources[s.SubtopologyID])
		for _, r := range s.RepartitionSourceTopics {
			ins = append(ins, r.Topic)
		}
		ct.inputs[s.SubtopologyID] = ins
	}

	// Internal topics: create the missing, check the existing.
	var missingInternal []string
	check := func(ti kmsg.TopicInfo, want int32) bool {
		ct.internal[ti.Topic] = want
		have, ok := partitionsOf(ti.Topic)
		switch {
		case !ok:
			missingInternal = append(missingInternal, ti.Topic)
			ct.create = append(ct.create, internalTopic(ti, want))
		case have != want:
			ct.statuses = append(ct.statuses, status(sgStatusIncorrectlyPartition,
				fmt.Sprintf("Existing internal topic %s has invalid number of partitions: %d, expected %d.", ti.Topic, have, want)))
			return false
		}
		return true
	}
	for _, s := range t.subs {
		for _, r := range s.RepartitionSourceTopics {
			if !check(r, repart[r.Topic]) {
				return ct
			}
		}
		for _, c := range s.StateChangelogTopics {
			if !check(c, ct.numTasks[s.SubtopologyID]) {
				return ct
			}
		}
	}
	if len(missingInternal) > 0 {
		slices.Sort(missingInternal)
		ct.statuses = append(ct.statuses, status(sgStatusMissingInternalTopics,
			"Internal topics are missing: "+strings.Join(missingInternal, ", ")))
		return ct
	}
	ct.ready = true
	return ct
}

// internalTopic is the CreateTopics entry of a missing internal topic:
// the topology's configs, and the broker's defaults for an unset
// replication factor.
func internalTopic(ti kmsg.TopicInfo, partitions int32) kmsg.CreateTopicsRequestTopic {
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = ti.Topic
	ct.NumPartitions = partitions
	ct.ReplicationFactor = ti.ReplicationFactor
	if ct.ReplicationFactor == 0 {
		ct.ReplicationFactor = -1
	}
	for _, c := range ti.Configs {
		cc := kmsg.NewCreateTopicsRequestTopicConfig()
		cc.Name, cc.Value = c.Key, kmsg.StringPtr(c.Value)
		ct.Configs = append(ct.Configs, cc)
	}
	return ct
}

// allTasks lists every task of a ready topology, by partition then
// subtopology, so that handing them out in order spreads each
// subtopology's tasks over the members.
func (ct *configuredTopology) allTasks() []taskID {
	var out []taskID
	subs := slices.Sorted(maps.Keys(ct.numTasks))
	var most int32
	for _, n := range ct.numTasks {
		most = max(most, n)
	}
	for p := range most {
		for _, sub := range subs {
			if p < ct.numTasks[sub] {
				out = append(out, taskID{sub, p})
			}
		}
	}
	return out
}
