package network

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/samsa-io/samsa/internal/wire"
)

// Fetch answers whose record batches are in segment files
// (wire.FetchWithFiles) leave them there until they are written. On a
// plain TCP socket the writer sends the bytes around the batches with
// write or writev and each file region with sendfile(2), so the batches
// go from the page cache to the socket without passing through this
// process (Kafka's FileRecords.writeTo). On any other connection (TLS,
// which must encrypt them) the frame is built in one pooled buffer with
// the batches pread into it: one copy, no allocation per fetch.
//
// The files' references pass with the frame from the handler to the
// writer, which releases them once the frame is written or dropped, so a
// segment deleted meanwhile stays readable until then. A file shortened
// under a frame (a truncation) cannot fill the size the frame announced:
// the connection is closed rather than the frame completed with other
// bytes, and the client fetches again (Kafka's FileRecords.writeTo fails
// the same way). Only bytes above the high watermark are ever truncated
// (a leader becoming a follower), and consumers read below it; a
// follower's answer can meet one, and one truncated and then appended
// again in the milliseconds before it is sent carries the new bytes,
// whose batches the follower checks (CRC, offsets) before appending,
// as with Kafka.

// sendfileWrites lets fetch answers on plain TCP sockets send their
// batches with sendfile; benchmarks turn it off to compare.
var sendfileWrites = true

// errFileShortened is a file region that ended before its length.
var errFileShortened = errors.New("segment file shortened while its bytes were being sent")

// encodeWithFiles makes the frame of a fetch answer whose batches are
// (partly) in files. It takes over the answer's files.
func (c *Conn) encodeWithFiles(correlationID int32, f *wire.FetchWithFiles) (outFrame, error) {
	buf, cuts, ok := wire.AppendFetchHead(getBuf(wire.FetchHeadSizeHint(f.FetchResponse)), correlationID, f.FetchResponse, f.Files)
	if ok && c.sendfile {
		for _, r := range f.Files {
			if r != nil && r.Len() == 0 {
				r.Release() // no cut holds it
			}
		}
		return inlineSmallFiles(buf, cuts)
	}
	defer f.Release()
	if !ok {
		// Not an answer AppendFetchHead covers: kmsg encodes it, with
		// the batches read into memory.
		putBuf(buf)
		if err := readFilesIntoResponse(f); err != nil {
			return outFrame{}, err
		}
		return outFrame{buf: wire.AppendResponse(getBuf(wire.SizeHint(f.FetchResponse)), correlationID, f.FetchResponse)}, nil
	}
	defer putBuf(buf)
	n := len(buf)
	for _, c := range cuts {
		if c.File != nil {
			n += c.File.Len()
		} else {
			n += len(c.Records)
		}
	}
	out := getBuf(n)
	from := 0
	for _, c := range cuts {
		out = append(out, buf[from:c.At]...)
		from = c.At
		if c.File == nil {
			out = append(out, c.Records...)
			continue
		}
		at := len(out)
		out = out[:at+c.File.Len()]
		if err := c.File.ReadTo(out[at:]); err != nil {
			putBuf(out)
			return outFrame{}, err
		}
	}
	return outFrame{buf: append(out, buf[from:]...)}, nil
}

// inlineFileBytes is the largest file region a fetch answer on a TCP
// socket reads into its frame buffer (pread) instead of sending it with
// sendfile. A consumer near the log's end fetches a few small batches per
// partition; for them a sendfile call, and the write of the bytes before
// the next region that it splits off, cost more than copying the bytes:
// a frame whose regions are all small goes out with one write.
const inlineFileBytes = 16 << 10

// inlineSmallFiles makes the frame of a fetch answer built by
// AppendFetchHead (buf, cuts) with the file regions of at most
// inlineFileBytes read into the frame's buffer, and released at once; the
// cuts left are the larger regions and the batches in memory. An error
// (a file shortened) ends the connection, whose writer releases the
// files still held.
func inlineSmallFiles(buf []byte, cuts []wire.FrameCut) (outFrame, error) {
	n := len(buf)
	for _, c := range cuts {
		if c.File != nil && c.File.Len() <= inlineFileBytes {
			n += c.File.Len()
		}
	}
	if n == len(buf) {
		return outFrame{buf: buf, cuts: cuts}, nil
	}
	out := getBuf(n)
	kept := cuts[:0] // each kept cut is written at or before the one read
	from := 0
	for i, c := range cuts {
		out = append(out, buf[from:c.At]...)
		from = c.At
		if c.File == nil || c.File.Len() > inlineFileBytes {
			c.At = len(out)
			kept = append(kept, c)
			continue
		}
		at := len(out)
		out = out[:at+c.File.Len()]
		if err := c.File.ReadTo(out[at:]); err != nil {
			// Release what no one released yet: the cuts kept so
			// far and this one and those after it.
			outFrame{buf: out, cuts: kept}.discard()
			outFrame{buf: buf, cuts: cuts[i:]}.discard()
			return outFrame{}, err
		}
		c.File.Release()
	}
	out = append(out, buf[from:]...)
	putBuf(buf)
	if len(kept) == 0 {
		kept = nil
	}
	return outFrame{buf: out, cuts: kept}, nil
}

// readFilesIntoResponse reads each file of f into its partition's
// RecordBatches.
func readFilesIntoResponse(f *wire.FetchWithFiles) error {
	k := 0
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			if k < len(f.Files) && f.Files[k] != nil {
				b := make([]byte, f.Files[k].Len())
				if err := f.Files[k].ReadTo(b); err != nil {
					return err
				}
				f.Topics[i].Partitions[j].RecordBatches = b
			}
			k++
		}
	}
	return nil
}

// writeWithFiles writes a frame made by AppendFetchHead to a TCP socket:
// the bytes of buf and in-memory batches with writev, file regions with
// sendfile.
func writeWithFiles(tc *net.TCPConn, buf []byte, cuts []wire.FrameCut) error {
	var pending net.Buffers
	from := 0
	for _, c := range cuts {
		pending = append(pending, buf[from:c.At])
		from = c.At
		if c.File == nil {
			pending = append(pending, c.Records)
			continue
		}
		if _, err := pending.WriteTo(tc); err != nil {
			return err
		}
		pending = pending[:0]
		if err := sendFile(tc, c.File); err != nil {
			return err
		}
	}
	pending = append(pending, buf[from:])
	_, err := pending.WriteTo(tc)
	return err
}

// sendFile writes the region r to the socket with sendfile(2), from its
// own offset (the file's offset, shared with other readers, is not used).
func sendFile(tc *net.TCPConn, r wire.FileRecords) error {
	f, off := r.File()
	remain := r.Len()
	dst, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	src, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	err = src.Control(func(infd uintptr) {
		err := dst.Write(func(outfd uintptr) bool {
			for remain > 0 {
				n, err := syscall.Sendfile(int(outfd), int(infd), &off, min(remain, 1<<30))
				if n > 0 {
					remain -= n
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until the socket can take more
				case err == syscall.EINTR:
				case err != nil:
					sendErr = fmt.Errorf("sendfile %s: %w", f.Name(), err)
					return true
				case n == 0:
					sendErr = fmt.Errorf("%s: %w (%d bytes missing)", f.Name(), errFileShortened, remain)
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = err
		}
	})
	if sendErr != nil {
		return sendErr
	}
	return err
}
