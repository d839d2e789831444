// Package samplertest is a conformance suite for sampling.Sampler. Test
// runs a sampler made by a constructor on small graphs and checks it
// against the contract of core/sampling and against what the sampler
// declares (sampling.CapabilitiesOf, sampling.NumLayers):
//
//   - the block chain: blocks[last].Dst == seeds, blocks[l].Dst ==
//     blocks[l+1].Src, the first len(Dst) sources of a block are its Dst in
//     order, Src holds distinct node ids of the graph, Adj is a valid
//     len(Dst) x len(Src) CSR of local ids, Values are nil or one
//     positive weight per edge with every non-empty row summing to 1;
//   - len(blocks) == NumLayers(s) when that is > 0, and is the same for
//     every call;
//   - Subset: every edge of a block is an edge of the graph; without
//     Replacement a row lists a source at most as often as the graph
//     does (once, for a sampler that is not a Subset);
//   - Random: the same rng gives identical blocks and some rng changes
//     them on a graph with choice; not Random: rng does not matter;
//   - the blocks do not depend on GOMAXPROCS (1 and 4), nor on whether
//     the graph has 32- or 64-bit column ids, nor on the instance;
//   - bad seeds (out of range, duplicate), a non-square or nil graph and
//     a cancelled ctx are errors, not panics; the input is not modified.
//
// Beyond the interface the suite checks a convention every strata sampler
// follows: every source after the destinations has an edge in the block.
package samplertest

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/sampling"
)

// Test runs the suite on samplers made by newSampler, which must return a
// fresh, configured (validated and provisioned) instance on every call.
func Test(t *testing.T, newSampler func() sampling.Sampler) {
	t.Run("Blocks", func(t *testing.T) { testBlocks(t, newSampler) })
	t.Run("Rng", func(t *testing.T) { testRng(t, newSampler) })
	t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, newSampler) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, newSampler) })
}

// sample runs Sample and turns a panic into an error that says so.
func sample(s sampling.Sampler, ctx context.Context, g *graph.CSR, seeds []int32, rng uint64) (blocks []sampling.Block, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			blocks, err, panicked = nil, fmt.Errorf("panic: %v", r), true
		}
	}()
	blocks, err = s.Sample(ctx, g, seeds, rng)
	return blocks, err, false
}

// spread returns up to m distinct node ids spread over [0, n), in a
// scrambled order.
func spread(m, n int, salt uint64) []int32 {
	var out []int32
	seen := map[int32]bool{}
	for i := range m {
		v := int32((uint64(i)*2654435761 + salt*40503 + 12345) % uint64(n))
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// choiceGraph is an R-MAT graph whose nodes mostly have many neighbours,
// with seeds among them: a random sampler has choices to make there.
func choiceGraph() (*graph.CSR, []int32) {
	g := graphtest.RMAT(9, 16, 6)
	return g, spread(150, g.NumRows, 1)
}

// Check reports the first violation of the block contract by blocks,
// sampled from g for seeds by a sampler with the given capabilities and
// layer count (0: any).
func Check(g *graph.CSR, seeds []int32, blocks []sampling.Block, caps sampling.Capabilities, layers int) error {
	if len(blocks) == 0 {
		return fmt.Errorf("no blocks")
	}
	if layers > 0 && len(blocks) != layers {
		return fmt.Errorf("%d blocks, but NumLayers says %d", len(blocks), layers)
	}
	if last := blocks[len(blocks)-1]; !slices.Equal(last.Dst, seeds) {
		return fmt.Errorf("the last block's Dst %v is not the seeds %v", head(last.Dst), head(seeds))
	}
	n := g.NumRows
	for l, b := range blocks {
		if b.Adj == nil {
			return fmt.Errorf("block %d: nil Adj", l)
		}
		if len(b.Src) < len(b.Dst) || !slices.Equal(b.Src[:len(b.Dst)], b.Dst) {
			return fmt.Errorf("block %d: Src does not start with Dst in order", l)
		}
		if l+1 < len(blocks) && !slices.Equal(b.Dst, blocks[l+1].Src) {
			return fmt.Errorf("block %d: Dst is not block %d's Src", l, l+1)
		}
		local := make(map[int32]int, len(b.Src))
		for c, v := range b.Src {
			if v < 0 || int(v) >= n {
				return fmt.Errorf("block %d: source %d is node %d, outside [0,%d)", l, c, v, n)
			}
			if _, dup := local[v]; dup {
				return fmt.Errorf("block %d: node %d is in Src twice", l, v)
			}
			local[v] = c
		}
		a := b.Adj
		if a.NumRows != len(b.Dst) || a.NumCols != len(b.Src) {
			return fmt.Errorf("block %d: Adj is %dx%d for %d destinations and %d sources", l, a.NumRows, a.NumCols, len(b.Dst), len(b.Src))
		}
		if err := a.Validate(); err != nil {
			return fmt.Errorf("block %d: %v", l, err)
		}
		if b.NumEdges() != a.NNZ() {
			return fmt.Errorf("block %d: NumEdges %d, Adj has %d", l, b.NumEdges(), a.NNZ())
		}
		used := make([]bool, len(b.Src))
		for i, d := range b.Dst {
			inG := map[int32]int{}
			for e := g.Indptr[d]; e < g.Indptr[d+1]; e++ {
				inG[int32(g.Col(e))]++
			}
			got := map[int32]int{}
			var wsum float64
			for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
				c := a.Col(e)
				used[c] = true
				v := b.Src[c]
				got[v]++
				if a.Values != nil {
					w := float64(a.Values[e])
					if !(w > 0) || math.IsInf(w, 0) {
						return fmt.Errorf("block %d: edge %d <- %d has weight %v, want positive and finite", l, d, v, w)
					}
					wsum += w
				}
			}
			for v, c := range got {
				if caps.Subset && inG[v] == 0 {
					return fmt.Errorf("block %d: edge %d <- %d is not in the graph (the sampler declares Subset)", l, d, v)
				}
				limit := 1
				if caps.Subset {
					limit = max(1, inG[v])
				}
				if !caps.Replacement && c > limit {
					return fmt.Errorf("block %d: destination %d lists source %d %d times (%d in the graph) without Replacement", l, d, v, c, inG[v])
				}
			}
			if a.Values != nil && a.Indptr[i+1] > a.Indptr[i] && math.Abs(wsum-1) > 1e-5 {
				return fmt.Errorf("block %d: the weights of destination %d sum to %v, want 1", l, d, wsum)
			}
		}
		for c := len(b.Dst); c < len(b.Src); c++ {
			if !used[c] {
				return fmt.Errorf("block %d: source %d (node %d) is no destination and has no edge", l, c, b.Src[c])
			}
		}
	}
	return nil
}

func head(v []int32) []int32 { return v[:min(len(v), 10)] }

// Equal reports the first difference between two block lists.
func Equal(a, b []sampling.Block) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d vs %d blocks", len(a), len(b))
	}
	for l := range a {
		x, y := a[l], b[l]
		switch {
		case !slices.Equal(x.Dst, y.Dst):
			return fmt.Errorf("block %d: Dst differs", l)
		case !slices.Equal(x.Src, y.Src):
			return fmt.Errorf("block %d: Src differs", l)
		case x.Adj.NumRows != y.Adj.NumRows || x.Adj.NumCols != y.Adj.NumCols:
			return fmt.Errorf("block %d: Adj shape differs", l)
		case !slices.Equal(x.Adj.Indptr, y.Adj.Indptr):
			return fmt.Errorf("block %d: Adj.Indptr differs", l)
		case !slices.Equal(x.Adj.Values, y.Adj.Values):
			return fmt.Errorf("block %d: Adj.Values differ", l)
		}
		for e := range x.Adj.NNZ() {
			if x.Adj.Col(e) != y.Adj.Col(e) {
				return fmt.Errorf("block %d: Adj column of entry %d differs", l, e)
			}
		}
	}
	return nil
}

func testBlocks(t *testing.T, newS func() sampling.Sampler) {
	ctx := context.Background()
	s := newS()
	caps, layers := sampling.CapabilitiesOf(s), sampling.NumLayers(s)
	if layers < 0 {
		t.Fatalf("NumLayers = %d", layers)
	}
	cg, _ := choiceGraph()
	graphs := append(graphtest.Square(), graphtest.Named{Name: "choice", G: cg})
	for _, gr := range graphs {
		n := gr.G.NumRows
		for _, set := range []struct {
			name  string
			seeds []int32
		}{
			{"one", []int32{int32(n / 2)}},
			{"some", spread(min(n, 12), n, 2)},
			{"all", spread(n, n, 0)},
			{"none", []int32{}},
		} {
			name, seeds := set.name, set.seeds
			t.Run(gr.Name+"/"+name, func(t *testing.T) {
				var count int
				for rng := range uint64(3) {
					blocks, err, _ := sample(s, ctx, gr.G, seeds, rng*0x9e3779b97f4a7c15+1)
					if err != nil {
						t.Fatalf("rng %d: %v", rng, err)
					}
					if err := Check(gr.G, seeds, blocks, caps, layers); err != nil {
						t.Fatalf("rng %d: %v", rng, err)
					}
					if rng > 0 && len(blocks) != count {
						t.Fatalf("rng %d: %d blocks, %d before", rng, len(blocks), count)
					}
					count = len(blocks)
				}
			})
		}
	}
}

func testRng(t *testing.T, newS func() sampling.Sampler) {
	ctx := context.Background()
	s := newS()
	caps := sampling.CapabilitiesOf(s)
	g, seeds := choiceGraph()
	ref, err, _ := sample(s, ctx, g, seeds, 42)
	if err != nil {
		t.Fatal(err)
	}
	again, err, _ := sample(s, ctx, g, seeds, 42)
	if err != nil {
		t.Fatal(err)
	}
	if err := Equal(again, ref); err != nil {
		t.Fatalf("the same rng gives other blocks: %v", err)
	}
	changed := false
	for _, rng := range []uint64{0, 1, 43, 1 << 40, math.MaxUint64} {
		other, err, _ := sample(s, ctx, g, seeds, rng)
		if err != nil {
			t.Fatal(err)
		}
		d := Equal(other, ref)
		if d != nil {
			changed = true
		}
		if !caps.Random && d != nil {
			t.Fatalf("the sampler does not declare Random, but rng %d changes its blocks: %v", rng, d)
		}
	}
	if caps.Random && !changed {
		t.Fatalf("the sampler declares Random, but no rng changes its blocks on a %d-node graph with %d edges", g.NumRows, g.NNZ())
	}
}

func testDeterministic(t *testing.T, newS func() sampling.Sampler) {
	ctx := context.Background()
	g, seeds := choiceGraph()
	orig, origSeeds := graphtest.Clone(g), slices.Clone(seeds)
	var ref []sampling.Block
	for _, procs := range []int{1, 4, 1, 4} {
		old := runtime.GOMAXPROCS(procs)
		got, err, _ := sample(newS(), ctx, g, seeds, 7)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = got
			continue
		}
		if err := Equal(got, ref); err != nil {
			t.Fatalf("GOMAXPROCS %d: %v", procs, err)
		}
	}
	if !graphtest.Equal(g, orig) || !slices.Equal(seeds, origSeeds) {
		t.Fatal("Sample modified the graph or the seeds")
	}
	wide, err, _ := sample(newS(), ctx, graphtest.Wide(g), seeds, 7)
	if err != nil {
		t.Fatalf("64-bit ids: %v", err)
	}
	if err := Equal(wide, ref); err != nil {
		t.Fatalf("64-bit column ids: %v", err)
	}
}

func testErrors(t *testing.T, newS func() sampling.Sampler) {
	g := graphtest.Random(40, 200, 9, false)
	n := int32(g.NumRows)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	tests := []struct {
		name  string
		ctx   context.Context
		g     *graph.CSR
		seeds []int32
	}{
		{"seed=n", bg, g, []int32{1, n}},
		{"seed=-1", bg, g, []int32{-1, 2}},
		{"duplicate seed", bg, g, []int32{3, 5, 3}},
		{"nil graph", bg, nil, []int32{1}},
		{"non-square", bg, graphtest.Bipartite(40, 60, 200, 1), []int32{1, 2}},
		{"cancelled ctx", cancelled, g, []int32{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks, err, panicked := sample(newS(), tt.ctx, tt.g, tt.seeds, 1)
			if panicked {
				t.Fatalf("want an error, got %v", err)
			}
			if err == nil {
				t.Fatalf("no error (%d blocks)", len(blocks))
			}
		})
	}
}

// Checksum returns a hex FNV-64a digest of blocks: every block's Dst, Src,
// row pointers, local column ids and edge values (their bits), in order.
// Tests pin a sampler's output with it, so that a refactoring that should
// not change the draw is held to the same blocks.
func Checksum(blocks []sampling.Block) string {
	h := fnv.New64a()
	w := func(v any) { _ = binary.Write(h, binary.LittleEndian, v) }
	for _, b := range blocks {
		w(int64(len(b.Dst)))
		w(b.Dst)
		w(int64(len(b.Src)))
		w(b.Src)
		w(b.Adj.Indptr)
		w(int64(b.Adj.NNZ()))
		for e := range b.Adj.NNZ() {
			w(b.Adj.Col(e))
		}
		w(int64(len(b.Adj.Values)))
		w(b.Adj.Values)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}
