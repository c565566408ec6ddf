package broker

// ApiVersions, versions 0-5.
//
// Behavior:
//   - Answers from the broker's handler table, so every advertised key has a
//     handler and every handler is advertised.
//   - A version we do not serve is answered at version 0 with
//     UNSUPPORTED_VERSION and the table, so the client can retry lower
//     (KIP-511). wire writes the header without tagged fields.
//   - v3+ carry the feature levels (metadata.SupportedFeatures: what this
//     build implements) and the finalized levels of the image, with the
//     image's offset as their epoch. Below v4 supported features whose
//     minimum is 0 are left out, as Kafka leaves them out (KAFKA-17492:
//     older clients cannot read them); finalized levels of 0 are never
//     listed.
//   - v5 (KIP-1242) names the cluster and node the client means to reach,
//     both or neither (one without the other: INVALID_REQUEST). When
//     either is not this node's, the answer is REBOOTSTRAP_REQUIRED: the
//     client's metadata is stale (the address now belongs to another
//     broker or cluster) and it should rediscover the cluster from its
//     bootstrap servers. Both errors carry no API table, as Kafka's
//     getErrorResponse.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/network"
)

func handleAPIVersions(_ context.Context, b *Broker, _ *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	if err := b.checkIntendedNode(req); err != nil {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = req.Version
		resp.ErrorCode = err.Code
		return resp, nil
	}
	resp := apiVersionsResponse(b)
	resp.Version = req.Version
	if req.Version >= 3 {
		addFeatures(resp, b.cfg.Image(), req.Version < 4)
	}
	return resp, nil
}

// checkIntendedNode is v5's check of the cluster and node the client
// believes it is connected to (Kafka's ApiVersionsRequest.isValid and
// KafkaApis' clusterIdOrNodeIdIsInvalid).
func (b *Broker) checkIntendedNode(req *kmsg.ApiVersionsRequest) *kerr.Error {
	if req.Version < 5 {
		return nil
	}
	switch {
	case (req.ClusterID == nil) != (req.NodeID == -1):
		return kerr.InvalidRequest
	case req.ClusterID != nil && (*req.ClusterID != b.cfg.Image().ClusterID || req.NodeID != b.cfg.NodeID):
		return kerr.RebootstrapRequired
	}
	return nil
}

// addFeatures sets resp's supported and finalized features from img.
func addFeatures(resp *kmsg.ApiVersionsResponse, img *metadata.Image, omitMin0 bool) {
	for _, f := range metadata.SupportedFeatures() {
		if omitMin0 && f.Min == 0 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	finalized := img.Features()
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		if lvl := finalized[name]; lvl != 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, lvl, lvl
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	resp.FinalizedFeaturesEpoch = int64(img.Offset)
}

func unsupportedAPIVersions(b *Broker) kmsg.Response {
	resp := apiVersionsResponse(b)
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp
}

func apiVersionsResponse(b *Broker) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, r := range b.versions.All() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey = int16(r.Key)
		k.MinVersion = r.Min
		k.MaxVersion = r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
