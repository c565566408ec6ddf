package broker

// InitProducerId, versions 0-5.
//
// Behavior:
//   - Without a transactional id, hands out a fresh producer id with epoch
//     0 from a block the controller allocated to this broker, so ids never
//     repeat across restarts or brokers.
//   - With a transactional id it answers COORDINATOR_NOT_AVAILABLE: there
//     is no transaction coordinator yet (FindCoordinator is not served, so
//     clients do not get this far).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleInitProducerID(ctx context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Version = req.Version
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	id, err := b.producerIDs.nextID(ctx, b)
	if err != nil {
		resp.ErrorCode = b.errCode(err, "allocate producer id")
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// producerIDBlock hands out the ids of the block the controller last gave
// this broker, asking for a new block when it runs out.
type producerIDBlock struct {
	mu        sync.Mutex
	next, end int64 // next id to hand out; end is exclusive
}

func (p *producerIDBlock) nextID(ctx context.Context, b *Broker) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		first, count, err := b.cfg.Controller.AllocateProducerIDs(ctx, b.cfg.NodeID, b.epoch.Load())
		if err != nil {
			return -1, err
		}
		p.next, p.end = first, first+int64(count)
	}
	id := p.next
	p.next++
	return id, nil
}
