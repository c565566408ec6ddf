package coordinator

import "testing"

func TestPartitionFor(t *testing.T) {
	// Values computed with Java's "...".hashCode().
	for _, c := range []struct {
		s    string
		hash int32
	}{{"", 0}, {"a", 97}, {"group", 98629247}, {"polygenelubricants", -2147483648}, {"😀", 0xD83D*31 + 0xDE00}} {
		if got := JavaStringHashCode(c.s); got != c.hash {
			t.Errorf("hash(%q) = %d, want %d", c.s, got, c.hash)
		}
	}
	if got := PartitionFor("polygenelubricants", 50); got != 0 {
		t.Errorf("MinInt32 hash: partition %d, want 0", got)
	}
	if got := PartitionFor("group", 50); got != 98629247%50 {
		t.Errorf("partition %d", got)
	}
}
