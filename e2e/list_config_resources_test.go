package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/servertest"
)

// ListConfigResources (KIP-1142) through franz-go, with the answers a
// Kafka 4.4 broker gives: v1 lists every broker, broker logger and topic
// (internal topics too), filtered by the types asked for; v0 (the former
// ListClientMetricsResources) lists only client-metrics resources; an
// unknown type is UNSUPPORTED_VERSION.
func TestListConfigResources(t *testing.T) {
	ctx := testContext(t)
	srv := servertest.Start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, name := range []string{"lcr-b", "lcr-a"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	list := func(cl *kgo.Client, types ...int8) string {
		t.Helper()
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message
		}
		var out []string
		for _, r := range resp.ConfigResources {
			out = append(out, fmt.Sprintf("%d:%s", r.Type, r.Name))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		types []int8
		want  string
	}{
		{nil, "8:1 4:1 2:lcr-a 2:lcr-b"},
		{[]int8{2}, "2:lcr-a 2:lcr-b"},
		{[]int8{4}, "4:1"},
		{[]int8{2, 8}, "8:1 2:lcr-a 2:lcr-b"},
		{[]int8{16, 32}, ""},
		{[]int8{1}, kerr.UnsupportedVersion.Message},
	} {
		if got := list(cl, c.types...); got != c.want {
			t.Errorf("types %v: got %q, want %q", c.types, got, c.want)
		}
	}

	// v0: only client metrics, of which there are none.
	v := kversion.V4_4_0()
	v.SetMaxKeyVersion(int16(kmsg.ListConfigResources), 0)
	cl0, err := kgo.NewClient(kgo.SeedBrokers(servertest.Addr(srv)), kgo.MaxVersions(v))
	if err != nil {
		t.Fatal(err)
	}
	defer cl0.Close()
	if got := list(cl0); got != "" {
		t.Errorf("v0: got %q, want no resources", got)
	}
}
