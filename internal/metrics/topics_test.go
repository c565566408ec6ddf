package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
)

func counterValue(t *testing.T, b *BrokerTopics, name, topic string) float64 {
	t.Helper()
	fams, err := collectFamilies(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "kafka_server_brokertopicmetrics_"+name+"_total" {
			continue
		}
		for _, m := range f.Metric {
			if m.Label[0].GetValue() == topic {
				return m.Counter.GetValue()
			}
		}
	}
	return -1
}

func TestProducedAndFetchedCountAsKafka(t *testing.T) {
	r := New()
	b := r.TopicMetrics()
	tm := b.Produced(nil, "a", 3, 100, nil)
	if tm2 := b.Produced(tm, "a", 2, 60, nil); tm2 != tm {
		t.Error("the counters of the same topic were looked up again")
	}
	b.Produced(nil, "a", 5, 5000, kerr.MessageTooLarge)
	b.Produced(nil, "b", 1, 10, kerr.NotLeaderForPartition)
	b.Produced(nil, "b", 1, 10, fmt.Errorf("append: %w", kerr.InvalidRecord))
	b.Fetched(nil, "a", 160, 0, false)
	b.Fetched(nil, "a", 40, 0, true)
	b.Fetched(nil, "b", 0, kerr.OffsetOutOfRange.Code, false)
	b.Fetched(nil, "b", 0, kerr.UnknownServerError.Code, false)
	for _, c := range []struct {
		name, topic string
		want        float64
	}{
		{"messagesin", "a", 5}, {"bytesin", "a", 160}, {"bytesrejected", "a", 5000},
		{"totalproducerequests", "a", 3}, {"failedproducerequests", "a", 0},
		{"totalproducerequests", "b", 2}, {"failedproducerequests", "b", 1},
		{"bytesout", "a", 160}, {"replicationbytesout", "a", 40}, {"totalfetchrequests", "b", 2}, {"failedfetchrequests", "b", 1},
		{"messagesin", "", 5}, {"totalproducerequests", "", 5}, {"failedfetchrequests", "", 1},
	} {
		if got := counterValue(t, b, c.name, c.topic); got != c.want {
			t.Errorf("%s{topic=%q} = %v, want %v", c.name, c.topic, got, c.want)
		}
	}
	b.Forget("a")
	if got := counterValue(t, b, "messagesin", "a"); got != -1 {
		t.Errorf("a deleted topic's series is still there: %v", got)
	}
	if got := counterValue(t, b, "messagesin", ""); got != 5 {
		t.Errorf("all topics' messagesin after deleting a = %v, want 5 (counters never go down)", got)
	}
	if problems, err := testutil.GatherAndLint(r.Gatherer()); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

func collectFamilies(b *BrokerTopics) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(b); err != nil {
		return nil, err
	}
	return reg.Gather()
}
