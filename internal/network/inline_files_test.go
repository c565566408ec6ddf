package network

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/wire"
)

// mixedFetchResponse has partitions of small batches (read into the
// frame on plain TCP), large ones (sent with sendfile) and none, in an
// order that alternates them.
func mixedFetchResponse() *kmsg.FetchResponse {
	resp := fetchResponseWithRecords(6, 0)
	for i, size := range []int{100, 300_000, 0, inlineFileBytes, inlineFileBytes + 1, 1} {
		p := &resp.Topics[0].Partitions[i]
		p.RecordBatches = nil
		if size > 0 {
			p.RecordBatches = bytes.Repeat([]byte{byte('a' + i)}, size)
		}
	}
	return resp
}

// TestFetchAnswerFromSmallAndLargeFiles: an answer mixing file regions
// small enough to be read into the frame with larger ones sent with
// sendfile reads back as the handler's response, in every version,
// pipelined, and every region is released.
func TestFetchAnswerFromSmallAndLargeFiles(t *testing.T) {
	resp := mixedFetchResponse()
	h := newFileAnswer(t, resp)
	s := serveFileAnswer(t, h, nil)
	c := dialFileAnswer(t, s, nil)
	go func() {
		for v := int16(4); v <= 18; v++ {
			req := kmsg.NewPtrFetchRequest()
			req.Version = v
			if _, err := c.Write(frame(req, int32(v))); err != nil {
				return
			}
		}
	}()
	for v := int16(4); v <= 18; v++ {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := wire.ReadFrame(c, 1<<21, nil)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := kmsg.NewPtrFetchResponse()
		got.Version = v
		if id, err := wire.ReadResponse(b, got); err != nil || id != int32(v) {
			t.Fatalf("v%d: correlation id %d, %v", v, id, err)
		}
		want := *resp
		want.Version = v
		if !bytes.Equal(got.AppendTo(nil), want.AppendTo(nil)) {
			t.Fatalf("v%d: the answer read back differs from the handler's", v)
		}
	}
	h.waitReleased(t)
}

// TestFetchAnswerFromShortenedSmallFile: a small region that can no
// longer be read whole closes the connection rather than sending a frame
// with other bytes, and every region is released.
func TestFetchAnswerFromShortenedSmallFile(t *testing.T) {
	resp := fetchResponseWithRecords(3, 1000)
	h := newFileAnswer(t, resp)
	h.truncate = true // to 1500 bytes: the second region is cut, the third gone
	s := serveFileAnswer(t, h, nil)
	c := dialFileAnswer(t, s, nil)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 16
	if _, err := c.Write(frame(req, 1)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := wire.ReadFrame(c, 1<<21, nil); err == nil {
		t.Fatalf("read a whole frame of %d bytes from a shortened file", len(b))
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the connection stayed open")
	}
	h.waitReleased(t)
}
