package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorCodeAndMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int16
		msg  string // "" for a nil message
	}{
		{nil, 0, ""},
		{kerr.NotController, kerr.NotController.Code, ""},
		{fmt.Errorf("raft: %w", kerr.RequestTimedOut), kerr.RequestTimedOut.Code, ""},
		{Errorf(kerr.InvalidRequest, "Duplicate topic name."), kerr.InvalidRequest.Code, "Duplicate topic name."},
		{fmt.Errorf("deciding: %w", Errorf(kerr.PolicyViolation, "too large")), kerr.PolicyViolation.Code, "too large"},
		{&Error{Code: kerr.UnknownTopicID}, kerr.UnknownTopicID.Code, ""},
		{errors.New("disk on fire"), kerr.UnknownServerError.Code, "disk on fire"},
	} {
		code, msg := ErrorCodeAndMessage(tc.err)
		got := ""
		if msg != nil {
			got = *msg
		}
		if code != tc.code || got != tc.msg || (tc.msg == "") != (msg == nil) {
			t.Errorf("%v: code %d message %v, want %d %q", tc.err, code, msg, tc.code, tc.msg)
		}
		if ErrorCode(tc.err) != tc.code {
			t.Errorf("ErrorCode(%v) = %d, want %d", tc.err, ErrorCode(tc.err), tc.code)
		}
	}
	if !errors.Is(Errorf(kerr.InvalidConfig, "x"), kerr.InvalidConfig) {
		t.Error("an Error does not unwrap to its code")
	}
}
