package broker

// InitProducerId, versions 0-5.
//
// Behavior:
//   - Without a transactional id, hands out a fresh producer id with epoch
//     0 from a block the controller allocated to this broker, so ids never
//     repeat across restarts or brokers.
//   - With a transactional id the transaction coordinator answers: the
//     id's producer id at a bumped epoch, which fences older producers and
//     aborts their open transaction (see coordinator/txn). Without a
//     coordinator, COORDINATOR_NOT_AVAILABLE.
//   - Authorization (KafkaApis): a transactional id needs WRITE on it
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer
//     needs IDEMPOTENT_WRITE on the cluster or WRITE on at least one
//     topic (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleInitProducerID(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Version = req.Version
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	z := b.authz(c)
	switch {
	case req.TransactionalID != nil && !z.txnID(kmsg.ACLOperationWrite, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case req.TransactionalID == nil && !z.cluster(kmsg.ACLOperationIdempotentWrite) &&
		!z.anyOfType(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if b.cfg.Txns == nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		resp = b.cfg.Txns.InitProducerID(ctx, req)
		resp.Version = req.Version
		return resp, nil
	}
	id, err := b.NextProducerID(ctx)
	if err != nil {
		resp.ErrorCode = b.errCode(err, "allocate producer id")
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// NextProducerID allocates one producer id from this broker's block; the
// transaction coordinator gets its new ids here too.
func (b *Broker) NextProducerID(ctx context.Context) (int64, error) {
	return b.producerIDs.nextID(ctx, b)
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
