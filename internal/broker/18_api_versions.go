package broker

// ApiVersions, versions 0-4.
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
	resp := apiVersionsResponse(b)
	resp.Version = req.Version
	if req.Version >= 3 {
		addFeatures(resp, b.cfg.Image(), req.Version < 4)
	}
	return resp, nil
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
