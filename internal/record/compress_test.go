package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func TestCompressRoundTrip(t *testing.T) {
	text := bytes.Repeat([]byte("samsa record batch "), 10_000) // 190 KB: several lz4 and xerial blocks
	inputs := map[string][]byte{"empty": {}, "one": {1}, "text": text, "random": randomRecords(1, 100_000, 2)[0].Value}
	for _, c := range allCodecs {
		for name, in := range inputs {
			z, err := Compress(c, in)
			if err != nil {
				t.Fatalf("%v/%s: Compress: %v", c, name, err)
			}
			out, err := Decompress(c, z)
			if err != nil {
				t.Fatalf("%v/%s: Decompress: %v", c, name, err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%v/%s: round trip changed %d bytes into %d", c, name, len(in), len(out))
			}
			if c != CodecNone && name == "text" && len(z) > len(in)/10 {
				t.Errorf("%v: repetitive text compressed only to %d of %d bytes", c, len(z), len(in))
			}
		}
	}
}

func TestSnappyFormats(t *testing.T) {
	in := bytes.Repeat([]byte("0123456789"), 10_000)
	z, _ := Compress(CodecSnappy, in)
	if !bytes.Equal(z[:8], xerialMagic[:]) || binary.BigEndian.Uint32(z[8:]) != 1 || binary.BigEndian.Uint32(z[12:]) != 1 {
		t.Fatalf("xerial header % x", z[:16])
	}
	// 100 KB in 32 KiB blocks: four length-prefixed blocks.
	blocks := 0
	for p := z[16:]; len(p) > 0; blocks++ {
		n := binary.BigEndian.Uint32(p)
		p = p[4+n:]
	}
	if blocks != 4 {
		t.Fatalf("xerial blocks = %d, want 4", blocks)
	}
	raw := snappy.Encode(nil, in) // what librdkafka writes
	out, err := Decompress(CodecSnappy, raw)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("raw snappy: %v", err)
	}
	// A batch compressed with raw snappy validates too.
	recs := sampleRecords()
	section := Build(BuildOptions{}, recs)[HeaderSize:]
	b := rawBatch(Header{NumRecords: 4, LastOffsetDelta: 3, BaseTimestamp: recs[0].Timestamp, Attributes: int16(CodecSnappy),
		ProducerID: -1, BaseSequence: -1}, snappy.Encode(nil, section))
	if _, err := Validate(b); err != nil {
		t.Fatalf("raw-snappy batch: %v", err)
	}
}

func TestDecompressLimit(t *testing.T) {
	in := make([]byte, 1<<20) // zeros: tiny when compressed
	for _, c := range allCodecs {
		z, _ := Compress(c, in)
		if _, err := decompress(nil, c, z, 1<<20); err != nil {
			t.Fatalf("%v at limit: %v", c, err)
		}
		_, err := decompress(nil, c, z, 1<<20-1)
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, errTooLarge) {
			t.Fatalf("%v over limit: err = %v", c, err)
		}
	}
}

func TestDecompressGarbage(t *testing.T) {
	junk := []byte("definitely not compressed data, any codec")
	for _, c := range allCodecs[1:] {
		if _, err := Decompress(c, junk); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: err = %v, want ErrCorrupt", c, err)
		}
	}
	bad := append(append([]byte(nil), xerialMagic[:]...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 99, 1)
	if _, err := Decompress(CodecSnappy, bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("xerial block past end: %v", err)
	}
	if _, err := Decompress(Codec(6), junk); !errors.Is(err, ErrInvalid) {
		t.Errorf("codec 6: %v", err)
	}
}

// TestConcurrentCodecs runs the pooled and shared codec state from several
// goroutines; run with -race to check the sharing.
func TestConcurrentCodecs(t *testing.T) {
	recs := randomRecords(20, 500, 5)
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				c := allCodecs[(g+i)%len(allCodecs)]
				b := Build(BuildOptions{Codec: c}, recs)
				if _, err := Validate(b); err != nil {
					done <- err
					return
				}
				if got, err := Records(b); err != nil || !bytes.Equal(got[19].Value, recs[19].Value) {
					done <- errors.New("records differ")
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
