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

// TestImageRevertsUnsyncedReplace: a file replaced without fsync comes
// back as its last durable version (or not at all if it had none) until
// it is synced.
func TestImageRevertsUnsyncedReplace(t *testing.T) {
	src := t.TempDir()
	old, fresh := filepath.Join(src, "old"), filepath.Join(src, "fresh")
	if err := os.WriteFile(old, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(false, 0)
	for _, p := range []string{old, fresh} {
		if err := d.Fault("replace", p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("v2"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "image")
	if _, err := d.Image(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "old")); err != nil || string(b) != "v1" {
		t.Fatalf("replaced file: %q, %v; want the durable v1", b, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "fresh")); !os.IsNotExist(err) {
		t.Fatalf("created by an unsynced replace: %v, want no file", err)
	}
	if err := d.Fault("sync", old); err != nil {
		t.Fatal(err)
	}
	dst = filepath.Join(t.TempDir(), "image")
	if _, err := d.Image(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "old")); err != nil || string(b) != "v2" {
		t.Fatalf("synced replaced file: %q, %v; want v2", b, err)
	}
}
