package wire

import (
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestErrorResponseMirrorsEntities(t *testing.T) {
	const msg = "not served"
	code := kerr.UnsupportedVersion

	sgd := kmsg.NewPtrShareGroupDescribeRequest()
	sgd.Version = 1
	sgd.GroupIDs = []string{"a", "b"}
	g := ErrorResponse(sgd, code, msg).(*kmsg.ShareGroupDescribeResponse)
	if g.Version != 1 || len(g.Groups) != 2 || g.Groups[1].GroupID != "b" || g.Groups[1].ErrorCode != code.Code ||
		g.Groups[1].ErrorMessage == nil || *g.Groups[1].ErrorMessage != msg || g.Groups[1].AuthorizedOperations != -2147483648 {
		t.Fatalf("ShareGroupDescribe: %+v", g)
	}

	sf := kmsg.NewPtrShareFetchRequest()
	sf.Version = 1
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID = [16]byte{7}
	fp := kmsg.NewShareFetchRequestTopicPartition()
	fp.Partition = 3
	ft.Partitions = append(ft.Partitions, fp)
	sf.Topics = append(sf.Topics, ft)
	f := ErrorResponse(sf, code, msg).(*kmsg.ShareFetchResponse)
	if f.ErrorCode != code.Code || len(f.Topics) != 1 || f.Topics[0].TopicID != ft.TopicID || len(f.Topics[0].Partitions) != 1 {
		t.Fatalf("ShareFetch: %+v", f)
	}
	if p := f.Topics[0].Partitions[0]; p.Partition != 3 || p.ErrorCode != code.Code || p.AcknowledgeErrorCode != code.Code {
		t.Fatalf("ShareFetch partition: %+v", p)
	}

	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "orders"
	dtp.Topics = append(dtp.Topics, rt)
	d := ErrorResponse(dtp, code, "").(*kmsg.DescribeTopicPartitionsResponse)
	if len(d.Topics) != 1 || d.Topics[0].Topic == nil || *d.Topics[0].Topic != "orders" || d.Topics[0].ErrorCode != code.Code || d.Topics[0].Partitions != nil {
		t.Fatalf("DescribeTopicPartitions: %+v", d)
	}

	ddt := kmsg.NewPtrDescribeDelegationTokenRequest()
	ddt.Version = 3
	tok := ErrorResponse(ddt, code, "").(*kmsg.DescribeDelegationTokenResponse)
	if tok.Version != 3 || tok.ErrorCode != code.Code || tok.TokenDetails != nil {
		t.Fatalf("DescribeDelegationToken: %+v", tok)
	}

	// Top-level fields that are not errors are not echoed.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.MemberID, hb.MemberEpoch = 1, "m", 5
	h := ErrorResponse(hb, code, "").(*kmsg.ShareGroupHeartbeatResponse)
	if h.ErrorCode != code.Code || h.MemberID != nil || h.MemberEpoch != 0 {
		t.Fatalf("ShareGroupHeartbeat: %+v", h)
	}
}

// Every API at every version kmsg knows: the error response of a request
// whose lists each hold one default element encodes, decodes, and carries
// the error in every error code it has.
func TestErrorResponseEveryAPI(t *testing.T) {
	code := kerr.UnsupportedVersion
	for key := int16(0); key < 200; key++ {
		probe := kmsg.RequestForKey(key)
		if probe == nil {
			continue
		}
		for v := int16(0); v <= probe.MaxVersion(); v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			growLists(reflect.ValueOf(req).Elem())
			resp := ErrorResponse(req, code, "x")
			name := kmsg.NameForKey(key)
			if resp.GetVersion() != v {
				t.Fatalf("%s v%d: response version %d", name, v, resp.GetVersion())
			}
			back := kmsg.ResponseForKey(key)
			back.SetVersion(v)
			if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
				t.Fatalf("%s v%d: round trip: %v", name, v, err)
			}
			if n := countCodes(reflect.ValueOf(back).Elem(), code.Code); n < 0 {
				t.Errorf("%s v%d: an error code is not UNSUPPORTED_VERSION: %+v", name, v, back)
			}
		}
	}
}

// growLists gives every list of a request one default element.
func growLists(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() || f.Kind() != reflect.Slice {
			continue
		}
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		if e := f.Index(0); e.Kind() == reflect.Struct {
			if d, ok := e.Addr().Interface().(interface{ Default() }); ok {
				d.Default()
			}
			growLists(e)
		}
	}
}

// countCodes counts the error codes in v, or returns -1 if one is not
// code. Error codes a version does not encode read back as 0.
func countCodes(v reflect.Value, code int16) int {
	n := 0
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		switch {
		case !sf.IsExported():
		case strings.HasSuffix(sf.Name, "ErrorCode") && f.Kind() == reflect.Int16:
			if c := int16(f.Int()); c != code && c != 0 {
				return -1
			}
			n++
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			for j := range f.Len() {
				m := countCodes(f.Index(j), code)
				if m < 0 {
					return -1
				}
				n += m
			}
		}
	}
	return n
}
