package share

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Persister is how the rest of a node reads and writes share-partition
// state: the broker's share partitions read it when they load and write it
// as records are acknowledged or released; the group coordinator
// initializes it when a share group is first assigned a partition, and
// deletes it with the group or its offsets.
//
// Each method takes the request of the RPC of the same name (any number of
// topics and partitions of one group) and answers as that RPC does, with
// Kafka's error codes per partition; the implementation finds each
// partition's share coordinator and retries NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS itself. The error return is for the call as
// a whole (the context ended, or the node is shutting down).
type Persister interface {
	InitializeState(context.Context, *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error)
	ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error)
	WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error)
	DeleteState(context.Context, *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error)
	ReadStateSummary(context.Context, *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error)
}
