package wire

import (
	"net"
	"os"

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
	start := len(dst)
	dst, cuts, ok := AppendFetchHead(dst, correlationID, resp, nil)
	if !ok {
		return dst, nil, false
	}
	from := start
	for _, c := range cuts {
		frame = append(frame, dst[from:c.At], c.Records)
		from = c.At
	}
	return dst, append(frame, dst[from:]), true
}

// FileRecords are a partition's record batches in a fetch answer that
// stay in a file until they are written: Len bytes at offset of the file,
// which stays open until Release.
type FileRecords interface {
	Len() int
	File() (f *os.File, offset int64)
	// ReadTo reads the Len bytes into b; a file shortened meanwhile is
	// an error.
	ReadTo(b []byte) error
	Release()
}

// FetchWithFiles is a Fetch response some of whose record batches are in
// files: Files[k], when not nil, holds the batches of the k-th partition
// of Topics (counting through every topic, in order), whose RecordBatches
// is then empty. Only the network layer writes it (AppendFetchHead): the
// embedded response's own AppendTo would leave those batches out. Whoever
// holds it last calls Release.
type FetchWithFiles struct {
	*kmsg.FetchResponse
	Files []FileRecords
}

// Release releases every file of f.
func (f *FetchWithFiles) Release() {
	for _, r := range f.Files {
		if r != nil {
			r.Release()
		}
	}
}

// FrameCut is where a partition's record batches go in a frame that
// AppendFetchHead made: at position At of its bytes, Records or File.
type FrameCut struct {
	At      int
	Records []byte
	File    FileRecords
}

// AppendFetchHead appends to dst the bytes of a Fetch response frame
// other than its record batches, and returns where the batches go, in
// order: the frame is dst[start:cuts[0].At], the first batches,
// dst[cuts[0].At:cuts[1].At], ... and dst[cuts[len-1].At:]. files, when
// not nil, gives the batches kept in files (FetchWithFiles.Files). ok is
// false, and nothing is appended, for a version below 4 or a response with
// unknown tagged fields.
func AppendFetchHead(dst []byte, correlationID int32, resp *kmsg.FetchResponse, files []FileRecords) (buf []byte, cuts []FrameCut, ok bool) {
	if resp.Version < 4 || resp.Version > 18 || hasUnknownTags(resp) {
		return dst, nil, false
	}
	flexible := resp.Version >= 12
	start := len(dst)
	parts := 0
	for i := range resp.Topics {
		parts += len(resp.Topics[i].Partitions)
	}
	cuts = make([]FrameCut, 0, parts)
	size := 0                     // bytes of record batches
	k := -1                       // partition count, for files
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
			k++
			var file FileRecords
			if k < len(files) {
				file = files[k]
			}
			records := len(p.RecordBatches)
			if file != nil {
				records = file.Len()
			}
			switch {
			case file != nil && flexible:
				dst = kbin.AppendUvarint(dst, uint32(records)+1)
			case file != nil:
				dst = kbin.AppendInt32(dst, int32(records))
			case p.RecordBatches == nil && flexible:
				dst = append(dst, 0)
			case p.RecordBatches == nil:
				dst = kbin.AppendInt32(dst, -1)
			case flexible:
				dst = kbin.AppendUvarint(dst, uint32(len(p.RecordBatches))+1)
			default:
				dst = kbin.AppendInt32(dst, int32(len(p.RecordBatches)))
			}
			if records > 0 {
				cuts = append(cuts, FrameCut{At: len(dst), Records: p.RecordBatches, File: file})
				size += records
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
	size += len(dst) - start - 4
	dst[start], dst[start+1], dst[start+2], dst[start+3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
	if len(cuts) == 0 {
		cuts = nil // nothing to write but dst
	}
	return dst, cuts, true
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
