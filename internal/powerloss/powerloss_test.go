package powerloss

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestImageKeepsWhatWasSynced: a file written, fsynced and written again
// comes back with its synced bytes only (or, tearing, those and part of
// the rest); untracked files are copied whole; after PowerOff every hooked
// operation fails.
func TestImageKeepsWhatWasSynced(t *testing.T) {
	for _, tear := range []bool{false, true} {
		src := t.TempDir()
		seg := filepath.Join(src, "p-0", "00000000000000000000.log")
		other := filepath.Join(src, "p-0", "leader-epoch-checkpoint")
		if err := os.MkdirAll(filepath.Dir(seg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(other, []byte("0\n0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		d := New(tear, 7)
		write := func(b string) {
			if err := d.Fault("write", seg); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(seg, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(b)
			f.Close()
		}
		write("synced.")
		if err := d.Fault("sync", seg); err != nil {
			t.Fatal(err)
		}
		if err := d.Fault("sync", filepath.Dir(seg)); err != nil {
			t.Fatal(err)
		}
		write("lost, or torn")
		d.PowerOff()
		if err := d.Fault("write", seg); !errors.Is(err, syscall.EIO) {
			t.Fatalf("write after PowerOff: %v, want EIO", err)
		}
		dst := filepath.Join(t.TempDir(), "image")
		losses, err := d.Image(src, dst)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dst, "p-0", "00000000000000000000.log"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, []byte("synced.")) || !tear && string(got) != "synced." || len(got) > len("synced.lost, or torn") {
			t.Fatalf("tear %v: segment after power loss %q", tear, got)
		}
		if len(losses) != 1 || losses[0].Durable != 7 || losses[0].Unsynced != 13 {
			t.Fatalf("losses %+v", losses)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "p-0", "leader-epoch-checkpoint")); err != nil || string(b) != "0\n0\n" {
			t.Fatalf("untracked file: %q, %v", b, err)
		}
	}
}
