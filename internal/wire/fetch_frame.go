package wire

import (
	"net"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendFetchFrame is AppendResponse for a Fetch response, without copying
// its record batches: it appends the frame's other bytes to dst and
// returns them and the frame as buffers for a vectored write (writev):
// slices of dst alternating with each partition's RecordBatches, which
// the caller must keep unchanged until the write is done. The buffers
// hold exactly the bytes AppendResponse would. ok is false, and nothing
// is appended, for a response this encoder does not cover (a version
// below 4, or unknown tagged fields): the caller uses AppendResponse.
func AppendFetchFrame(dst []byte, correlationID int32, resp *kmsg.FetchResponse) (buf []byte, frame net.Buffers, ok bool) {
	if resp.Version < 4 || resp.Version > 18 || hasUnknownTags(resp) {
		return dst, nil, false
	}
	flexible := resp.Version >= 12
	start := len(dst)
	// Where the bytes of dst end for each record set: the frame is
	// dst[start:cut[0]], recs[0], dst[cut[0]:cut[1]], recs[1], ...
	var cuts []int
	var recs [][]byte
	dst = append(dst, 0, 0, 0, 0) // size, set below
	dst = kbin.AppendInt32(dst, correlationID)
	if flexible {
		dst = append(dst, 0) // header tags
	}
	dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	if resp.Version >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	dst = appendArrayLen(dst, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if resp.Version <= 12 {
			dst = appendString(dst, t.Topic, flexible)
		} else {
			dst = append(dst, t.TopicID[:]...)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LastStableOffset)
			if resp.Version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if flexible {
				dst = kbin.AppendCompactNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
			} else {
				dst = kbin.AppendNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
			}
			for _, a := range p.AbortedTransactions {
				dst = kbin.AppendInt64(dst, a.ProducerID)
				dst = kbin.AppendInt64(dst, a.FirstOffset)
				if flexible {
					dst = append(dst, 0)
				}
			}
			if resp.Version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			switch {
			case p.RecordBatches == nil && flexible:
				dst = append(dst, 0)
			case p.RecordBatches == nil:
				dst = kbin.AppendInt32(dst, -1)
			case flexible:
				dst = kbin.AppendUvarint(dst, uint32(len(p.RecordBatches))+1)
			default:
				dst = kbin.AppendInt32(dst, int32(len(p.RecordBatches)))
			}
			if len(p.RecordBatches) > 0 {
				cuts = append(cuts, len(dst))
				recs = append(recs, p.RecordBatches)
			}
			if flexible {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flexible {
			dst = append(dst, 0)
		}
	}
	if flexible {
		if len(resp.Brokers) == 0 {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 1, 0) // one tag: 0, the node endpoints
			lenAt := len(dst)
			body := appendArrayLen(nil, len(resp.Brokers), true)
			for _, b := range resp.Brokers {
				body = kbin.AppendInt32(body, b.NodeID)
				body = appendString(body, b.Host, true)
				body = kbin.AppendInt32(body, b.Port)
				body = kbin.AppendCompactNullableString(body, b.Rack)
				body = append(body, 0)
			}
			dst = append(kbin.AppendUvarint(dst[:lenAt], uint32(len(body))), body...)
		}
	}
	size := len(dst) - start - 4
	for _, r := range recs {
		size += len(r)
	}
	dst[start], dst[start+1], dst[start+2], dst[start+3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
	from := start
	for i, c := range cuts {
		frame = append(frame, dst[from:c], recs[i])
		from = c
	}
	frame = append(frame, dst[from:])
	return dst, frame, true
}

// appendPartitionTags appends a flexible partition's tagged fields:
// diverging epoch (0), current leader (1) and snapshot id (2), each when
// not at its default.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, on := range []bool{diverging, leader, snapshot} {
		if on {
			n++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(n))
	if diverging {
		dst = append(dst, 0, 13) // tag, size: int32 + int64 + no tags
		dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
		dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
		dst = append(dst, 0)
	}
	if leader {
		dst = append(dst, 1, 9) // int32 + int32 + no tags
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderID)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderEpoch)
		dst = append(dst, 0)
	}
	if snapshot {
		dst = append(dst, 2, 13) // int64 + int32 + no tags
		dst = kbin.AppendInt64(dst, p.SnapshotID.EndOffset)
		dst = kbin.AppendInt32(dst, p.SnapshotID.Epoch)
		dst = append(dst, 0)
	}
	return dst
}

// hasUnknownTags reports whether resp carries tagged fields this encoder
// does not write (Samsa never sets any).
func hasUnknownTags(resp *kmsg.FetchResponse) bool {
	if resp.UnknownTags.Len() > 0 {
		return true
	}
	for _, b := range resp.Brokers {
		if b.UnknownTags.Len() > 0 {
			return true
		}
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return true
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.UnknownTags.Len() > 0 || p.SnapshotID.UnknownTags.Len() > 0 {
				return true
			}
			for _, a := range p.AbortedTransactions {
				if a.UnknownTags.Len() > 0 {
					return true
				}
			}
		}
	}
	return false
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}
