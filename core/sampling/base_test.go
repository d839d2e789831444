package sampling_test

import (
	"context"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/sampling"
	"strata/core/sampling/samplertest"
)

// coin is a sampler built on the base the way a plugin is: each
// destination keeps every in-edge position whose coin, a hash of (rng,
// block, node, position), comes up heads. bad, when set, makes the draw
// return one row pointer too few.
type coin struct {
	hops int
	bad  bool
}

func (c coin) Layers() int { return c.hops }

func (c coin) SamplerID() string { return "sampler.coin" }

func (c coin) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Random: true, Subset: true}
}

func (c coin) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]sampling.Block, error) {
	return sampling.SampleLayers(ctx, c, g, seeds, rng)
}

func (c coin) DrawLayer(_ context.Context, g sampling.Graph, l int, dst []int32, rng uint64) ([]int64, []int32, []float32, error) {
	deg := make([]int64, len(dst))
	g.NumNeighbors(dst, deg)
	indptr := make([]int64, 1, len(dst)+1)
	var nbr []int32
	for i, v := range dst {
		var pos []int64
		for p := range deg[i] {
			if h := (rng ^ uint64(l)<<48 ^ uint64(v)<<20 ^ uint64(p)) * 0x9e3779b97f4a7c15; h>>63 == 1 {
				pos = append(pos, p)
			}
		}
		out := make([]int32, len(pos))
		g.Neighbors(v, pos, out)
		nbr = append(nbr, out...)
		indptr = append(indptr, int64(len(nbr)))
	}
	if c.bad {
		indptr = indptr[:len(indptr)-1]
	}
	return indptr, nbr, nil, nil
}

// TestBaseConformance runs the sampler suite on a draw that only the base
// makes a sampler.
func TestBaseConformance(t *testing.T) {
	samplertest.Test(t, func() sampling.Sampler { return coin{hops: 2} })
}

// TestBaseHashMap: the hash map the base relabels with above its dense
// limit gives the blocks of the dense map, with many seeds and with few
// (the map then grows past its initial size).
func TestBaseHashMap(t *testing.T) {
	g := graphtest.RMAT(10, 8, 3)
	for _, step := range []int32{3, 97} {
		var seeds []int32
		for v := int32(5); v < int32(g.NumRows); v += step {
			seeds = append(seeds, v)
		}
		testHashMap(t, g, seeds)
	}
}

func testHashMap(t *testing.T, g *graph.CSR, seeds []int32) {
	for _, s := range []sampling.Sampler{sampling.Full{Hops: 3}, coin{hops: 3}} {
		want, err := s.Sample(context.Background(), g, seeds, 4)
		if err != nil {
			t.Fatal(err)
		}
		restore := sampling.SetDenseMapLimit(0)
		got, err := s.Sample(context.Background(), g, seeds, 4)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if samplertest.Checksum(got) != samplertest.Checksum(want) {
			t.Errorf("%T: the hash map relabels differently from the dense map", s)
		}
	}
}

// TestBaseErrors: what the base checks, named after the sampler.
func TestBaseErrors(t *testing.T) {
	g := graphtest.Path(6)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		s     coin
		seeds []int32
		want  string
	}{
		{"no layers", context.Background(), coin{}, []int32{1}, "sampler.coin: layers = 0: must be >= 1"},
		{"bad draw", context.Background(), coin{hops: 1, bad: true}, []int32{1, 2}, "sampler.coin: block 0: the draw returned 2 row pointers"},
		{"seed", context.Background(), coin{hops: 1}, []int32{7}, "sampler.coin: seed 7 (position 0) is outside [0,6)"},
		{"cancelled", cancelled, coin{hops: 1}, []int32{1}, "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Sample(tc.ctx, g, tc.seeds, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
