package wire

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAppendFetchFrameMatchesKmsg: for random Fetch responses of every
// version from 4 to 18, the buffers of AppendFetchFrame hold exactly the
// frame AppendResponse (kmsg's encoder) makes, and the record batches are
// the caller's slices, not copies.
func TestAppendFetchFrameMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for version := int16(4); version <= 18; version++ {
		for range 200 {
			resp := randomFetchResponse(rng, version)
			want := AppendResponse(nil, 77, resp)
			prefix := []byte("previous frame")
			buf, frame, ok := AppendFetchFrame(bytes.Clone(prefix), 77, resp)
			if !ok {
				t.Fatalf("v%d: not encoded", version)
			}
			if !bytes.HasPrefix(buf, prefix) {
				t.Fatalf("v%d: the bytes before dst's end changed", version)
			}
			var got []byte
			shared := 0
			for _, b := range frame {
				got = append(got, b...)
				for _, tp := range resp.Topics {
					for _, p := range tp.Partitions {
						if len(b) > 0 && len(p.RecordBatches) > 0 && &b[0] == &p.RecordBatches[0] {
							shared++
						}
					}
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d: frame differs from kmsg's:\n got %x\nwant %x", version, got, want)
			}
			if n := recordSets(resp); shared != n {
				t.Fatalf("v%d: %d of %d record sets copied", version, n-shared, n)
			}
		}
	}
}

func TestAppendFetchFrameDeclines(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 3
	if _, _, ok := AppendFetchFrame(nil, 1, resp); ok {
		t.Fatal("v3 encoded")
	}
	resp.Version = 16
	resp.UnknownTags.Set(9, []byte{1})
	if _, _, ok := AppendFetchFrame(nil, 1, resp); ok {
		t.Fatal("unknown tags encoded")
	}
}

func recordSets(resp *kmsg.FetchResponse) int {
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if len(p.RecordBatches) > 0 {
				n++
			}
		}
	}
	return n
}

func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = rng.Int32N(100)
	resp.ErrorCode = int16(rng.IntN(3))
	resp.SessionID = rng.Int32()
	for ti := range rng.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(rune('a'+ti)) + "-topic"
		fill(rng, t.TopicID[:])
		for pi := range rng.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.ErrorCode = int16(rng.IntN(2))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			p.PreferredReadReplica = rng.Int32N(3) - 1
			switch rng.IntN(3) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			default:
				p.RecordBatches = make([]byte, 1+rng.IntN(300))
				fill(rng, p.RecordBatches)
			}
			if rng.IntN(2) == 0 {
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for range rng.IntN(3) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = rng.Int64(), rng.Int64()
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			if rng.IntN(3) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32N(9), rng.Int64N(1000)
			}
			if rng.IntN(3) == 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32N(9), rng.Int32N(9)
			}
			if rng.IntN(4) == 0 {
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = rng.Int64N(1000), rng.Int32N(9)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if rng.IntN(3) == 0 {
		for id := range rng.IntN(3) + 1 {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Host, b.Port = int32(id), "host-"+string(rune('0'+id)), 9092+int32(id)
			if rng.IntN(2) == 0 {
				b.Rack = kmsg.StringPtr("rack")
			}
			resp.Brokers = append(resp.Brokers, b)
		}
	}
	return resp
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// memFile is FileRecords over bytes in memory.
type memFile struct{ b []byte }

func (m memFile) Len() int                { return len(m.b) }
func (m memFile) File() (*os.File, int64) { return nil, 0 }
func (m memFile) ReadTo(b []byte) error   { copy(b, m.b); return nil }
func (m memFile) Release()                {}

// TestAppendFetchHeadWithFiles: with some partitions' batches given as
// files (and their RecordBatches empty), the head and the files in cut
// order make exactly kmsg's frame of the response with the batches in
// place.
func TestAppendFetchHeadWithFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for version := int16(4); version <= 18; version++ {
		for range 200 {
			resp := randomFetchResponse(rng, version)
			want := AppendResponse(nil, 9, resp)
			var files []FileRecords
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					p := &resp.Topics[i].Partitions[j]
					var f FileRecords
					if len(p.RecordBatches) > 0 && rng.IntN(2) == 0 {
						f, p.RecordBatches = memFile{p.RecordBatches}, []byte{}
					}
					files = append(files, f)
				}
			}
			buf, cuts, ok := AppendFetchHead(nil, 9, resp, files)
			if !ok {
				t.Fatalf("v%d: not encoded", version)
			}
			var got []byte
			from := 0
			for _, c := range cuts {
				got = append(got, buf[from:c.At]...)
				if c.File != nil {
					b := make([]byte, c.File.Len())
					c.File.ReadTo(b)
					got = append(got, b...)
				} else {
					got = append(got, c.Records...)
				}
				from = c.At
			}
			got = append(got, buf[from:]...)
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d: frame differs from kmsg's", version)
			}
		}
	}
}
