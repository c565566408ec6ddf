package controller

// Dynamic configs (Kafka's ConfigurationControlManager): AlterConfigs and
// IncrementalAlterConfigs for TOPIC and BROKER resources. Each resource
// succeeds or fails as a whole; the records of every successful resource
// are written in one batch and the answer is sent after they are replayed.
// BROKER_LOGGER resources are not metadata: the broker applies them itself.

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// maxConfigValueBytes is Kafka's limit on a stored config value: the
// ConfigRecord value is a string with an int16 length.
const maxConfigValueBytes = 32767

// configOp is one change to one key, legacy AlterConfigs changes being SETs.
type configOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// configChange is the change of one resource.
type configChange struct {
	rtype kmsg.ConfigResourceType
	name  string
	ops   []configOp
	// replace drops every current config not set by ops (legacy
	// AlterConfigs replaces the whole set).
	replace bool
}

type resourceKey struct {
	rtype kmsg.ConfigResourceType
	name  string
}

// AlterConfigs replaces the whole set of dynamic configs of each resource
// (the legacy API): keys not in the request are deleted.
func (c *Controller) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	changes := make([]configChange, len(req.Resources))
	for i, r := range req.Resources {
		ch := configChange{rtype: r.ResourceType, name: r.ResourceName, replace: true}
		for _, cfg := range r.Configs {
			ch.ops = append(ch.ops, configOp{name: cfg.Name, op: kmsg.IncrementalAlterConfigOpSet, value: cfg.Value})
		}
		changes[i] = ch
	}
	resp := kmsg.NewPtrAlterConfigsResponse()
	for _, err := range c.alterConfigs(ctx, changes, req.ValidateOnly) {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ErrorCode, rr.ErrorMessage = wire.ErrorCodeAndMessage(err.err)
		rr.ResourceType, rr.ResourceName = err.rtype, err.name
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT
// operations to the dynamic configs of each resource.
func (c *Controller) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	changes := make([]configChange, len(req.Resources))
	for i, r := range req.Resources {
		ch := configChange{rtype: r.ResourceType, name: r.ResourceName}
		for _, cfg := range r.Configs {
			ch.ops = append(ch.ops, configOp{name: cfg.Name, op: cfg.Op, value: cfg.Value})
		}
		changes[i] = ch
	}
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	for _, err := range c.alterConfigs(ctx, changes, req.ValidateOnly) {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ErrorCode, rr.ErrorMessage = wire.ErrorCodeAndMessage(err.err)
		rr.ResourceType, rr.ResourceName = err.rtype, err.name
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// resourceResult is the outcome of one resource, in request order.
type resourceResult struct {
	rtype kmsg.ConfigResourceType
	name  string
	err   error
}

func (c *Controller) alterConfigs(ctx context.Context, changes []configChange, validateOnly bool) []resourceResult {
	out := make([]resourceResult, len(changes))
	c.mu.Lock()
	defer c.mu.Unlock()
	img, err := c.beginLocked(ctx)

	counts := map[resourceKey]int{}
	for _, ch := range changes {
		counts[resourceKey{ch.rtype, ch.name}]++
	}
	var recs []metadata.Record
	var ok []int
	for i, ch := range changes {
		out[i] = resourceResult{rtype: ch.rtype, name: ch.name}
		switch {
		case err != nil:
			out[i].err = err
		case counts[resourceKey{ch.rtype, ch.name}] > 1:
			out[i].err = wire.Errorf(kerr.InvalidRequest, "Duplicate resource.")
		default:
			rs, aerr := c.decideConfigChange(img, ch)
			if aerr != nil {
				out[i].err = aerr
				continue
			}
			recs = append(recs, rs...)
			ok = append(ok, i)
		}
	}
	if validateOnly || len(recs) == 0 {
		return out
	}
	if werr := c.writeLocked(ctx, recs); werr != nil {
		for _, i := range ok {
			out[i].err = werr
		}
	}
	return out
}

// decideConfigChange validates one resource's change against img and
// returns a ConfigRecord for every key whose value changes.
func (c *Controller) decideConfigChange(img *metadata.Image, ch configChange) ([]metadata.Record, *wire.Error) {
	var rtype int8
	switch ch.rtype {
	case kmsg.ConfigResourceTypeTopic:
		if _, ok := img.Topic(ch.name); !ok {
			return nil, wire.Errorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", ch.name)
		}
		rtype = metadata.ResourceTopic
	case kmsg.ConfigResourceTypeBroker:
		if ch.name != "" {
			if id, err := strconv.ParseInt(ch.name, 10, 32); err != nil || id < 0 {
				return nil, wire.Errorf(kerr.InvalidRequest, "Invalid broker name %s", ch.name)
			}
		}
		rtype = metadata.ResourceBroker
	case kmsg.ConfigResourceTypeBrokerLogger:
		return nil, wire.Errorf(kerr.InvalidRequest, "BROKER_LOGGER resources are changed by the broker they name, not the controller")
	case kmsg.ConfigResourceTypeGroupConfig:
		if c.cfg.ValidateGroupConfigs == nil {
			return nil, wire.Errorf(kerr.InvalidRequest, "Unsupported resource type %s", ch.rtype)
		}
		if ch.name == "" {
			return nil, wire.Errorf(kerr.InvalidRequest, "Default group resources are not allowed.")
		}
		rtype = metadata.ResourceGroup
	default:
		return nil, wire.Errorf(kerr.InvalidRequest, "Unsupported resource type %s", ch.rtype)
	}
	current := img.Configs(rtype, ch.name)
	next := maps.Clone(current)
	if next == nil || ch.replace {
		next = map[string]string{}
	}
	seen := map[string]bool{}
	for _, op := range ch.ops {
		if seen[op.name] {
			return nil, wire.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[op.name] = true
		if aerr := c.applyConfigOp(rtype, next, op); aerr != nil {
			return nil, aerr
		}
	}
	if aerr := c.validateConfigs(rtype, ch.name, next); aerr != nil {
		return nil, aerr
	}
	var recs []metadata.Record
	keys := slices.Sorted(maps.Keys(current))
	for k := range next {
		if _, ok := current[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	// As Kafka (KAFKA-14136), every key a request names on a broker gets a
	// record even when its value is unchanged, so that brokers reload
	// what it points at (a key store rewritten in place).
	named := map[string]bool{}
	if rtype == metadata.ResourceBroker {
		for _, op := range ch.ops {
			named[op.name] = true
		}
	}
	for _, k := range keys {
		old, had := current[k]
		nv, has := next[k]
		if had == has && old == nv && !named[k] {
			continue
		}
		rec := &metadata.ConfigRecord{ResourceType: rtype, ResourceName: ch.name, Name: k}
		if has {
			rec.Value = &nv
		}
		recs = append(recs, rec)
		// With ELR, a new min.insync.replicas (a topic's, or the
		// cluster default's even when unchanged) clears the ELRs it
		// governs, as Kafka does: they were chosen under the old value.
		if k == "min.insync.replicas" && img.Features()[metadata.ELRVersionFeature] >= 1 {
			switch {
			case rtype == metadata.ResourceTopic:
				t, _ := img.Topic(ch.name)
				recs = append(recs, clearELRsOf(img, []*metadata.TopicImage{t})...)
			case ch.name == "":
				recs = append(recs, clearELRsOf(img, img.Topics())...)
			}
		}
	}
	return recs, nil
}

// applyConfigOp applies one operation to the resource's configs.
func (c *Controller) applyConfigOp(rtype int8, configs map[string]string, op configOp) *wire.Error {
	needValue := func() *wire.Error {
		if op.value == nil {
			return wire.Errorf(kerr.InvalidRequest, "Null value not supported for : %s", op.name)
		}
		return nil
	}
	switch op.op {
	case kmsg.IncrementalAlterConfigOpSet:
		if aerr := needValue(); aerr != nil {
			return aerr
		}
		configs[op.name] = *op.value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(configs, op.name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		def, isList := "", false
		if c.cfg.ListDefault != nil {
			def, isList = c.cfg.ListDefault(rtype, op.name)
		}
		if !isList {
			return wire.Errorf(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", op.op, op.name)
		}
		if aerr := needValue(); aerr != nil {
			return aerr
		}
		base, ok := configs[op.name]
		if !ok {
			// As in Kafka, APPEND to an unset list extends the default.
			base = def
		}
		parts := splitConfigList(base)
		for _, v := range splitConfigList(*op.value) {
			if op.op == kmsg.IncrementalAlterConfigOpAppend {
				if !slices.Contains(parts, v) {
					parts = append(parts, v)
				}
			} else {
				parts = slices.DeleteFunc(parts, func(p string) bool { return p == v })
			}
		}
		configs[op.name] = strings.Join(parts, ",")
	default:
		return wire.Errorf(kerr.InvalidRequest, "Unknown operation type %d", op.op)
	}
	return nil
}

// validateConfigs checks the complete set a resource would have.
func (c *Controller) validateConfigs(rtype int8, name string, configs map[string]string) *wire.Error {
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if len(configs[k]) > maxConfigValueBytes {
			return wire.Errorf(kerr.InvalidConfig, "The configuration value cannot be added because it exceeds the maximum value size of %d bytes.", maxConfigValueBytes)
		}
	}
	switch rtype {
	case metadata.ResourceTopic:
		if c.cfg.ValidateTopicConfig == nil {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(configs)) {
			if err := c.cfg.ValidateTopicConfig(k, configs[k]); err != nil {
				return wire.Errorf(kerr.InvalidConfig, "%s", err)
			}
		}
	case metadata.ResourceGroup:
		if err := c.cfg.ValidateGroupConfigs(configs); err != nil {
			return wire.Errorf(kerr.InvalidConfig, "%s", err)
		}
	case metadata.ResourceBroker:
		if c.cfg.ValidateBrokerConfigs == nil {
			return nil
		}
		// Kafka validates a BROKER resource on the broker
		// (ConfigAdminManager) and answers any failure INVALID_REQUEST
		// (KAFKA-13609 keeps that code for compatibility).
		if err := c.cfg.ValidateBrokerConfigs(configs, name == ""); err != nil {
			return wire.Errorf(kerr.InvalidRequest, "%s", err)
		}
	}
	return nil
}

// splitConfigList splits a LIST value on commas, dropping blanks.
func splitConfigList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// configAPIs are configs.go's rows of the API table (api.go).
func configAPIs() []API {
	return []API{
		api(kmsg.AlterConfigs, 0, 2, (*Controller).AlterConfigs,
			func(req *kmsg.AlterConfigsRequest, err error) *kmsg.AlterConfigsResponse {
				r := req.ResponseKind().(*kmsg.AlterConfigsResponse)
				for _, res := range req.Resources {
					rr := kmsg.NewAlterConfigsResponseResource()
					rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
					rr.ErrorCode, rr.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
					r.Resources = append(r.Resources, rr)
				}
				return r
			},
			func(r *kmsg.AlterConfigsResponse) bool {
				return len(r.Resources) > 0 && r.Resources[0].ErrorCode == notController
			}),
		api(kmsg.IncrementalAlterConfigs, 0, 1, (*Controller).IncrementalAlterConfigs,
			func(req *kmsg.IncrementalAlterConfigsRequest, err error) *kmsg.IncrementalAlterConfigsResponse {
				r := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
				for _, res := range req.Resources {
					rr := kmsg.NewIncrementalAlterConfigsResponseResource()
					rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
					rr.ErrorCode, rr.ErrorMessage = wire.ErrorCode(err), failedMessage(err)
					r.Resources = append(r.Resources, rr)
				}
				return r
			},
			func(r *kmsg.IncrementalAlterConfigsResponse) bool {
				return len(r.Resources) > 0 && r.Resources[0].ErrorCode == notController
			}),
	}
}
