package toyplugins

import (
	"context"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/sampling/samplertest"
)

// TestFirstKPinned holds sampler.toy-first-k to the blocks it drew before
// it moved onto the sampler base (samplertest.Checksum), on an R-MAT graph
// and on a multigraph (the toy keeps the first k DISTINCT neighbours).
func TestFirstKPinned(t *testing.T) {
	rmat, multi := graphtest.RMAT(9, 16, 6), graphtest.Random(300, 3000, 5, true)
	for _, c := range []struct {
		s    *FirstK
		g    *graph.CSR
		want string
	}{
		{&FirstK{K: 3, Hops: 2}, rmat, "89f9ae969cfb75a5"},
		{&FirstK{K: 1, Hops: 3}, rmat, "da4fa24ef1e78ac8"},
		{&FirstK{K: 40, Hops: 1}, rmat, "493cf07795f6ddf6"},
		{&FirstK{K: 4, Hops: 2}, multi, "6378614af2f1c3c9"},
	} {
		g := c.g
		var seeds []int32
		for v := int32(3); v < int32(g.NumRows); v += 7 {
			seeds = append(seeds, v)
		}
		blocks, err := c.s.Sample(context.Background(), g, seeds, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := samplertest.Checksum(blocks); got != c.want {
			t.Errorf("k %d, hops %d: blocks %s, pinned %s", c.s.K, c.s.Hops, got, c.want)
		}
	}
}
