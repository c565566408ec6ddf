package controller

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every row of the API table serves a request, and a forwarded one's
// failed answer is of the request's response type, carries the error and,
// for NOT_CONTROLLER, is recognised as a refusal: what a broker answers
// when no controller decided is consistent with what the channel retries.
func TestAPITable(t *testing.T) {
	one := func(req kmsg.Request) kmsg.Request {
		switch r := req.(type) {
		case *kmsg.CreateTopicsRequest:
			r.Topics = append(r.Topics, kmsg.NewCreateTopicsRequestTopic())
		case *kmsg.DeleteTopicsRequest:
			r.TopicNames = []string{"t"}
		case *kmsg.CreatePartitionsRequest:
			r.Topics = append(r.Topics, kmsg.NewCreatePartitionsRequestTopic())
		case *kmsg.AlterConfigsRequest:
			r.Resources = append(r.Resources, kmsg.NewAlterConfigsRequestResource())
		case *kmsg.IncrementalAlterConfigsRequest:
			r.Resources = append(r.Resources, kmsg.NewIncrementalAlterConfigsRequestResource())
		case *kmsg.AlterUserSCRAMCredentialsRequest:
			r.Upsertions = append(r.Upsertions, kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion())
		case *kmsg.AlterClientQuotasRequest:
			r.Entries = append(r.Entries, kmsg.NewAlterClientQuotasRequestEntry())
		case *kmsg.CreateACLsRequest:
			r.Creations = append(r.Creations, kmsg.NewCreateACLsRequestCreation())
		case *kmsg.DeleteACLsRequest:
			r.Filters = append(r.Filters, kmsg.NewDeleteACLsRequestFilter())
		}
		return req
	}
	seen := map[kmsg.Key]bool{}
	for _, a := range APIs() {
		name := kmsg.NameForKey(int16(a.Key))
		if seen[a.Key] || a.Min > a.Max {
			t.Errorf("%s: duplicate row or versions %d-%d", name, a.Min, a.Max)
		}
		seen[a.Key] = true
		if !a.Forwarded() {
			continue
		}
		for v := a.Min; v <= a.Max; v++ {
			req := one(kmsg.RequestForKey(int16(a.Key)))
			req.SetVersion(v)
			resp := a.Failed(req, fmt.Errorf("%w: no controller", kerr.NotController))
			if reflect.TypeOf(resp) != reflect.TypeOf(req.ResponseKind()) {
				t.Fatalf("%s v%d: failed answer is %T", name, v, resp)
			}
			if !a.Refused(resp) {
				t.Errorf("%s v%d: a NOT_CONTROLLER failed answer is not a refusal", name, v)
			}
			if a.Refused(a.Failed(req, kerr.RequestTimedOut)) {
				t.Errorf("%s v%d: a REQUEST_TIMED_OUT answer is a refusal", name, v)
			}
		}
	}
	if _, ok := LookupAPI(kmsg.Produce); ok {
		t.Error("the controller serves Produce")
	}
}
