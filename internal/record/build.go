package record

import (
	"encoding/binary"
	"fmt"
)

// ProducerInfo identifies an idempotent or transactional producer.
type ProducerInfo struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
}

// BuildOptions describes the batch Build writes. The zero value is a plain
// CreateTime, uncompressed batch at offset 0 with no producer.
type BuildOptions struct {
	BaseOffset int64
	// PartitionLeaderEpoch is written as given; producers send -1.
	PartitionLeaderEpoch int32
	Codec                Codec
	// Producer, when nil, writes producer id, epoch and base sequence -1,
	// as a non-idempotent producer does.
	Producer      *ProducerInfo
	Transactional bool
	Control       bool
	// LogAppendTime marks the batch's timestamps as broker-assigned and
	// sets its MaxTimestamp to AppendTime. Record timestamps are still
	// encoded from Record.Timestamp, as Kafka leaves them.
	LogAppendTime bool
	AppendTime    int64
	// KeepOffsets encodes each record's offset delta as Record.Offset -
	// BaseOffset instead of 0..n-1, and LastOffsetDelta as the last
	// record's: how the log cleaner rewrites a batch with records removed
	// (offsets must not change, gaps are allowed). Offsets must increase.
	KeepOffsets bool
	// DeleteHorizonMs, when HasDeleteHorizon is set, marks the batch with
	// attribute bit 6 and stores the horizon in the base timestamp field
	// (KIP-534): the cleaner may drop its tombstones once its clock passes
	// it. Record timestamps stay exact (deltas are relative to the field).
	HasDeleteHorizon bool
	DeleteHorizonMs  int64
}

// DeleteHorizon returns the delete horizon of a batch written by the log
// cleaner (KIP-534: attribute bit 6, horizon in the base timestamp field).
func (h Header) DeleteHorizon() (int64, bool) {
	if h.Attributes&deleteHorizonBit == 0 {
		return 0, false
	}
	return h.BaseTimestamp, true
}

// Build encodes recs as one v2 batch. Records get offset deltas 0..n-1 in
// order (Record.Offset is ignored); the base timestamp is the first
// record's, MaxTimestamp the largest. With no records it writes an empty
// batch (LastOffsetDelta -1, timestamps -1) as compaction can leave behind.
// It panics on an unknown codec: Build is for tests and tools, whose input
// is known.
func Build(opts BuildOptions, recs []Record) []byte {
	b, err := AppendBuild(nil, opts, recs)
	if err != nil {
		panic(err)
	}
	return b
}

// AppendBuild is Build appending to dst and returning errors.
func AppendBuild(dst []byte, opts BuildOptions, recs []Record) ([]byte, error) {
	var baseTS, maxTS int64 = -1, -1
	if len(recs) > 0 {
		baseTS = recs[0].Timestamp
		maxTS = recs[0].Timestamp
		for _, r := range recs[1:] {
			maxTS = max(maxTS, r.Timestamp)
		}
	}
	attrs := int16(opts.Codec) & compressionMask
	if opts.LogAppendTime {
		attrs |= timestampTypeBit
		maxTS = opts.AppendTime
	}
	if opts.Transactional {
		attrs |= transactionalBit
	}
	if opts.Control {
		attrs |= controlBit
	}
	if opts.HasDeleteHorizon {
		attrs |= deleteHorizonBit
		baseTS = opts.DeleteHorizonMs
	}
	lastDelta := int32(len(recs) - 1)
	if opts.KeepOffsets && len(recs) > 0 {
		lastDelta = int32(recs[len(recs)-1].Offset - opts.BaseOffset)
	}
	p := ProducerInfo{ID: -1, Epoch: -1, BaseSequence: -1}
	if opts.Producer != nil {
		p = *opts.Producer
	}

	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	hdr := dst[start:]
	binary.BigEndian.PutUint64(hdr[baseOffsetOffset:], uint64(opts.BaseOffset))
	binary.BigEndian.PutUint32(hdr[leaderEpochOffset:], uint32(opts.PartitionLeaderEpoch))
	hdr[magicOffset] = CurrentMagic
	binary.BigEndian.PutUint16(hdr[attributesOffset:], uint16(attrs))
	binary.BigEndian.PutUint32(hdr[lastOffsetDeltaOff:], uint32(lastDelta))
	binary.BigEndian.PutUint64(hdr[baseTimestampOffset:], uint64(baseTS))
	binary.BigEndian.PutUint64(hdr[maxTimestampOffset:], uint64(maxTS))
	binary.BigEndian.PutUint64(hdr[producerIDOffset:], uint64(p.ID))
	binary.BigEndian.PutUint16(hdr[producerEpochOffset:], uint16(p.Epoch))
	binary.BigEndian.PutUint32(hdr[baseSequenceOffset:], uint32(p.BaseSequence))
	binary.BigEndian.PutUint32(hdr[recordCountOffset:], uint32(len(recs)))

	delta := func(i int) int32 {
		if opts.KeepOffsets {
			return int32(recs[i].Offset - opts.BaseOffset)
		}
		return int32(i)
	}
	if opts.Codec == CodecNone {
		for i := range recs {
			dst = appendRecord(dst, &recs[i], delta(i), baseTS)
		}
	} else {
		var raw []byte
		for i := range recs {
			raw = appendRecord(raw, &recs[i], delta(i), baseTS)
		}
		var err error
		if dst, err = appendCompressed(dst, opts.Codec, raw); err != nil {
			return nil, fmt.Errorf("build batch: %w", err)
		}
	}
	batch := dst[start:]
	binary.BigEndian.PutUint32(batch[lengthOffset:], uint32(len(batch)-LogOverhead))
	binary.BigEndian.PutUint32(batch[crcOffset:], ComputeCRC(batch))
	return dst, nil
}

// appendRecord encodes one record: its body size first, so it is computed
// up front rather than by encoding twice.
func appendRecord(dst []byte, r *Record, offsetDelta int32, baseTS int64) []byte {
	tsDelta := r.Timestamp - baseTS
	size := 1 + sizeVarlong(tsDelta) + sizeVarint(offsetDelta) +
		sizeBytesField(r.Key) + sizeBytesField(r.Value) + sizeVarint(int32(len(r.Headers)))
	for _, h := range r.Headers {
		size += sizeVarint(int32(len(h.Key))) + len(h.Key) + sizeBytesField(h.Value)
	}
	dst = appendVarint(dst, int32(size))
	dst = append(dst, byte(r.Attributes))
	dst = appendVarlong(dst, tsDelta)
	dst = appendVarint(dst, offsetDelta)
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	dst = appendVarint(dst, int32(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytesField(dst, h.Value)
	}
	return dst
}
