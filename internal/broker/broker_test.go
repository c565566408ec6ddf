package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/metadata"
	"github.com/samsa-io/samsa/internal/wire"
)

// The version table is what clients negotiate against: an advertised API
// without a handler closes their connection, and a handler that is not
// advertised is dead code no client will ever call.

func TestVersionTableMatchesHandlers(t *testing.T) {
	b := New(Config{})
	hs := handlers()
	advertised := b.Versions().All()
	if len(advertised) != len(hs) {
		t.Fatalf("%d keys advertised, %d handlers", len(advertised), len(hs))
	}
	for _, r := range advertised {
		h, ok := hs[r.Key]
		if !ok {
			t.Errorf("%s advertised without a handler", r.Key.Name())
			continue
		}
		if h.min != r.Min || h.max != r.Max {
			t.Errorf("%s advertised v%d-%d, handler serves v%d-%d", r.Key.Name(), r.Min, r.Max, h.min, h.max)
		}
		if h.fn == nil {
			t.Errorf("%s has a nil handler function", r.Key.Name())
		}
	}
	for k := range hs {
		if _, ok := b.Versions().Range(int16(k)); !ok {
			t.Errorf("handler for %s is not advertised", k.Name())
		}
	}
}

func TestVersionTableWithinKmsg(t *testing.T) {
	for _, r := range New(Config{}).Versions().All() {
		req := kmsg.RequestForKey(int16(r.Key))
		if req == nil {
			t.Errorf("key %d is unknown to kmsg", r.Key)
			continue
		}
		if r.Min < 0 || r.Min > r.Max {
			t.Errorf("%s: bad range v%d-%d", r.Key.Name(), r.Min, r.Max)
		}
		if max := req.MaxVersion(); r.Max > max {
			t.Errorf("%s: advertised up to v%d, kmsg encodes up to v%d", r.Key.Name(), r.Max, max)
		}
	}
}

func TestVersionTableMinimums(t *testing.T) {
	// Versions clients depend on: librdkafka sends Produce from v0 in its
	// feature probing (KAFKA-18659), and every client opens with
	// ApiVersions v0 when it cannot parse a newer answer.
	want := map[kmsg.Key]int16{kmsg.Produce: 0, kmsg.ApiVersions: 0, kmsg.Metadata: 0}
	v := New(Config{}).Versions()
	for k, min := range want {
		r, ok := v.Range(int16(k))
		if !ok {
			t.Fatalf("%s not advertised", k.Name())
		}
		if r.Min != min {
			t.Errorf("%s advertised from v%d, want v%d", k.Name(), r.Min, min)
		}
	}
	// ApiVersions v3 is the first flexible version; clients send it first.
	if r, _ := v.Range(int16(kmsg.ApiVersions)); r.Max < 3 {
		t.Errorf("ApiVersions max v%d, want >= 3", r.Max)
	}
}

func TestAPIVersionsResponseListsTable(t *testing.T) {
	loader := metadata.NewLoader("c", nil)
	batch, err := metadata.EncodeBatch([]metadata.Record{
		&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27},
		&metadata.FeatureLevelRecord{Name: "group.version", FeatureLevel: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := loader.Apply(7, batch); err != nil {
		t.Fatal(err)
	}
	b := New(Config{Image: loader.Image})
	for _, ver := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = ver
		resp, err := b.Handle(context.Background(), nil, wire.Request{
			Header: wire.RequestHeader{APIKey: int16(kmsg.ApiVersions), APIVersion: ver},
			Body:   req,
		})
		if err != nil {
			t.Fatal(err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.Version != ver || av.ErrorCode != 0 {
			t.Fatalf("v%d: version %d error %d", ver, av.Version, av.ErrorCode)
		}
		checkKeys(t, b, av)
		// Features from v3; below v4 without those whose minimum is 0.
		var supported, finalized []string
		for _, f := range av.SupportedFeatures {
			supported = append(supported, fmt.Sprintf("%s=%d-%d", f.Name, f.MinVersion, f.MaxVersion))
		}
		for _, f := range av.FinalizedFeatures {
			finalized = append(finalized, fmt.Sprintf("%s=%d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel))
		}
		wantSupported := map[int16]string{0: "", 3: "metadata.version=7-27",
			4: "eligible.leader.replicas.version=0-1 group.version=0-1 kraft.version=0-1 metadata.version=7-27 share.version=0-1 streams.version=0-1 transaction.version=0-2"}[ver]
		wantFinalized, wantEpoch := "group.version=1-1 metadata.version=27-27", int64(7)
		if ver < 3 {
			wantFinalized, wantEpoch = "", -1 // kmsg's default, not sent
		}
		if got := strings.Join(supported, " "); got != wantSupported {
			t.Errorf("v%d supported features %q, want %q", ver, got, wantSupported)
		}
		if got := strings.Join(finalized, " "); got != wantFinalized || av.FinalizedFeaturesEpoch != wantEpoch {
			t.Errorf("v%d finalized features %q epoch %d, want %q epoch %d", ver, got, av.FinalizedFeaturesEpoch, wantFinalized, wantEpoch)
		}
	}
}

func TestAPIVersionsUnsupportedVersion(t *testing.T) {
	// KIP-511: a version above what we serve is answered at v0 with
	// UNSUPPORTED_VERSION and the full table, so the client can retry.
	b := New(Config{})
	resp, err := b.Handle(context.Background(), nil, wire.Request{
		Header: wire.RequestHeader{APIKey: int16(kmsg.ApiVersions), APIVersion: 99, CorrelationID: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.Version != 0 || av.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("version %d error %d, want v0 error %d", av.Version, av.ErrorCode, kerr.UnsupportedVersion.Code)
	}
	checkKeys(t, b, av)
}

func TestUnservedVersionClosesConnection(t *testing.T) {
	// Anything but ApiVersions at a version we do not serve is an error,
	// which the network layer turns into closing the connection.
	b := New(Config{})
	for _, h := range []wire.RequestHeader{
		{APIKey: int16(kmsg.Produce), APIVersion: 99},
		{APIKey: 9999, APIVersion: 0},
		{APIKey: int16(kmsg.Fetch), APIVersion: 3},
	} {
		resp, err := b.Handle(context.Background(), nil, wire.Request{Header: h})
		if err == nil || resp != nil {
			t.Errorf("key %d v%d: resp %v, err %v; want an error", h.APIKey, h.APIVersion, resp, err)
		}
	}
}

func checkKeys(t *testing.T, b *Broker, av *kmsg.ApiVersionsResponse) {
	t.Helper()
	all := b.Versions().All()
	if len(av.ApiKeys) != len(all) {
		t.Fatalf("response lists %d keys, table has %d", len(av.ApiKeys), len(all))
	}
	for i, k := range av.ApiKeys {
		r := all[i]
		if k.ApiKey != int16(r.Key) || k.MinVersion != r.Min || k.MaxVersion != r.Max {
			t.Errorf("key %d: got %d v%d-%d, want %d v%d-%d", i, k.ApiKey, k.MinVersion, k.MaxVersion, r.Key, r.Min, r.Max)
		}
	}
}

// Every version a Kafka 4.4 broker listener serves is either served or
// refused with an answer (unserved.go): a served API above Samsa's
// maximum, and an API Samsa does not serve.
func TestKafkaVersionsServedOrRefused(t *testing.T) {
	b := New(Config{})
	kversion.V4_4_0().EachMaxKeyVersion(func(k, max int16) {
		if kmsg.Key(k) == kmsg.ApiVersions || kmsg.RequestForKey(k) == nil {
			return
		}
		max = min(max, kmsg.RequestForKey(k).MaxVersion())
		lo := kafkaMinVersions[kmsg.Key(k)]
		if r, ok := b.Versions().Range(k); ok {
			lo = r.Min
		}
		for v := lo; v <= max; v++ {
			if !b.Versions().Serves(k, v) && !b.Versions().Refuses(k, v) {
				t.Errorf("%s v%d: neither served nor refused with an answer", kmsg.NameForKey(k), v)
			}
		}
	})
	if !b.Versions().Serves(int16(kmsg.AlterReplicaLogDirs), 1) || !b.Versions().Serves(int16(kmsg.AlterReplicaLogDirs), 2) {
		t.Error("AlterReplicaLogDirs v1-2: want served")
	}
}
