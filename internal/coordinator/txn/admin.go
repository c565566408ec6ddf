package txn

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions serves DescribeTransactions v0: the state of each
// requested id this coordinator owns (NOT_COORDINATOR otherwise,
// TRANSACTIONAL_ID_NOT_FOUND if unknown).
func (c *Coordinator) DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	r := kmsg.NewPtrDescribeTransactionsResponse()
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.StartTimestamp, st.ProducerID, st.ProducerEpoch = -1, -1, -1
		s, code := c.shardFor(id)
		if code == kerr.InvalidRequest.Code {
			code = kerr.TransactionalIDNotFound.Code
		}
		if code == 0 {
			s.mu.Lock()
			if t := s.mu.txns[id]; s.unloadedLocked() {
				code = kerr.NotCoordinator.Code
			} else if t == nil {
				code = kerr.TransactionalIDNotFound.Code
			} else {
				st.State = t.state.String()
				st.TimeoutMillis, st.StartTimestamp = t.timeoutMs, t.startMs
				st.ProducerID, st.ProducerEpoch = t.producerID, t.epoch
				byTopic(t.sortedPartitions(), func(topic string, parts []int32) {
					st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: topic, Partitions: parts})
				})
			}
			s.mu.Unlock()
		}
		st.ErrorCode = code
		r.TransactionStates = append(r.TransactionStates, st)
	}
	return r
}

// ListTransactions serves ListTransactions v0-v2: every transactional id of
// the loaded partitions that passes all filters: states (unknown names are
// echoed in UnknownStateFilters), producer ids, v1 duration (transactions
// running longer than it) and v2 id pattern (KIP-1152; see idPattern).
func (c *Coordinator) ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	r := kmsg.NewPtrListTransactionsResponse()
	pattern, ok := idPattern(req)
	if !ok {
		// Kafka throws InvalidRegularExpression: an error response with
		// the code alone.
		r.ErrorCode = kerr.InvalidRegularExpression.Code
		return r
	}
	states := map[State]bool{}
	for _, name := range req.StateFilters {
		if st, ok := parseState(name); ok {
			states[st] = true
		} else {
			r.UnknownStateFilters = append(r.UnknownStateFilters, name)
		}
	}
	if len(r.UnknownStateFilters) > 0 && len(states) == 0 {
		return r // only unknown states: nothing can match
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	now := c.cfg.Now().UnixMilli()
	for _, p := range c.rt.Partitions() {
		s := p.Shard
		if code := p.Ready(); code != 0 {
			if code == kerr.CoordinatorLoadInProgress.Code {
				r.ErrorCode = code // Kafka answers nothing while any partition loads
				r.TransactionStates = nil
				return r
			}
			continue
		}
		s.mu.Lock()
		for id, t := range s.mu.txns {
			switch {
			case len(states) > 0 && !states[t.state]:
			case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.producerID):
			case duration >= 0 && (t.startMs < 0 || now-t.startMs <= duration):
			case pattern != nil && !pattern.MatchString(id):
			default:
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = id, t.producerID, t.state.String()
				r.TransactionStates = append(r.TransactionStates, st)
			}
		}
		s.mu.Unlock()
	}
	slices.SortFunc(r.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		switch {
		case a.TransactionalID < b.TransactionalID:
			return -1
		case a.TransactionalID > b.TransactionalID:
			return 1
		}
		return 0
	})
	return r
}

// idPattern is v2's transactional id filter: nil for none (no pattern, or
// an empty one), false for a pattern that does not compile. Kafka compiles
// it with re2j and keeps the ids it matches whole (Matcher.matches), so
// the pattern is checked as given, in RE2 syntax like Go's, and then
// anchored at both ends: "tx" lists "tx" but not "tx-1".
func idPattern(req *kmsg.ListTransactionsRequest) (*regexp.Regexp, bool) {
	if req.Version < 2 || req.TransactionalIDPattern == nil || *req.TransactionalIDPattern == "" {
		return nil, true
	}
	p := *req.TransactionalIDPattern
	// Compiled alone first: wrapping could make an invalid pattern valid
	// ("a)(b" becomes "\A(?:a)(b)\z").
	if _, err := regexp.Compile(p); err != nil {
		return nil, false
	}
	re, err := regexp.Compile(`\A(?:` + p + `)\z`)
	return re, err == nil
}
