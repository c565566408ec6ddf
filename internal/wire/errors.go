package wire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a Kafka error decided below a handler: the code Kafka answers
// with and, optionally, the text for the response's error message. It
// travels as a Go error from where it is decided to the handler, which
// turns any error into a code with ErrorCode or ErrorCodeAndMessage; no
// other mapping exists.
type Error struct {
	Code    *kerr.Error
	Message string
}

// Errorf returns an Error of code with a formatted message.
func Errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.Message
	}
	return e.Code.Message + ": " + e.Message
}

// Unwrap makes errors.Is(err, kerr.X) hold for an Error of code X.
func (e *Error) Unwrap() error { return e.Code }

// ErrorCode is err's Kafka code: 0 for nil, the code of the first Error or
// kerr.Error in its chain, UNKNOWN_SERVER_ERROR for anything else.
func ErrorCode(err error) int16 {
	code, _ := ErrorCodeAndMessage(err)
	return code
}

// ErrorCodeAndMessage is ErrorCode with the response's error message: an
// Error's own message, none for a bare Kafka error (its code says it
// all), and the text of an error Kafka has no code for, so the client
// sees what went wrong.
func ErrorCodeAndMessage(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var we *Error
	if errors.As(err, &we) {
		if we.Message == "" {
			return we.Code.Code, nil
		}
		return we.Code.Code, &we.Message
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code, nil
	}
	msg := err.Error()
	return kerr.UnknownServerError.Code, &msg
}
