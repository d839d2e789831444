package sampler

import (
	"context"
	"slices"
	"testing"
)

// TestSampleRowsMatchesSample: the rows SampleRows draws for a block's
// destinations, from the whole graph or from a copy holding only those
// rows, are the block's rows (relabelled back to global ids).
func TestSampleRowsMatchesSample(t *testing.T) {
	g := rmatGraph(t, 10)
	seeds := spreadSeeds(64, 1024)
	for _, u := range []*Uniform{{Fanouts: []int{3, 5}}, {Fanouts: []int{4, 2}, Replace: true}, {Fanouts: []int{-1, 7}}} {
		blocks, err := u.Sample(context.Background(), g, seeds, 99)
		if err != nil {
			t.Fatal(err)
		}
		for l, b := range blocks {
			indptr, nbr, err := SampleRows(g, b.Dst, b.Dst, l, u.Fanouts[l], u.Replace, 99)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(indptr, b.Adj.Indptr) {
				t.Fatalf("%+v block %d: row lengths differ", u, l)
			}
			for e, c := range b.Adj.Idx32 {
				if nbr[e] != b.Src[c] {
					t.Fatalf("%+v block %d edge %d: %d, want %d", u, l, e, nbr[e], b.Src[c])
				}
			}
		}
	}
	if _, _, err := SampleRows(g, []int32{1}, nil, 0, 1, false, 0); err == nil {
		t.Fatal("rows and destinations of different lengths accepted")
	}
}
