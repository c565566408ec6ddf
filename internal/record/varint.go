package record

// Kafka encodes record fields as zigzag varints (protobuf style): an int32
// takes at most 5 bytes and an int64 at most 10. The decoders below refuse
// encodings that overflow the type instead of silently dropping high bits,
// so a malformed length can never wrap to a plausible small value.

// readVarint decodes a zigzag varint int32 from the start of b. It returns
// the value and the bytes used; n == 0 means b ended early and n < 0 means
// the encoding overflows 32 bits.
func readVarint(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 { // one byte: the common case for small fields
		x := uint32(b[0])
		return int32(x>>1) ^ -int32(x&1), 1
	}
	var x uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, -1
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i + 1
		}
	}
	return 0, -1
}

// readVarlong decodes a zigzag varint int64 from the start of b, with the
// same result convention as readVarint.
func readVarlong(b []byte) (v int64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint64(b[0])
		return int64(x>>1) ^ -int64(x&1), 1
	}
	var x uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 9 && c > 0x01 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), i + 1
		}
	}
	return 0, -1
}

func appendUvarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

func appendVarint(b []byte, v int32) []byte {
	return appendUvarint(b, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendVarlong(b []byte, v int64) []byte {
	return appendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

func sizeUvarint(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func sizeVarint(v int32) int { return sizeUvarint(uint64(uint32(v<<1) ^ uint32(v>>31))) }

func sizeVarlong(v int64) int { return sizeUvarint(uint64(v<<1) ^ uint64(v>>63)) }

// sizeBytesField is the encoded size of a varint-length-prefixed byte field,
// where nil is written as length -1.
func sizeBytesField(p []byte) int {
	if p == nil {
		return 1
	}
	return sizeVarint(int32(len(p))) + len(p)
}

func appendBytesField(b, p []byte) []byte {
	if p == nil {
		return appendVarint(b, -1)
	}
	b = appendVarint(b, int32(len(p)))
	return append(b, p...)
}
