package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrMalformed is returned for a request that cannot be parsed. Kafka closes
// the connection on such a request; so do we.
var ErrMalformed = errors.New("malformed request")

// RequestHeader is the decoded header of a request.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
}

// Request is a decoded request frame.
type Request struct {
	Header RequestHeader
	// Body is the decoded request when the table serves or refuses its
	// key and version (VersionTable.Serves tells which); nil otherwise.
	Body kmsg.Request
	// Size is the frame's length in bytes (what a produce quota counts).
	Size int
}

// ParseRequest decodes the header of frame and, when the API key and version
// are served or refused by table, the body. Any other key or version
// yields a Request with a nil Body and no error, so the caller can answer
// (ApiVersions) or close as Kafka does. The body may alias frame.
func ParseRequest(frame []byte, table *VersionTable) (Request, error) {
	r := kbin.Reader{Src: frame}
	h := RequestHeader{
		APIKey:        r.Int16(),
		APIVersion:    r.Int16(),
		CorrelationID: r.Int32(),
	}
	h.ClientID = r.NullableString()
	if !r.Ok() {
		return Request{Header: h}, fmt.Errorf("%w: truncated header", ErrMalformed)
	}
	if !table.Serves(h.APIKey, h.APIVersion) && !table.Refuses(h.APIKey, h.APIVersion) {
		return Request{Header: h}, nil
	}
	body := kmsg.RequestForKey(h.APIKey)
	body.SetVersion(h.APIVersion)
	if body.IsFlexible() {
		skipTags(&r)
		if !r.Ok() {
			return Request{Header: h}, fmt.Errorf("%w: truncated header tags", ErrMalformed)
		}
	}
	if err := body.ReadFrom(r.Src); err != nil {
		return Request{Header: h}, fmt.Errorf("%w: %s v%d: %v", ErrMalformed, kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	return Request{Header: h, Body: body, Size: len(frame)}, nil
}

// skipTags skips a tagged-field section; request headers define no tags we
// use.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// SizeHint estimates the encoded size of resp, so the frame buffer can be
// allocated once: a fetch response of several MiB would otherwise be copied
// again at every doubling of the buffer.
func SizeHint(resp kmsg.Response) int {
	n := 256
	if f, ok := resp.(*FetchWithFiles); ok {
		for _, r := range f.Files {
			if r != nil {
				n += r.Len()
			}
		}
		resp = f.FetchResponse
	}
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		n += FetchHeadSizeHint(f) - 256
		for _, t := range f.Topics {
			for _, p := range t.Partitions {
				n += len(p.RecordBatches)
			}
		}
	}
	return n
}

// FetchHeadSizeHint estimates the bytes AppendFetchFrame appends: the
// frame without its record batches.
func FetchHeadSizeHint(f *kmsg.FetchResponse) int {
	n := 256
	for _, t := range f.Topics {
		n += len(t.Topic) + 32
		for _, p := range t.Partitions {
			n += 64 + 16*len(p.AbortedTransactions)
		}
	}
	for _, b := range f.Brokers {
		n += len(b.Host) + 32
	}
	return n
}

// AppendResponse appends a whole response frame (size, header, body) for
// the request with the given key and correlation id to dst.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	size := uint32(len(dst) - start - 4)
	dst[start], dst[start+1], dst[start+2], dst[start+3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
	return dst
}

// ReadResponse decodes a response without its size prefix — correlation
// id, the header's tag buffer (flexible versions other than ApiVersions,
// whose header stays v0), body — into resp, whose version must be set,
// and returns the correlation id. resp may alias data.
func ReadResponse(data []byte, resp kmsg.Response) (int32, error) {
	r := kbin.Reader{Src: data}
	id := r.Int32()
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		skipTags(&r)
	}
	if !r.Ok() {
		return id, fmt.Errorf("%w: truncated %s response header", ErrMalformed, kmsg.NameForKey(resp.Key()))
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return id, fmt.Errorf("%w: %s v%d response: %v", ErrMalformed, kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return id, nil
}
