package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Config configures a Coordinator. Zero durations and counts take Kafka's
// defaults (see withDefaults); the Kafka property each mirrors is named
// beside it. ProducerIDs and Markers are required.
type Config struct {
	// NumPartitions is transaction.state.log.num.partitions (50). It must
	// match the partition count of __transaction_state.
	NumPartitions int32
	// MaxTimeout is transaction.max.timeout.ms (15 min): InitProducerId with
	// a larger transaction.timeout.ms gets INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s): how
	// often ongoing transactions past their timeout are fenced and aborted.
	AbortTimedOutInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms (7 days): a
	// transactional id with no transaction for this long is removed.
	IDExpiration time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1 h).
	RemoveExpiredInterval time.Duration
	// MarkerRetryBackoff is the pause between failed WriteMarkers calls
	// (100 ms); markers are retried until they succeed or the partition is
	// unloaded.
	MarkerRetryBackoff time.Duration

	// ProducerIDs allocates one new producer id (the broker hands out ids
	// from blocks the controller grants). An error that is a kerr.Error is
	// returned to the client as is; others become COORDINATOR_NOT_AVAILABLE.
	ProducerIDs func(ctx context.Context) (int64, error)
	// GroupPartition names the __consumer_offsets partition of a group, for
	// AddOffsetsToTxn.
	GroupPartition func(groupID string) (topic string, partition int32)
	// Markers writes transaction markers to the data partitions.
	Markers MarkerWriter
	// TransactionVersion is the cluster's finalized transaction.version
	// (nil: 0). It picks the TxnMetadataValue version written (v1 from
	// level 1, so Kafka reads the topic as it would its own).
	TransactionVersion func() int16

	// Now is the clock for record timestamps, timeouts and expiry
	// (time.Now). Loops use the runtime clock, so tests use testing/synctest.
	Now func() time.Time
	// Logger receives state changes worth an operator's attention.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.NumPartitions == 0 {
		c.NumPartitions = 50
	}
	def(&c.MaxTimeout, 15*time.Minute)
	def(&c.AbortTimedOutInterval, 10*time.Second)
	def(&c.IDExpiration, 7*24*time.Hour)
	def(&c.RemoveExpiredInterval, time.Hour)
	def(&c.MarkerRetryBackoff, 100*time.Millisecond)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.TransactionVersion == nil {
		c.TransactionVersion = func() int16 { return 0 }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first invalid field, naming Kafka's property.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.NumPartitions < 1:
		return fmt.Errorf("invalid value %d for transaction.state.log.num.partitions: want at least 1", c.NumPartitions)
	case c.MaxTimeout < time.Millisecond || c.MaxTimeout > math.MaxInt32*time.Millisecond:
		return fmt.Errorf("invalid value %v for transaction.max.timeout.ms: want 1 ms to %d ms", c.MaxTimeout, math.MaxInt32)
	case c.AbortTimedOutInterval < 0:
		return fmt.Errorf("invalid value %v for transaction.abort.timed.out.transaction.cleanup.interval.ms: want a positive duration", c.AbortTimedOutInterval)
	case c.IDExpiration < 0:
		return fmt.Errorf("invalid value %v for transactional.id.expiration.ms: want a positive duration", c.IDExpiration)
	case c.RemoveExpiredInterval < 0:
		return fmt.Errorf("invalid value %v for transaction.remove.expired.transaction.cleanup.interval.ms: want a positive duration", c.RemoveExpiredInterval)
	case c.ProducerIDs == nil:
		return errors.New("txn.Config.ProducerIDs is required")
	case c.Markers == nil:
		return errors.New("txn.Config.Markers is required")
	case c.GroupPartition == nil:
		return errors.New("txn.Config.GroupPartition is required")
	}
	return nil
}
