package metadata

import (
	"slices"
	"testing"
)

// TestRegisterFullDelta: every publisher registered gets the current
// image as a full delta, also after the image advanced between two
// registrations (the loader reuses one full delta per image).
func TestRegisterFullDelta(t *testing.T) {
	l := NewLoader("c", nil)
	a, b := uuidN(1), uuidN(2)
	apply(t, l, 2, &TopicRecord{Name: "a", TopicID: a}, &PartitionRecord{TopicID: a, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	created := func(d *Delta) []string {
		var names []string
		for _, t := range d.CreatedTopics {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		return names
	}
	var got [][]string
	register := func() {
		t.Helper()
		if err := l.Register(PublisherFunc(func(d *Delta, _ *Image) {
			if d.Full {
				got = append(got, created(d))
			}
		})); err != nil {
			t.Fatal(err)
		}
	}
	register()
	register()
	apply(t, l, 3, &TopicRecord{Name: "b", TopicID: b})
	register()
	want := [][]string{{"a"}, {"a"}, {"a", "b"}}
	if len(got) != len(want) {
		t.Fatalf("full deltas %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("full deltas %v, want %v", got, want)
		}
	}
}
