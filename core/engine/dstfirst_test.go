package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// TestDstFirst: an inference program over one block whose sources are
// every node in order and whose destinations are the nodes [lo, hi)
// (Env.DstFirst = lo) gives the full-graph program's rows [lo, hi), with
// the narrows pushed and as written, for every block model and every
// model whose root term pushNarrows moves; a range from node 0 (the
// sampler's convention) too.
func TestDstFirst(t *testing.T) {
	models := maps.Clone(blockModels)
	maps.Copy(models, pushModels)
	for _, name := range slices.Sorted(maps.Keys(models)) {
		for _, rng := range [][2]int{{0, 9}, {13, 29}, {31, 40}} {
			for _, keep := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d-%d/as-written=%v", name, rng[0], rng[1], keep), func(t *testing.T) {
					dstFirstMatches(t, linkLayers(t, models[name], []int64{inDim, classes}), rng[0], rng[1], keep)
				})
			}
		}
	}
}

// dstFirstMatches is one case of TestDstFirst (float64: the sums are the
// same, in the same order, but for a GEMM's blocking of fewer rows).
func dstFirstMatches(t *testing.T, lg *ir.Graph, lo, hi int, keep bool) {
	t.Helper()
	f := newBlockFixture()
	full, err := Compile(lg, f.fullEnv(t, tensor.Float64), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Release()
	ctx := context.Background()
	if err := full.Forward(ctx, Mode{}); err != nil {
		t.Fatal(err)
	}
	want := download(t, &harness{prog: full}, full.Output())
	env := f.rangeEnv(t, lo, hi, tensor.Float64)
	env.keepAsWritten = keep
	p, err := Bind(lg, env, full.ParamSet())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if err := p.Forward(ctx, Mode{}); err != nil {
		t.Fatal(err)
	}
	got := download(t, &harness{prog: p}, p.Output())
	c := full.Output().Cols()
	if len(got) != (hi-lo)*c {
		t.Fatalf("%d outputs, want %d", len(got), (hi-lo)*c)
	}
	for i, v := range got {
		w := want[lo*c+i]
		if math.Abs(v-w) > 1e-12*max(1, math.Abs(w)) {
			t.Fatalf("output %d (node %d): %v, want %v", i, lo+i/c, v, w)
		}
	}
}

// rangeEnv binds the block of the destinations [lo, hi) whose sources
// are every node in order, for inference.
func (f *blockFixture) rangeEnv(t *testing.T, lo, hi int, dt tensor.DType) Env {
	t.Helper()
	all := make([]int32, f.adj.NumRows)
	for i := range all {
		all[i] = int32(i)
	}
	dst := all[lo:hi]
	return Env{
		Backend: f.be, DType: dt, Tier: tensor.Host, Inference: true, DstFirst: lo,
		Blocks: []map[string]*Graph{{
			"adj":      f.bind(t, relabel(t, f.adj, dst, all), relabel(t, f.mean, dst, all), dt),
			"adj_self": f.bind(t, relabel(t, f.adjSelf, dst, all), relabel(t, f.meanSelf, dst, all), dt),
		}},
		NodeIDs: [][]int32{all},
		Input:   f.rows(t, all, dt),
	}
}

// TestDstFirstRefused: destinations past the first sources are refused
// on a training program, on two blocks and on a backend that cannot view
// rows in place.
func TestDstFirstRefused(t *testing.T) {
	g := linkModel(t, "sage", []int64{inDim, classes})
	f := newBlockFixture()
	tests := []struct {
		name string
		edit func(*Env)
	}{
		{"training", func(e *Env) { e.Inference = false }},
		{"two blocks", func(e *Env) { e.Blocks = append(e.Blocks, e.Blocks[0]) }},
		{"no row views", func(e *Env) { e.Backend = noRowViews{e.Backend} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := f.rangeEnv(t, 13, 29, tensor.Float64)
			tc.edit(&env)
			p, err := Compile(g, env, 5)
			if err == nil {
				p.Release()
				t.Fatal("bound, want an error")
			}
			if !strings.Contains(err.Error(), "DstFirst") {
				t.Fatalf("error %q does not name Env.DstFirst", err)
			}
		})
	}
}

// noRowViews is a backend without RowView.
type noRowViews struct{ backend.Backend }
