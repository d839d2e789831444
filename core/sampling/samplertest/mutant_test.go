package samplertest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/internal/mutanttest"
	"strata/core/sampling"
)

// full is a sampler: every in-neighbour for two hops, or, with random,
// one in-neighbour of each destination picked by rng. Its flags break it.
type full struct {
	random     bool
	lieRandom  bool // declares Random but ignores rng
	reversed   bool // blocks seeds first
	extraEdge  bool // adds an edge that is not in the graph
	noChecks   bool // no input checks
	procs      bool // drops an edge under GOMAXPROCS 1
	lieLayers  bool // Layers says 3
	duplicates bool // repeats every edge without declaring Replacement
}

func (f *full) Layers() int {
	if f.lieLayers {
		return 3
	}
	return 2
}

func (f *full) Capabilities() sampling.Capabilities {
	return sampling.Capabilities{Random: f.random || f.lieRandom, Subset: true}
}

func (f *full) Sample(ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) ([]sampling.Block, error) {
	if !f.noChecks {
		if g == nil || g.NumRows != g.NumCols {
			return nil, fmt.Errorf("bad graph")
		}
		seen := map[int32]bool{}
		for _, s := range seeds {
			if s < 0 || int(s) >= g.NumRows || seen[s] {
				return nil, fmt.Errorf("bad seed %d", s)
			}
			seen[s] = true
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	blocks := make([]sampling.Block, 2)
	dst := slices.Clone(seeds)
	for l := 1; l >= 0; l-- {
		src := slices.Clone(dst)
		local := map[int32]int32{}
		for i, v := range src {
			local[v] = int32(i)
		}
		add := func(v int32) int32 {
			c, ok := local[v]
			if !ok {
				c = int32(len(src))
				local[v] = c
				src = append(src, v)
			}
			return c
		}
		adj := &graph.CSR{NumRows: len(dst), Indptr: make([]int64, len(dst)+1), Idx32: []int32{}}
		for i, d := range dst {
			lo, hi := g.Indptr[d], g.Indptr[d+1]
			if f.random && hi > lo {
				x := (rng ^ uint64(d)*0x9e3779b97f4a7c15 ^ uint64(l)) * 0xbf58476d1ce4e5b9
				x ^= x >> 29
				lo += int64(x % uint64(hi-lo))
				hi = lo + 1
			}
			for e := lo; e < hi; e++ {
				c := add(int32(g.Col(e)))
				adj.Idx32 = append(adj.Idx32, c)
				if f.duplicates {
					adj.Idx32 = append(adj.Idx32, c)
				}
			}
			if f.extraEdge && i == 0 {
				adj.Idx32 = append(adj.Idx32, add(int32((int(d)+1)%g.NumRows)), add(int32((int(d)+2)%g.NumRows)))
			}
			if f.procs && runtime.GOMAXPROCS(0) == 1 && i == 0 && len(adj.Idx32) > 0 {
				adj.Idx32 = adj.Idx32[:len(adj.Idx32)-1]
			}
			adj.Indptr[i+1] = int64(len(adj.Idx32))
		}
		adj.NumCols = len(src)
		blocks[l] = sampling.Block{Dst: dst, Src: src, Adj: adj}
		dst = src
	}
	if f.reversed {
		slices.Reverse(blocks)
	}
	return blocks, nil
}

var mutants = map[string]func() sampling.Sampler{
	"lie-random": func() sampling.Sampler { return &full{lieRandom: true} },
	"reversed":   func() sampling.Sampler { return &full{reversed: true} },
	"extra-edge": func() sampling.Sampler { return &full{extraEdge: true} },
	"no-checks":  func() sampling.Sampler { return &full{noChecks: true} },
	"procs":      func() sampling.Sampler { return &full{procs: true, random: true} },
	"lie-layers": func() sampling.Sampler { return &full{lieLayers: true} },
	"duplicates": func() sampling.Sampler { return &full{duplicates: true} },
}

// TestCorrect checks that the suite passes correct samplers.
func TestCorrect(t *testing.T) {
	t.Run("full", func(t *testing.T) { Test(t, func() sampling.Sampler { return &full{} }) })
	t.Run("random", func(t *testing.T) { Test(t, func() sampling.Sampler { return &full{random: true} }) })
}

func TestMutantHelper(t *testing.T) {
	name := mutanttest.Name()
	if name == "" {
		t.Skip("run by TestMutants")
	}
	Test(t, mutants[name])
}

// TestMutants checks that the suite fails each broken sampler where it
// should.
func TestMutants(t *testing.T) {
	mutanttest.Check(t, "TestMutantHelper", []mutanttest.Mutant{
		{Name: "lie-random", Fail: []string{"Rng"}},
		{Name: "reversed", Fail: []string{"Blocks/path/some"}},
		{Name: "extra-edge", Fail: []string{"Blocks/star/one", "Blocks/edgeless/one"}},
		{Name: "no-checks", Fail: []string{"Errors/seed=n", "Errors/duplicate_seed", "Errors/nil_graph", "Errors/non-square", "Errors/cancelled_ctx"}},
		{Name: "procs", Fail: []string{"Deterministic"}},
		{Name: "lie-layers", Fail: []string{"Blocks/path/one"}},
		{Name: "duplicates", Fail: []string{"Blocks/random/some"}},
	})
}
