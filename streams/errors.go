package streams

// DeserializationContext is a record whose key or value failed to
// deserialize, as it came from the topic.
type DeserializationContext struct {
	Topic      string
	Partition  int32
	Offset     int64
	Key, Value []byte
}

// DeserializationResponse is what a deserialization handler decides.
type DeserializationResponse int

const (
	// DeserializationFail stops the app with the error.
	DeserializationFail DeserializationResponse = iota
	// DeserializationContinue skips the record and goes on.
	DeserializationContinue
)

// DeserializationHandler is Kafka's DeserializationExceptionHandler: it
// sees each record that fails to deserialize and the error, and decides.
// It runs on the app's processing goroutine.
type DeserializationHandler func(DeserializationContext, error) DeserializationResponse

// LogAndFail is Kafka's LogAndFailExceptionHandler, the default: the app
// logs the error and stops.
func LogAndFail(DeserializationContext, error) DeserializationResponse { return DeserializationFail }

// LogAndContinue is Kafka's LogAndContinueExceptionHandler: the app logs
// the record and skips it.
func LogAndContinue(DeserializationContext, error) DeserializationResponse {
	return DeserializationContinue
}
