package share

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Persister's five methods: each flattens its request into keys, runs
// them (run), and puts the answers back in the request's shape. A key
// named twice in one request is sent twice and answered twice.

// ref is one partition of a request: its topic and partition index.
type ref struct{ t, p int }

// flatten lists the keys of a request's (topic id, partitions) pairs.
func flatten(group string, topics [][16]byte, partitions [][]int32) ([]Key, []ref) {
	var keys []Key
	var refs []ref
	for t, id := range topics {
		for p, part := range partitions[t] {
			keys = append(keys, Key{GroupID: group, TopicID: id, Partition: part})
			refs = append(refs, ref{t, p})
		}
	}
	return keys, refs
}

// counts are the partition counts of a request's topics.
func counts(parts [][]int32) []int {
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i] = len(p)
	}
	return out
}

// regroup builds the topics of a sub-request: the partitions of idx, each
// topic once, in order of first appearance.
func regroup[T any](refs []ref, idx []int, topic func(t int) T, add func(*T, ref)) []T {
	var out []T
	pos := map[int]int{}
	for _, i := range idx {
		r := refs[i]
		j, ok := pos[r.t]
		if !ok {
			out = append(out, topic(r.t))
			j = len(out) - 1
			pos[r.t] = j
		}
		add(&out[j], r)
	}
	return out
}

// InitializeState implements Persister.
func (p *StatePersister) InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	type answer = kmsg.InitializeShareGroupStateResponseTopicPartition
	ids := make([][16]byte, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
		for _, pp := range t.Partitions {
			parts[i] = append(parts[i], pp.Partition)
		}
	}
	if malformed(req.GroupID, counts(parts)) {
		return req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse), nil
	}
	keys, refs := flatten(req.GroupID, ids, parts)
	answers, err := run(ctx, p, call[answer]{
		keys: keys,
		build: func(idx []int) kmsg.Request {
			sub := kmsg.NewPtrInitializeShareGroupStateRequest()
			sub.Version, sub.GroupID = sub.MaxVersion(), req.GroupID
			sub.Topics = regroup(refs, idx,
				func(t int) kmsg.InitializeShareGroupStateRequestTopic {
					return kmsg.InitializeShareGroupStateRequestTopic{TopicID: req.Topics[t].TopicID}
				},
				func(t *kmsg.InitializeShareGroupStateRequestTopic, r ref) {
					t.Partitions = append(t.Partitions, req.Topics[r.t].Partitions[r.p])
				})
			return sub
		},
		local: func(ctx context.Context, r kmsg.Request) kmsg.Response {
			return p.cfg.Local.InitializeState(ctx, r.(*kmsg.InitializeShareGroupStateRequest))
		},
		answers: func(r kmsg.Response) map[Key]answer {
			out := map[Key]answer{}
			for _, t := range r.(*kmsg.InitializeShareGroupStateResponse).Topics {
				for _, a := range t.Partitions {
					out[Key{req.GroupID, t.TopicID, a.Partition}] = a
				}
			}
			return out
		},
		code: func(a answer) int16 { return a.ErrorCode },
		failed: func(k Key, code int16, msg string) answer {
			a := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			a.Partition, a.ErrorCode, a.ErrorMessage = k.Partition, code, &msg
			return a
		},
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		resp.Topics = append(resp.Topics, rt)
	}
	for i, r := range refs {
		resp.Topics[r.t].Partitions = append(resp.Topics[r.t].Partitions, answers[i])
	}
	return resp, nil
}

// ReadState implements Persister.
func (p *StatePersister) ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	type answer = kmsg.ReadShareGroupStateResponseTopicPartition
	ids := make([][16]byte, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
		for _, pp := range t.Partitions {
			parts[i] = append(parts[i], pp.Partition)
		}
	}
	if malformed(req.GroupID, counts(parts)) {
		return req.ResponseKind().(*kmsg.ReadShareGroupStateResponse), nil
	}
	keys, refs := flatten(req.GroupID, ids, parts)
	answers, err := run(ctx, p, call[answer]{
		keys: keys,
		build: func(idx []int) kmsg.Request {
			sub := kmsg.NewPtrReadShareGroupStateRequest()
			sub.Version, sub.GroupID = sub.MaxVersion(), req.GroupID
			sub.Topics = regroup(refs, idx,
				func(t int) kmsg.ReadShareGroupStateRequestTopic {
					return kmsg.ReadShareGroupStateRequestTopic{TopicID: req.Topics[t].TopicID}
				},
				func(t *kmsg.ReadShareGroupStateRequestTopic, r ref) {
					t.Partitions = append(t.Partitions, req.Topics[r.t].Partitions[r.p])
				})
			return sub
		},
		local: func(ctx context.Context, r kmsg.Request) kmsg.Response {
			return p.cfg.Local.ReadState(ctx, r.(*kmsg.ReadShareGroupStateRequest))
		},
		answers: func(r kmsg.Response) map[Key]answer {
			out := map[Key]answer{}
			for _, t := range r.(*kmsg.ReadShareGroupStateResponse).Topics {
				for _, a := range t.Partitions {
					out[Key{req.GroupID, t.TopicID, a.Partition}] = a
				}
			}
			return out
		},
		code: func(a answer) int16 { return a.ErrorCode },
		failed: func(k Key, code int16, msg string) answer {
			a := kmsg.NewReadShareGroupStateResponseTopicPartition()
			a.Partition, a.ErrorCode, a.ErrorMessage = k.Partition, code, &msg
			return a
		},
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		resp.Topics = append(resp.Topics, rt)
	}
	for i, r := range refs {
		resp.Topics[r.t].Partitions = append(resp.Topics[r.t].Partitions, answers[i])
	}
	return resp, nil
}

// WriteState implements Persister.
func (p *StatePersister) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	type answer = kmsg.WriteShareGroupStateResponseTopicPartition
	ids := make([][16]byte, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
		for _, pp := range t.Partitions {
			parts[i] = append(parts[i], pp.Partition)
		}
	}
	if malformed(req.GroupID, counts(parts)) {
		return req.ResponseKind().(*kmsg.WriteShareGroupStateResponse), nil
	}
	keys, refs := flatten(req.GroupID, ids, parts)
	answers, err := run(ctx, p, call[answer]{
		keys: keys,
		build: func(idx []int) kmsg.Request {
			sub := kmsg.NewPtrWriteShareGroupStateRequest()
			sub.Version, sub.GroupID = sub.MaxVersion(), req.GroupID
			sub.Topics = regroup(refs, idx,
				func(t int) kmsg.WriteShareGroupStateRequestTopic {
					return kmsg.WriteShareGroupStateRequestTopic{TopicID: req.Topics[t].TopicID}
				},
				func(t *kmsg.WriteShareGroupStateRequestTopic, r ref) {
					t.Partitions = append(t.Partitions, req.Topics[r.t].Partitions[r.p])
				})
			return sub
		},
		local: func(ctx context.Context, r kmsg.Request) kmsg.Response {
			return p.cfg.Local.WriteState(ctx, r.(*kmsg.WriteShareGroupStateRequest))
		},
		answers: func(r kmsg.Response) map[Key]answer {
			out := map[Key]answer{}
			for _, t := range r.(*kmsg.WriteShareGroupStateResponse).Topics {
				for _, a := range t.Partitions {
					out[Key{req.GroupID, t.TopicID, a.Partition}] = a
				}
			}
			return out
		},
		code: func(a answer) int16 { return a.ErrorCode },
		failed: func(k Key, code int16, msg string) answer {
			a := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			a.Partition, a.ErrorCode, a.ErrorMessage = k.Partition, code, &msg
			return a
		},
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		resp.Topics = append(resp.Topics, rt)
	}
	for i, r := range refs {
		resp.Topics[r.t].Partitions = append(resp.Topics[r.t].Partitions, answers[i])
	}
	return resp, nil
}

// DeleteState implements Persister.
func (p *StatePersister) DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	type answer = kmsg.DeleteShareGroupStateResponseTopicPartition
	ids := make([][16]byte, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
		for _, pp := range t.Partitions {
			parts[i] = append(parts[i], pp.Partition)
		}
	}
	if malformed(req.GroupID, counts(parts)) {
		return req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse), nil
	}
	keys, refs := flatten(req.GroupID, ids, parts)
	answers, err := run(ctx, p, call[answer]{
		keys: keys,
		build: func(idx []int) kmsg.Request {
			sub := kmsg.NewPtrDeleteShareGroupStateRequest()
			sub.Version, sub.GroupID = sub.MaxVersion(), req.GroupID
			sub.Topics = regroup(refs, idx,
				func(t int) kmsg.DeleteShareGroupStateRequestTopic {
					return kmsg.DeleteShareGroupStateRequestTopic{TopicID: req.Topics[t].TopicID}
				},
				func(t *kmsg.DeleteShareGroupStateRequestTopic, r ref) {
					t.Partitions = append(t.Partitions, req.Topics[r.t].Partitions[r.p])
				})
			return sub
		},
		local: func(ctx context.Context, r kmsg.Request) kmsg.Response {
			return p.cfg.Local.DeleteState(ctx, r.(*kmsg.DeleteShareGroupStateRequest))
		},
		answers: func(r kmsg.Response) map[Key]answer {
			out := map[Key]answer{}
			for _, t := range r.(*kmsg.DeleteShareGroupStateResponse).Topics {
				for _, a := range t.Partitions {
					out[Key{req.GroupID, t.TopicID, a.Partition}] = a
				}
			}
			return out
		},
		code: func(a answer) int16 { return a.ErrorCode },
		failed: func(k Key, code int16, msg string) answer {
			a := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			a.Partition, a.ErrorCode, a.ErrorMessage = k.Partition, code, &msg
			return a
		},
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		resp.Topics = append(resp.Topics, rt)
	}
	for i, r := range refs {
		resp.Topics[r.t].Partitions = append(resp.Topics[r.t].Partitions, answers[i])
	}
	return resp, nil
}

// ReadStateSummary implements Persister.
func (p *StatePersister) ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	type answer = kmsg.ReadShareGroupStateSummaryResponseTopicPartition
	ids := make([][16]byte, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
		for _, pp := range t.Partitions {
			parts[i] = append(parts[i], pp.Partition)
		}
	}
	if malformed(req.GroupID, counts(parts)) {
		return req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse), nil
	}
	keys, refs := flatten(req.GroupID, ids, parts)
	answers, err := run(ctx, p, call[answer]{
		keys: keys,
		build: func(idx []int) kmsg.Request {
			sub := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			sub.Version, sub.GroupID = sub.MaxVersion(), req.GroupID
			sub.Topics = regroup(refs, idx,
				func(t int) kmsg.ReadShareGroupStateSummaryRequestTopic {
					return kmsg.ReadShareGroupStateSummaryRequestTopic{TopicID: req.Topics[t].TopicID}
				},
				func(t *kmsg.ReadShareGroupStateSummaryRequestTopic, r ref) {
					t.Partitions = append(t.Partitions, req.Topics[r.t].Partitions[r.p])
				})
			return sub
		},
		local: func(ctx context.Context, r kmsg.Request) kmsg.Response {
			return p.cfg.Local.ReadStateSummary(ctx, r.(*kmsg.ReadShareGroupStateSummaryRequest))
		},
		answers: func(r kmsg.Response) map[Key]answer {
			out := map[Key]answer{}
			for _, t := range r.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
				for _, a := range t.Partitions {
					out[Key{req.GroupID, t.TopicID, a.Partition}] = a
				}
			}
			return out
		},
		code: func(a answer) int16 { return a.ErrorCode },
		failed: func(k Key, code int16, msg string) answer {
			a := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			a.Partition, a.ErrorCode, a.ErrorMessage = k.Partition, code, &msg
			return a
		},
	})
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		resp.Topics = append(resp.Topics, rt)
	}
	for i, r := range refs {
		resp.Topics[r.t].Partitions = append(resp.Topics[r.t].Partitions, answers[i])
	}
	return resp, nil
}
