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
		MaxWaitMs:         cfg.ReplicaFetchWaitMaxMs,
		MinBytes:          cfg.ReplicaFetchMinBytes,
		MaxBytes:          cfg.ReplicaFetchResponseMaxBytes,
		PartitionMaxBytes: cfg.ReplicaFetchMaxBytes,
		Backoff:           time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		Logger:            logger,
	}
}
