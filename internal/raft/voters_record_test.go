package raft

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
)

// A VotersRecord reads back as written, and a reader skips the tagged
// fields a newer writer may add.
func TestVotersRecordRoundTrip(t *testing.T) {
	vs := []Voter{
		{ID: 1, DirectoryID: [16]byte{1, 2}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}},
		{ID: 7},
		{ID: 9, DirectoryID: [16]byte{15: 9}, Endpoints: []Endpoint{{Name: "A", Host: "::1", Port: 1}, {Name: "B", Host: "h", Port: 65535}}},
	}
	got, err := readVotersRecord(appendVotersRecord(nil, vs))
	if err != nil || !reflect.DeepEqual(got, vs) {
		t.Fatalf("read %+v, %v; want %+v", got, err, vs)
	}
	if !isVotersControlKey(votersControlKey()) || isVotersControlKey([]byte{0, 0, 0, 1}) {
		t.Fatal("KRaftVoters control key not recognized, or a commit marker taken for one")
	}

	// One voter whose record ends with a tagged field (tag 5, 2 bytes).
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactArrayLen(b, 1)
	b = kbin.AppendInt32(b, 3)
	b = kbin.AppendUuid(b, [16]byte{})
	b = kbin.AppendCompactArrayLen(b, 0)
	b = append(kbin.AppendInt16(kbin.AppendInt16(b, 0), 1), 0)
	b = append(b, 1, 5, 2, 0xab, 0xcd) // one tag: 5, length 2
	b = append(b, 0)
	got, err = readVotersRecord(b)
	if err != nil || len(got) != 1 || got[0].ID != 3 {
		t.Fatalf("read %+v, %v; want voter 3", got, err)
	}
	if _, err := readVotersRecord(b[:len(b)-3]); err == nil {
		t.Fatal("a truncated record read without error")
	}
}
