package config

import (
	"testing"
	"time"
)

// A group override the broker's bounds have since narrowed is capped to
// them (Kafka's evaluateValues); the bounds refuse it when set anew.
func TestGroupConfigCappedToBrokerBounds(t *testing.T) {
	c, _, err := Load("testdata/server.properties", []string{
		"group.consumer.max.session.timeout.ms=50000", "group.share.min.delivery.count.limit=4"})
	if err != nil {
		t.Fatal(err)
	}
	overrides := map[string]string{"consumer.session.timeout.ms": "60000", "share.delivery.count.limit": "2"}
	g := c.GroupConfig(overrides)
	if g.ConsumerSessionTimeout != 50*time.Second || g.ShareDeliveryCountLimit != 4 {
		t.Errorf("effective session timeout %v, delivery count limit %d; want 50s and 4 (capped)", g.ConsumerSessionTimeout, g.ShareDeliveryCountLimit)
	}
	if err := c.ValidateGroupConfigs(overrides); err == nil || err.Error() != "consumer.session.timeout.ms must be in the range 45000 to 50000 inclusive." {
		t.Errorf("validate: %v", err)
	}
	// Without overrides a group has the broker's values.
	if g := c.GroupConfig(nil); g.ConsumerSessionTimeout != 45*time.Second || g.ShareAutoOffsetReset != "latest" || g.StreamsNumStandbyReplicas != 0 {
		t.Errorf("defaults %+v", g)
	}
}

func TestParseShareResetDuration(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"by_duration:PT1H":     time.Hour,
		"by_duration:P1D":      24 * time.Hour,
		"by_duration:P1DT2M":   24*time.Hour + 2*time.Minute,
		"by_duration:PT0.5S":   500 * time.Millisecond,
		"by_duration:PT0S":     0,
		"by_duration:-PT1H":    -1,
		"by_duration:P":        -1,
		"by_duration:PT":       -1,
		"by_duration:P1DT":     -1,
		"by_duration:1H":       -1,
		"latest":               -1,
		"by_duration:PT1H30M5": -1,
	} {
		d, ok := ParseShareResetDuration(v)
		if (want < 0) == ok || (ok && d != want) {
			t.Errorf("%s: %v %v, want %v", v, d, ok, want)
		}
	}
}
