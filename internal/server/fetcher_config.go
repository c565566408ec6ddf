package server

import (
	"log/slog"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/replica"
)

// fetcherConfig maps the replica.fetch.* settings to the replica
// fetchers; the caller sets what comes from other components (the broker
// epoch, the metadata image, the replicas).
func fetcherConfig(cfg *config.Config, logger *slog.Logger) replica.FetcherConfig {
	return replica.FetcherConfig{
		NodeID:            cfg.NodeID,
		Listener:          cfg.InterBrokerListenerName,
		MaxWaitMs:         cfg.MustInt32("replica.fetch.wait.max.ms"),
		MinBytes:          cfg.MustInt32("replica.fetch.min.bytes"),
		MaxBytes:          cfg.MustInt32("replica.fetch.response.max.bytes"),
		PartitionMaxBytes: cfg.MustInt32("replica.fetch.max.bytes"),
		Backoff:           time.Duration(cfg.MustInt32("replica.fetch.backoff.ms")) * time.Millisecond,
		Logger:            logger,
	}
}
