package store_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/graph/synth"
	"strata/core/store"
)

// TestReorder checks Alg. 2 against the definition: edge (src u -> dst v)
// becomes (newID[u] -> newID[v]), feature row v becomes row newID[v], and
// the result is the same for any GOMAXPROCS.
func TestReorder(t *testing.T) {
	d, err := synth.RMAT(synth.RMATOptions{Scale: 11, EdgeFactor: 6, FeatDim: 3, NumClasses: 2, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	g := d.Graph
	g.Values = make([]float32, g.NNZ())
	for i := range g.Values {
		g.Values[i] = float32(i)
	}
	n := d.NumNodes
	rank := make([]int32, n)
	for i, v := range rand.New(rand.NewPCG(3, 4)).Perm(n) {
		rank[i] = int32(v)
	}
	run := func(procs int) (*graph.CSR, []float32, []int32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		h, f, id, err := store.Reorder(g, d.Features, d.FeatDim, rank)
		if err != nil {
			t.Fatal(err)
		}
		return h, f, id
	}
	h, f, newID := run(4)
	h1, f1, _ := run(1)
	if !slices.Equal(h.Indptr, h1.Indptr) || !slices.Equal(h.Idx32, h1.Idx32) || !slices.Equal(f, f1) {
		t.Fatal("result depends on GOMAXPROCS")
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	for v := 0; v < n; v++ {
		nv := newID[v]
		if rank[nv] != int32(v) {
			t.Fatalf("newID is not the inverse of rank at %d", v)
		}
		if !slices.Equal(f[int(nv)*3:int(nv)*3+3], d.Features[v*3:v*3+3]) {
			t.Fatalf("feature row %d did not move to %d", v, nv)
		}
		old := g.Indptr[v]
		for j := int64(0); j < g.Indptr[v+1]-old; j++ {
			e := h.Indptr[nv] + j
			if h.Idx32[e] != newID[g.Idx32[old+j]] || h.Values[e] != g.Values[old+j] {
				t.Fatalf("edge %d of node %d not relabelled", j, v)
			}
		}
	}
	if _, _, _, err := store.Reorder(g, nil, 0, rank[:10]); err == nil {
		t.Error("partial ranking accepted")
	}
}
