package connect

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/samsa-io/samsa/internal/servertest"
)

// TestDistributedRestartReplaysTopics stops a distributed worker and
// starts another on the same topics: it finds the connector and its task
// configs in the config topic and resumes the tasks from the offset topic.
// The data generator's records go through the connector's JsonConverter
// in Kafka's envelope.
func TestDistributedRestartReplaysTopics(t *testing.T) {
	srv := servertest.Start(t, "group.initial.rebalance.delay.ms=0")
	bootstrap := servertest.Addr(srv)
	w := startWorker(t, bootstrap, true, nil)
	r := rest{t, w.URL()}
	config := map[string]string{"connector.class": "Datagen", "topic": "gen", "tasks.max": "2",
		"max.records": "3", "interval.ms": "0", "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
	r.must(201, "PUT", "/connectors/gen/config", config)
	recs := consume(t, bootstrap, "gen", 6)
	r.waitState("gen", stateRunning)
	var env struct {
		Schema  map[string]any `json:"schema"`
		Payload struct {
			ID   int64  `json:"id"`
			Task int    `json:"task"`
			Name string `json:"name"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(recs[0].Value, &env); err != nil || env.Schema["name"] != "io.samsa.connect.Datagen" || env.Schema["type"] != "struct" {
		t.Fatalf("envelope %s: %v", recs[0].Value, err)
	}
	// Offsets are stored at the next flush (200 ms): wait until both tasks' are.
	waitFor(t, "both tasks' offsets", func() bool {
		o := r.must(200, "GET", "/connectors/gen/offsets", nil).(map[string]any)["offsets"].([]any)
		if len(o) != 2 {
			return false
		}
		for _, e := range o {
			if e.(map[string]any)["offset"].(map[string]any)["seq"] != float64(3) {
				return false
			}
		}
		return true
	})
	w.Close()

	w2 := startWorker(t, bootstrap, true, nil)
	r2 := rest{t, w2.URL()}
	info := r2.must(200, "GET", "/connectors/gen", nil).(map[string]any)
	if len(info["tasks"].([]any)) != 2 || info["config"].(map[string]any)["max.records"] != "3" {
		t.Fatalf("replayed connector: %v", info)
	}
	r2.waitState("gen", stateRunning)
	// One more record per task: each continues its sequence at 4.
	r2.must(200, "PATCH", "/connectors/gen/config", map[string]string{"max.records": "4"})
	recs = consume(t, bootstrap, "gen", 8)
	var seen []string
	for _, rec := range recs {
		if err := json.Unmarshal(rec.Value, &env); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, fmt.Sprintf("%d/%d", env.Payload.Task, env.Payload.ID))
	}
	sort.Strings(seen)
	want := "[0/1 0/2 0/3 0/4 1/1 1/2 1/3 1/4]"
	if fmt.Sprint(seen) != want {
		t.Fatalf("task/id of the records: %v, want %s", seen, want)
	}
}
