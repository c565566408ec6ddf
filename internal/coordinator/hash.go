package coordinator

// JavaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... over
// UTF-16 code units, with int32 overflow. Placement must agree with Kafka's
// so clients and tools find the same coordinator partition.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor is Kafka's Utils.abs(hash) % n, used to place a group on
// __consumer_offsets and a transactional id on __transaction_state.
// Utils.abs masks the sign bit rather than negating, so MinInt32 maps to 0.
func PartitionFor(id string, n int32) int32 {
	return (JavaStringHashCode(id) & 0x7fffffff) % n
}
