// Package record reads, checks and writes Kafka record batches (magic v2),
// the unit in which records travel in produce and fetch and sit in log
// segments.
//
// The broker keeps batches as raw bytes end to end: Validate checks one on
// the produce path without decoding it into structs (and, for uncompressed
// batches, without allocating), and the Set* functions patch the header
// fields the broker owns (base offset, leader epoch, LogAppendTime, max
// timestamp). Records, Build and the codecs are for the places that do need
// records: coordinators loading internal topics, tools and tests.
//
// # Batch layout
//
// All integers are big-endian. The CRC-32C (Castagnoli) covers attributes
// to the end of the batch, so baseOffset and partitionLeaderEpoch can be
// rewritten without recomputing it.
//
//	offset  size  field
//	     0     8  baseOffset             first offset; 0 from producers
//	     8     4  length                 bytes after this field
//	    12     4  partitionLeaderEpoch   -1 from producers
//	    16     1  magic                  2
//	    17     4  crc                    CRC-32C of bytes 21..end
//	    21     2  attributes             bits 0-2 codec (0 none, 1 gzip, 2 snappy,
//	                                     3 lz4, 4 zstd), bit 3 LogAppendTime,
//	                                     bit 4 transactional, bit 5 control,
//	                                     bit 6 delete horizon set
//	    23     4  lastOffsetDelta        last record's offset - baseOffset
//	    27     8  baseTimestamp          first record's timestamp
//	    35     8  maxTimestamp           largest timestamp (or the append time)
//	    43     8  producerId             -1 when not idempotent
//	    51     2  producerEpoch          -1 when not idempotent
//	    53     4  baseSequence           -1 when not idempotent
//	    57     4  recordCount
//	    61     …  records                compressed as a whole per the codec
//
// # Record layout
//
// Each record is a sequence of zigzag varints (varint: int32, at most 5
// bytes; varlong: int64, at most 10):
//
//	length          varint   bytes in the record after this field
//	attributes      int8     unused, 0
//	timestampDelta  varlong  timestamp - baseTimestamp (may be negative)
//	offsetDelta     varint   offset - baseOffset; 0..n-1 from producers
//	keyLength       varint   -1 for a null key
//	key             bytes
//	valueLength     varint   -1 for a null value
//	value           bytes
//	headerCount     varint
//	headers         headerCount × (keyLength varint ≥ 0, key,
//	                                valueLength varint, -1 for null, value)
//
// Compaction may remove records from a stored batch, leaving gaps in
// offsetDelta and even zero records; lastOffsetDelta keeps the original
// range. Validate requires producer form; ValidateStored accepts the gaps.
//
// # Errors
//
// Failures wrap one of three sentinels, mapped to Kafka error codes at the
// API handler: ErrCorrupt (CORRUPT_MESSAGE: size or CRC wrong, records that
// do not decompress), ErrInvalid (INVALID_RECORD: the CRC matched but the
// content breaks the format, as Kafka's InvalidRecordException), and
// ErrUnsupportedMagic (message formats v0 and v1).
//
// # Compression
//
// gzip, snappy (xerial framing as the Java client writes; bare snappy
// blocks accepted when reading), LZ4 frames and zstd. Validation streams a
// compressed batch through a 32 KiB window, as Kafka's LogValidator does,
// so its memory does not grow with the decompressed size; the zstd window
// and snappy blocks that do are charged to a Budget shared by the node.
// Decompression stops at MaxDecompressedSize so a small hostile batch
// cannot burn unbounded CPU either.
package record
