package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testTable() *VersionTable {
	return NewVersionTable(
		VersionRange{Key: kmsg.ApiVersions, Min: 0, Max: 4},
		VersionRange{Key: kmsg.Metadata, Min: 0, Max: 13},
		VersionRange{Key: kmsg.Produce, Min: 0, Max: 12},
		VersionRange{Key: kmsg.Fetch, Min: 4, Max: 17},
	)
}

// encodeRequest builds a request frame body as a client would.
func encodeRequest(req kmsg.Request, correlationID int32, clientID string) []byte {
	var b []byte
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, correlationID)
	b = kbin.AppendNullableString(b, &clientID)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func TestParseRequestRoundTrip(t *testing.T) {
	topic := "orders"
	for _, v := range []int16{0, 1, 4, 9, 12, 13} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		req.Topics = append(req.Topics, rt)
		frame := encodeRequest(req, 42, "client-1")
		got, err := ParseRequest(frame, testTable())
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if got.Header.APIKey != 3 || got.Header.APIVersion != v || got.Header.CorrelationID != 42 || *got.Header.ClientID != "client-1" {
			t.Fatalf("v%d: header %+v", v, got.Header)
		}
		body := got.Body.(*kmsg.MetadataRequest)
		if len(body.Topics) != 1 || *body.Topics[0].Topic != "orders" {
			t.Fatalf("v%d: topics %+v", v, body.Topics)
		}
	}
}

func TestParseRequestUnservedVersionHasNoBody(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 3 // below the served minimum of 4
	got, err := ParseRequest(encodeRequest(req, 7, "c"), testTable())
	if err != nil {
		t.Fatal(err)
	}
	if got.Body != nil || got.Header.CorrelationID != 7 {
		t.Fatalf("got %+v", got)
	}
}

// A refused request is decoded, to be answered with an error; it stays
// unserved and unadvertised.
func TestParseRequestRefusedHasBody(t *testing.T) {
	table := testTable().Refuse(
		VersionRange{Key: kmsg.DescribeDelegationToken, Min: 1, Max: 3},
		VersionRange{Key: kmsg.Fetch, Min: 18, Max: 18},
	)
	req := kmsg.NewPtrDescribeDelegationTokenRequest()
	req.Version = 3
	got, err := ParseRequest(encodeRequest(req, 8, "c"), table)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Body.(*kmsg.DescribeDelegationTokenRequest); !ok || table.Serves(41, 3) || !table.Refuses(41, 3) {
		t.Fatalf("got %+v", got)
	}
	req.Version = 0 // below the refused range: neither
	if got, _ := ParseRequest(encodeRequest(req, 9, "c"), table); got.Body != nil {
		t.Fatalf("v0: got %+v", got)
	}
	for _, r := range table.All() {
		if r.Key == kmsg.DescribeDelegationToken || (r.Key == kmsg.Fetch && r.Max != 17) {
			t.Fatalf("refused range advertised: %+v", r)
		}
	}
}

func TestParseRequestTruncated(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	frame := encodeRequest(req, 1, "c")
	for n := 0; n < len(frame); n++ {
		if _, err := ParseRequest(frame[:n], testTable()); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err %v, want ErrMalformed", n, err)
		}
	}
}

func TestReadFrameLimits(t *testing.T) {
	var huge [4]byte
	binary.BigEndian.PutUint32(huge[:], 2<<30-1) // a 2 GiB length prefix
	if _, err := ReadFrame(bytes.NewReader(huge[:]), 100<<20, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("2 GiB prefix: %v", err)
	}
	binary.BigEndian.PutUint32(huge[:], 0xffffffff) // negative
	if _, err := ReadFrame(bytes.NewReader(huge[:]), 100<<20, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("negative prefix: %v", err)
	}
	short := []byte{0, 0, 0, 10, 1, 2, 3}
	if _, err := ReadFrame(bytes.NewReader(short), 100, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v", err)
	}
	ok := []byte{0, 0, 0, 3, 7, 8, 9}
	got, err := ReadFrame(bytes.NewReader(ok), 3, nil)
	if err != nil || !bytes.Equal(got, []byte{7, 8, 9}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	// ApiVersions never has header tags, even when flexible.
	av := kmsg.NewPtrApiVersionsResponse()
	av.Version = 3
	frame := AppendResponse(nil, 9, av)
	body := av.AppendTo(nil)
	if len(frame) != 4+4+len(body) {
		t.Fatalf("ApiVersions v3 frame %d bytes, want %d", len(frame), 8+len(body))
	}
	// A flexible Metadata response has one empty tag section after the id.
	md := kmsg.NewPtrMetadataResponse()
	md.Version = 12
	frame = AppendResponse(nil, 9, md)
	body = md.AppendTo(nil)
	if len(frame) != 4+4+1+len(body) || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		t.Fatalf("Metadata v12 frame %d bytes", len(frame))
	}
	if binary.BigEndian.Uint32(frame[4:]) != 9 {
		t.Fatal("correlation id")
	}
}

// FuzzParseRequest feeds arbitrary frames to the request parser: it must
// never panic, whatever the bytes.
func FuzzParseRequest(f *testing.F) {
	topic := "t"
	for _, v := range []int16{0, 4, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		req.Topics = append(req.Topics, rt)
		f.Add(encodeRequest(req, 1, "c"))
	}
	for _, v := range []int16{3, 9, 12} {
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		req.Acks = -1
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = topic
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 0, 0, 0, 0, 2}
		pt.Partitions = append(pt.Partitions, pp)
		req.Topics = append(req.Topics, pt)
		f.Add(encodeRequest(req, 2, "c"))
	}
	for _, v := range []int16{4, 12, 17} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		f.Add(encodeRequest(req, 3, "c"))
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	f.Add(encodeRequest(av, 4, "c"))
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0x80})
	table := testTable()
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame, table)
		if err == nil && req.Body != nil {
			// Whatever parsed must encode again.
			req.Body.AppendTo(nil)
		}
	})
}

// FuzzReadFrame: any byte stream yields frames within the limit or an error.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		for {
			frame, err := ReadFrame(r, 1024, nil)
			if err != nil {
				return
			}
			if len(frame) > 1024 {
				t.Fatalf("frame of %d bytes passed a 1024 limit", len(frame))
			}
		}
	})
}

// TestSizeHintCoversFetch: a fetch response's frame fits in the hinted
// buffer, so encoding it never reallocates.
func TestSizeHintCoversFetch(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 16
	for i := 0; i < 6; i++ {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "bench"
		for p := int32(0); p < 3; p++ {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p
			rp.RecordBatches = make([]byte, 100_000)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	buf := make([]byte, 0, SizeHint(resp))
	frame := AppendResponse(buf, 1, resp)
	if &frame[0] != &buf[:1][0] {
		t.Fatalf("frame of %d bytes outgrew the hint of %d", len(frame), cap(buf))
	}
}
