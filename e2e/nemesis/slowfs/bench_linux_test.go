package slowfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-io/samsa/internal/tmpfstest"
)

// BenchmarkAppend appends 512 bytes or 16 KiB at a time to a file, with an
// fsync every 64 appends, directly on a tmpfs and through the mount over a
// tmpfs with the delay off: the cost of the passthrough.
//
//	go test ./e2e/nemesis/slowfs -run '^$' -bench Append
func BenchmarkAppend(b *testing.B) {
	run := func(b *testing.B, dir string, size int) {
		f, err := os.OpenFile(filepath.Join(dir, "seg"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, size)
		b.SetBytes(int64(len(buf)))
		for i := 0; b.Loop(); i++ {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			if i%64 == 63 {
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				// Keep the file small: a tmpfs holds it in memory.
				if err := f.Truncate(0); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, size := range []int{512, 16 << 10} {
		b.Run(fmt.Sprintf("tmpfs/%dB", size), func(b *testing.B) { run(b, tmpfstest.Mount(b, 64<<20), size) })
		b.Run(fmt.Sprintf("fuse-over-tmpfs/%dB", size), func(b *testing.B) {
			run(b, mount(b, tmpfstest.Mount(b, 64<<20), nil).Dir, size)
		})
	}
}
