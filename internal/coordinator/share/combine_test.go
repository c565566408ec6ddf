package share

import (
	"reflect"
	"testing"
)

func TestCombineBatches(t *testing.T) {
	for _, c := range []struct {
		name         string
		soFar, added []Batch
		start        int64
		want         []Batch
	}{
		{name: "empty", start: -1, want: []Batch{}},
		{name: "disjoint stay apart", soFar: []Batch{{0, 4, 2, 1}}, added: []Batch{{10, 14, 4, 1}}, start: -1,
			want: []Batch{{0, 4, 2, 1}, {10, 14, 4, 1}}},
		{name: "contiguous in one state join", soFar: []Batch{{0, 4, 2, 1}}, added: []Batch{{5, 9, 2, 1}}, start: -1,
			want: []Batch{{0, 9, 2, 1}}},
		{name: "higher delivery count wins the overlap", soFar: []Batch{{0, 9, 0, 1}}, added: []Batch{{3, 5, 0, 2}}, start: -1,
			want: []Batch{{0, 2, 0, 1}, {3, 5, 0, 2}, {6, 9, 0, 1}}},
		{name: "lower delivery count loses", soFar: []Batch{{0, 9, 0, 3}}, added: []Batch{{3, 5, 2, 1}}, start: -1,
			want: []Batch{{0, 9, 0, 3}}},
		{name: "same count: terminal state wins", soFar: []Batch{{0, 9, 0, 1}}, added: []Batch{{0, 4, 2, 1}, {8, 12, 4, 1}}, start: -1,
			want: []Batch{{0, 4, 2, 1}, {5, 7, 0, 1}, {8, 12, 4, 1}}},
		{name: "start offset prunes and trims", soFar: []Batch{{0, 4, 2, 1}, {5, 9, 0, 1}}, added: []Batch{{10, 12, 2, 1}}, start: 7,
			want: []Batch{{7, 9, 0, 1}, {10, 12, 2, 1}}},
		{name: "lone batch kept as it is", soFar: []Batch{{0, 4, 2, 1}, {5, 9, 0, 1}}, start: 6,
			want: []Batch{{6, 9, 0, 1}}},
		{name: "everything below start", soFar: []Batch{{0, 4, 2, 1}}, added: []Batch{{5, 9, 2, 1}}, start: 10,
			want: []Batch{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := combineBatches(c.soFar, c.added, c.start)
			if len(got) == 0 && len(c.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}
