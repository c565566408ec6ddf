package network

import "testing"

func TestBufClasses(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 4097, 1 << 20, 1<<20 + 1, 64 << 20} {
		b := getBuf(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("getBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
		if cap(b) > 2*n && cap(b) > 4096 {
			t.Fatalf("getBuf(%d): cap %d wastes more than half", n, cap(b))
		}
		putBuf(append(b, 1))
	}
	big := getBuf(65<<20 + 1)
	if cap(big) != 65<<20+1 {
		t.Fatalf("oversized buffer: cap %d", cap(big))
	}
	putBuf(big)                   // dropped, not pooled
	putBuf(make([]byte, 0, 5000)) // not a class size: dropped
}
