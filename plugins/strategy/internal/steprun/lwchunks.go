package steprun

import (
	"context"
	"fmt"
	"sort"

	"strata/core/engine"
	"strata/core/graph"
)

// Layer-wise inference on the host, where no device capacity chunks
// r.Eval, runs each layer in node ranges when one piece would not fit
// the memory budget: over all nodes in one piece, a layer's program holds
// several node × width tensors at once (its products, aggregation and
// output) beside the previous and the next layer's rows of every node,
// which it must hold anyway. A range of destinations reads their
// in-neighbours' rows (gathered) and computes the root terms over them,
// so smaller ranges cost more compute over shared neighbours (on the
// ogbn-products stand-in, ranges of half a layer's rows made the
// evaluation 4× slower): hostChunks takes the fewest ranges whose working
// set fits layerwiseBudget, a share of the memory budget. The results do
// not depend on the ranges (each destination row is computed from the
// same rows in the same order).

// minLayerwiseBudget is the working set below which layer-wise
// inference never splits a layer (a small graph runs in one piece).
const minLayerwiseBudget = 64 << 20

// layerwiseShare is the share of the memory budget (--max-memory) that
// one range of layer-wise inference may hold on the host.
const layerwiseShare = 4

// layerwiseBudget is the most bytes one range of a layer's inference may
// hold on the host: a quarter of the memory budget maxMemory, at least
// minLayerwiseBudget.
func layerwiseBudget(maxMemory int64) int64 {
	return max(minLayerwiseBudget, maxMemory/layerwiseShare)
}

// hostChunks returns the node ranges layer l runs in on the host: the
// fewest edge-balanced contiguous ranges (doubling their count) whose
// estimated working set (chunkBytes) fits layerwiseBudget of ctx's memory
// budget; single nodes when none does.
func (r *Runner) hostChunks(ctx context.Context, l int) ([][]int32, error) {
	e := r.Env
	n := e.DS.NumNodes
	lg := r.lw.layers[l]
	budget := r.lw.budget
	if budget <= 0 {
		budget = layerwiseBudget(graph.MaxMemory(ctx))
	}
	sizer, err := engine.NewSizer(lg, e.DT)
	if err != nil {
		return nil, err
	}
	seen := make([]uint64, (n+63)/64)
	for k := 1; ; k = min(n, 2*k) {
		bounds := balancedRanges(e.Adjs.Adj, n, k)
		fits := true
		for i := 0; i+1 < len(bounds) && fits; i++ {
			b, err := r.chunkBytes(sizer, l, bounds[i], bounds[i+1], seen)
			if err != nil {
				return nil, err
			}
			fits = b <= budget
		}
		if fits || k >= n {
			out := make([][]int32, 0, len(bounds)-1)
			for i := 0; i+1 < len(bounds); i++ {
				out = append(out, Iota32From(bounds[i], bounds[i+1]))
			}
			if e.Log != nil && len(out) > 1 {
				fmt.Fprintf(e.Log, "layer-wise inference: layer %d in %d node ranges (each within %s)\n", l, len(out), MiB(budget))
			}
			return out, nil
		}
	}
}

// balancedRanges splits the nodes [0, n) into at most k contiguous
// non-empty ranges of about equal rows plus in-edges of g, returned as
// their k'+1 bounds (0 first, n last).
func balancedRanges(g *graph.CSR, n, k int) []int {
	weight := func(r int) int64 { // rows plus edges before row r
		return int64(r) + g.Indptr[min(r, g.NumRows)]
	}
	total := weight(n)
	bounds := []int{0}
	for i := 1; i < k; i++ {
		target := total * int64(i) / int64(k)
		b := sort.Search(n, func(r int) bool { return weight(r) >= target })
		if b > bounds[len(bounds)-1] && b < n {
			bounds = append(bounds, b)
		}
	}
	return append(bounds, n)
}

// chunkBytes estimates the host memory of layer l's inference over the
// destinations [lo, hi): the program's footprint (engine.Sizer) for the
// block of their full neighbourhood, its gathered input rows, and the
// block itself (column ids, edge weights, source ids). seen is scratch
// of one bit per node, left zero.
func (r *Runner) chunkBytes(s *engine.Sizer, l, lo, hi int, seen []uint64) (int64, error) {
	e := r.Env
	g := e.Adjs.Adj
	src := hi - lo
	mark := func(v int64) {
		if w, b := v>>6, uint64(1)<<(v&63); seen[w]&b == 0 {
			seen[w] |= b
			src++
		}
	}
	for v := lo; v < hi; v++ {
		seen[v>>6] |= 1 << (v & 63)
	}
	var nnz int64
	for v := lo; v < min(hi, g.NumRows); v++ {
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			mark(g.Col(p))
		}
		nnz += g.Indptr[v+1] - g.Indptr[v]
	}
	for v := lo; v < min(hi, g.NumRows); v++ { // leave seen zero
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			c := g.Col(p)
			seen[c>>6] &^= 1 << (c & 63)
		}
	}
	for v := lo; v < hi; v++ {
		seen[v>>6] &^= 1 << (v & 63)
	}
	shape := engine.BlockShape{Dst: hi - lo, Src: src, Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
	for name := range r.Layers[l] {
		loop := int64(0)
		if name == "adj_self" {
			loop = 1 // withLocalSelfLoops
		}
		shape.Edges[name] = nnz + loop*int64(hi-lo)
		shape.Degrees[name] = rangeDegrees(g, lo, hi, loop)
	}
	fp, err := s.Blocks([]engine.BlockShape{shape}, src, engine.Usage{Inference: true})
	if err != nil {
		return 0, err
	}
	in := int64(src) * int64(r.lw.widths[l]) * int64(e.DT.Size())
	block := 12*nnz + 4*int64(src) + 8*int64(hi-lo+1)
	return fp.Bytes() + in + block, nil
}

// rangeDegrees returns the degrees of the rows [lo, hi) of g, each with
// loop more entries (its self loop).
func rangeDegrees(g *graph.CSR, lo, hi int, loop int64) engine.Degrees {
	var d engine.Degrees
	for v := lo; v < hi; v++ {
		n := loop
		if v < g.NumRows {
			n += g.Indptr[v+1] - g.Indptr[v]
		}
		d.AddRow(n)
	}
	return d
}
