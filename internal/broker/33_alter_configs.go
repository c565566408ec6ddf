package broker

// AlterConfigs, versions 0-2 (the legacy API, superseded by
// IncrementalAlterConfigs).
//
// Behavior:
//   - Each TOPIC or BROKER resource's dynamic configs are replaced by the
//     request's: keys not named are deleted, as in Kafka. The controller
//     validates (unknown keys, bad values, read-only broker keys are
//     INVALID_CONFIG), commits and answers after the change is applied to
//     the image this broker serves from.
//   - BROKER_LOGGER is INVALID_REQUEST: Kafka serves log levels only
//     through IncrementalAlterConfigs.
//   - validate_only checks everything and changes nothing.
//   - Authorization (Kafka's ControllerApis, decided here before
//     forwarding): ALTER_CONFIGS on the cluster for a BROKER resource, on
//     the topic for a TOPIC one; a refused resource answers CLUSTER_ or
//     TOPIC_AUTHORIZATION_FAILED and is not sent to the controller.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleAlterConfigs(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	z := b.authz(c)
	denied := make([]*kerr.Error, len(req.Resources))
	forward := *req
	forward.Resources = nil
	for i, r := range req.Resources {
		var ok bool
		if ok, denied[i] = z.configResource(kmsg.ACLOperationAlterConfigs, r.ResourceType, r.ResourceName); !ok {
			continue
		}
		denied[i] = nil
		if r.ResourceType != kmsg.ConfigResourceTypeBrokerLogger {
			forward.Resources = append(forward.Resources, r)
		}
	}
	var decided []kmsg.AlterConfigsResponseResource
	if len(forward.Resources) > 0 {
		decided = b.cfg.Controller.Forward(ctx, &forward).(*kmsg.AlterConfigsResponse).Resources
	}
	for i, r := range req.Resources {
		if denied[i] != nil {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, denied[i].Code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		if r.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = strPtr("AlterConfigs does not support BROKER_LOGGER resources; use IncrementalAlterConfigs")
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		resp.Resources = append(resp.Resources, decided[0])
		decided = decided[1:]
	}
	return resp, nil
}
