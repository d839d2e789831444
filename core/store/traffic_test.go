package store

import (
	"context"
	"testing"
)

func TestMeasureEpoch(t *testing.T) {
	const n, dim = 50, 3
	feats := make([]float32, n*dim)
	batches := [][]int32{{0, 1, 2, 3}, {2, 3, 40, 41, 42}, {49}}
	reads := int64(10)
	cases := []struct {
		name  string
		rank  []int32
		local int64
	}{
		{"no cache", nil, 0},
		{"hot rows", []int32{2, 3, 40}, 5},
		{"everything", func() []int32 {
			r := make([]int32, n)
			for i := range r {
				r[i] = int32(i)
			}
			return r
		}(), reads},
	}
	for _, c := range cases {
		tr, err := MeasureEpoch(context.Background(), feats, dim, c.rank, batches)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tr.Rows != reads || tr.Local != c.local || tr.FeatureBytes != (reads-c.local)*dim*4 {
			t.Errorf("%s: %+v, want %d of %d rows local and %d feature bytes", c.name, tr, c.local, reads, (reads-c.local)*dim*4)
		}
	}
}
