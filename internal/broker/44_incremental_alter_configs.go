package broker

// IncrementalAlterConfigs, versions 0-1.
//
// Behavior:
//   - TOPIC and BROKER resources go to the controller: SET, DELETE, and
//     APPEND/SUBTRACT for LIST keys (cleanup.policy), each resource all or
//     nothing, answered after the change is applied to this broker's image.
//     A BROKER resource is one broker (name = node id) or the cluster
//     default (name ""); only dynamic keys may be set.
//   - BROKER_LOGGER resources are handled here, like Kafka's broker does:
//     the name must be this node's id, and the one logger is "root" (the
//     node has one slog level). SET takes a log4j level (TRACE, DEBUG,
//     INFO, WARN, ERROR, FATAL, OFF, ALL); DELETE of root is refused, as in
//     Kafka; APPEND/SUBTRACT are INVALID_REQUEST. Levels change only when
//     the node wired its level with SetLogLevel; otherwise the change is
//     refused rather than pretended.
//   - validate_only checks everything and changes nothing.
//   - Authorization (Kafka's ConfigAdminManager and ControllerApis,
//     decided here before forwarding): ALTER_CONFIGS on the cluster for
//     BROKER and BROKER_LOGGER resources, on the topic for TOPIC ones; a
//     refused resource answers CLUSTER_ or TOPIC_AUTHORIZATION_FAILED and
//     is neither applied nor sent to the controller.

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/network"
	"github.com/samsa-io/samsa/internal/wire"
)

func handleIncrementalAlterConfigs(ctx context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
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
	var decided []kmsg.IncrementalAlterConfigsResponseResource
	if len(forward.Resources) > 0 {
		decided = b.cfg.Controller.Forward(ctx, &forward).(*kmsg.IncrementalAlterConfigsResponse).Resources
	}
	for i, r := range req.Resources {
		if denied[i] != nil {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, denied[i].Code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		if r.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode, rr.ErrorMessage = wire.ErrorCodeAndMessage(b.alterLoggers(r, req.ValidateOnly))
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		resp.Resources = append(resp.Resources, decided[0])
		decided = decided[1:]
	}
	return resp, nil
}

// rootLogger is the one logger name served: a node has one slog level.
const rootLogger = "root"

type logLevel struct {
	name  string
	level slog.Level
}

// logLevels maps log4j level names to slog levels. slog has no TRACE,
// FATAL, OFF or ALL; they are placed beyond its four levels so that each
// name reads back as itself.
var logLevels = []logLevel{
	{"ALL", math.MinInt32},
	{"TRACE", slog.LevelDebug - 4},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", slog.LevelError + 4},
	{"OFF", math.MaxInt32},
}

func logLevelNames() string {
	var names []string
	for _, l := range logLevels {
		names = append(names, l.name)
	}
	return strings.Join(names, ", ")
}

// levelName is the log4j name of the highest level at or below l.
func levelName(l slog.Level) string {
	name := logLevels[0].name
	for _, x := range logLevels {
		if x.level <= l {
			name = x.name
		}
	}
	return name
}

// currentLogLevel is the level of the node's logger: the wired LevelVar,
// or else the lowest level the logger has enabled.
func (b *Broker) currentLogLevel() slog.Level {
	if v := b.dyn.logLevel.Load(); v != nil {
		return v.Level()
	}
	for _, x := range logLevels[:len(logLevels)-1] {
		if b.cfg.Logger.Enabled(context.Background(), x.level) {
			return x.level
		}
	}
	return math.MaxInt32
}

// alterLoggers validates and, unless validateOnly, applies one
// BROKER_LOGGER resource: all of it or nothing.
func (b *Broker) alterLoggers(r kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if self := config.BrokerResourceName(b.cfg.NodeID); r.ResourceName != self {
		return wire.Errorf(kerr.InvalidRequest, "Unexpected broker id, expected %s, but received %s", self, r.ResourceName)
	}
	var level *slog.Level
	seen := map[string]bool{}
	for _, c := range r.Configs {
		if seen[c.Name] {
			return wire.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Name != rootLogger {
			return wire.Errorf(kerr.InvalidConfig, "Logger %s does not exist!", c.Name)
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v := ""
			if c.Value != nil {
				v = strings.ToUpper(strings.TrimSpace(*c.Value))
			}
			i := slices.IndexFunc(logLevels, func(x logLevel) bool { return x.name == v })
			if i < 0 {
				return wire.Errorf(kerr.InvalidConfig, "Cannot set the log level of %s to %s as it is not a supported log level. Valid log4j levels are %s",
					c.Name, v, logLevelNames())
			}
			level = &logLevels[i].level
		case kmsg.IncrementalAlterConfigOpDelete:
			return wire.Errorf(kerr.InvalidRequest, "Removing the log level of the %s logger is not allowed", rootLogger)
		default:
			return wire.Errorf(kerr.InvalidRequest, "Operation %s is not supported for BROKER_LOGGER", c.Op)
		}
	}
	lv := b.dyn.logLevel.Load()
	if level != nil && lv == nil {
		return wire.Errorf(kerr.InvalidRequest, "this node's log level is fixed at start-up; it cannot be changed at runtime")
	}
	if level != nil && !validateOnly {
		lv.Set(*level)
		b.cfg.Logger.Info("log level changed", "logger", rootLogger, "level", levelName(*level))
	}
	return nil
}
