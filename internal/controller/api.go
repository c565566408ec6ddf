package controller

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller's API table (Kafka's ControllerApis): every Kafka request
// the controller answers on its controller listener, with the versions it
// serves. Each decision file lists its own rows beside its decisions
// (topicAPIs in topics.go, configAPIs in configs.go, ...), so adding a
// request the controller serves is one method and one row in one file.
//
// A row of an admin request that brokers forward for clients
// (CreateTopics, ElectLeaders, ...) also says what a broker answers when
// no controller decided it: failed fills every item of the request with
// the error (REQUEST_TIMED_OUT when the request's timeout passed, say),
// the way the broker's handler would. Every row says how to recognise
// the controller's NOT_CONTROLLER refusal of a whole request in its
// response (refused), so the sender tries the next leader. With both
// here, forwarding (internal/controllerchannel's Channel.Forward) needs no
// code per API: a new forwarded admin API touches its broker handler, its
// decision file here and its test.

// API is one request the controller serves.
type API struct {
	Key      kmsg.Key
	Min, Max int16

	serve   func(context.Context, *Controller, kmsg.Request) kmsg.Response
	failed  func(kmsg.Request, error) kmsg.Response // nil: not forwarded for clients
	refused func(kmsg.Response) bool
}

// api builds a row from its typed parts: decide is the controller's
// method (its request and response types are Key's), failed is nil for
// the broker-to-controller requests no client sends.
func api[Req kmsg.Request, Resp kmsg.Response](key kmsg.Key, min, max int16,
	decide func(*Controller, context.Context, Req) Resp, failed func(Req, error) Resp, refused func(Resp) bool) API {
	a := API{Key: key, Min: min, Max: max,
		serve:   func(ctx context.Context, c *Controller, r kmsg.Request) kmsg.Response { return decide(c, ctx, r.(Req)) },
		refused: func(r kmsg.Response) bool { return refused(r.(Resp)) },
	}
	if failed != nil {
		a.failed = func(r kmsg.Request, err error) kmsg.Response { return failed(r.(Req), err) }
	}
	return a
}

// apiTable is every row, by key. Built once from the decision files'
// lists and never changed.
var apiTable = func() map[kmsg.Key]API {
	m := map[kmsg.Key]API{}
	for _, rows := range [][]API{topicAPIs(), configAPIs(), quotaAPIs(), aclAPIs(), partitionAPIs(), reassignAPIs(), quorumAPIs(), quorumVoterAPIs(), describeClusterAPIs(), brokerAPIs(), producerIDAPIs(), scramAPIs(), featureAPIs(), tokenAPIs()} {
		for _, a := range rows {
			if _, dup := m[a.Key]; dup {
				panic("controller: two rows for " + kmsg.NameForKey(int16(a.Key)))
			}
			m[a.Key] = a
		}
	}
	return m
}()

// APIs lists the requests the controller serves, by key.
func APIs() []API {
	return slices.SortedFunc(maps.Values(apiTable), func(a, b API) int { return cmp.Compare(a.Key, b.Key) })
}

// LookupAPI is the row of key, if the controller serves it.
func LookupAPI(key kmsg.Key) (API, bool) {
	a, ok := apiTable[key]
	return a, ok
}

// Serve has c decide req (of a's key). The caller sets the response
// version.
func (a API) Serve(ctx context.Context, c *Controller, req kmsg.Request) kmsg.Response {
	return a.serve(ctx, c, req)
}

// Forwarded reports whether brokers forward a's request for clients, so
// Failed may be called.
func (a API) Forwarded() bool { return a.failed != nil }

// Failed is the answer to req when no controller decided it: every item
// carries err's code (UNKNOWN_SERVER_ERROR if it has none) and message.
// Only for Forwarded APIs.
func (a API) Failed(req kmsg.Request, err error) kmsg.Response { return a.failed(req, err) }

// Refused reports whether resp refuses the whole request as NOT_CONTROLLER
// (the controller refuses before deciding anything, so the first item's
// code tells): the sender should try the active controller.
func (a API) Refused(resp kmsg.Response) bool { return a.refused(resp) }

// failedMessage is err's text in a failed answer.
func failedMessage(err error) *string {
	s := err.Error()
	return &s
}

// notController is the refusal code.
var notController = kerr.NotController.Code
