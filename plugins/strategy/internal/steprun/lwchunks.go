package steprun

import (
	"context"
	"fmt"
	"sort"

	"strata/core/engine"
	"strata/core/graph"
	"strata/core/tensor"
)

// Layer-wise inference on the host, where no device capacity chunks
// r.Eval, runs each layer in node ranges: over all nodes in one piece, a
// layer's program holds several node × width tensors at once (its
// products, aggregation and output) beside the previous and the next
// layer's rows of every node, which it must hold anyway. A range that
// reads every node's rows in place (lwinplace.go) holds values of its
// destinations and edges, and those the layer computes over every source
// (a product x·W before the aggregation), which every range repeats:
// hostChunks takes the fewest ranges whose destination-sized working set
// fits rangeBudget, a share of the layer's rows, and no less than the
// values over every source (so that repeating them at most doubles the
// layer's work). A range over its sampled block (the features held by
// their entries or on disk, a graph not held whole) holds its gathered
// input rows and computes over them, so smaller ranges cost more compute
// over shared neighbours: such a layer takes the fewest ranges whose
// whole working set fits layerwiseBudget, a share of the memory budget.
// The results do not depend on the ranges (each destination row is
// computed from the same rows in the same order).

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
// estimated working set fits the layer's budget (hostCost); single
// nodes when none does.
func (r *Runner) hostChunks(ctx context.Context, l int) ([][]int32, error) {
	e := r.Env
	n := e.DS.NumNodes
	cost, budget, err := r.hostCost(ctx, l)
	if err != nil {
		return nil, err
	}
	for k := 1; ; k = min(n, 2*k) {
		bounds := balancedRanges(e.Adjs.Adj, n, k)
		fits := true
		for i := 0; i+1 < len(bounds) && fits; i++ {
			b, err := cost(bounds[i], bounds[i+1])
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

// hostCost returns what a range [lo, hi) of layer l costs on the host
// and the budget it must fit. A range that reads every node's rows in
// place (inPlace) counts what grows with its destinations and edges
// beyond what every range holds (fixedBytes), within rangeBudget or
// that fixed part, whichever is larger; one over its sampled block
// counts its whole working set (chunkBytes) within layerwiseBudget. The
// test budget replaces either.
func (r *Runner) hostCost(ctx context.Context, l int) (func(lo, hi int) (int64, error), int64, error) {
	e := r.Env
	sizer, err := engine.NewSizer(r.lw.layers[l], e.DT)
	if err != nil {
		return nil, 0, err
	}
	budget := r.lw.budget
	if !r.inPlace(l) {
		if budget <= 0 {
			budget = layerwiseBudget(graph.MaxMemory(ctx))
		}
		seen := make([]uint64, (e.DS.NumNodes+63)/64)
		return func(lo, hi int) (int64, error) { return r.chunkBytes(sizer, l, lo, hi, seen) }, budget, nil
	}
	if l == 0 {
		sizer.Input = e.Half // 16-bit input rows, widened by the program
	}
	fixed, err := r.fixedBytes(sizer, l)
	if err != nil {
		return nil, 0, err
	}
	if budget <= 0 {
		budget = max(fixed, rangeBudget(e.DS.NumNodes, r.lw.widths[l], r.lw.widths[l+1], e.DT.Size(), graph.MaxMemory(ctx)))
	}
	return func(lo, hi int) (int64, error) {
		b, err := r.rangeBytes(sizer, l, lo, hi)
		return b - fixed, err
	}, budget, nil
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

// rangeShare is the share of a layer's rows of every node (its input's
// and its output's, which the host holds anyway) that one in-place
// range may add: 1/rangeShare.
const rangeShare = 8

// rangeBudget is the most bytes one in-place range of a layer may add
// on the host: a rangeShare of its rows (n nodes, in + out values of
// size bytes each), at least minLayerwiseBudget, at most
// layerwiseBudget(maxMemory).
func rangeBudget(n, in, out, size int, maxMemory int64) int64 {
	rows := int64(n) * int64(in+out) * int64(size)
	return min(layerwiseBudget(maxMemory), max(minLayerwiseBudget, rows/rangeShare))
}

// rangeBytes estimates the host memory of layer l's inference over the
// destinations [lo, hi) in place (shapeBytes of the rows [lo, hi) of the
// whole graph over every node's rows).
func (r *Runner) rangeBytes(s *engine.Sizer, l, lo, hi int) (int64, error) {
	shape := engine.BlockShape{Dst: hi - lo, Src: r.Env.DS.NumNodes, Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
	for name := range r.Layers[l] {
		g := r.wholeGraph(name)
		shape.Edges[name] = g.Indptr[min(hi, g.NumRows)] - g.Indptr[min(lo, g.NumRows)]
		shape.Degrees[name] = rangeDegrees(g, lo, hi, 0)
	}
	return r.shapeBytes(s, l, shape)
}

// fixedBytes is what every in-place range of layer l holds whatever its
// destinations: shapeBytes of one destination without edges.
func (r *Runner) fixedBytes(s *engine.Sizer, l int) (int64, error) {
	shape := engine.BlockShape{Dst: 1, Src: r.Env.DS.NumNodes, Edges: map[string]int64{}, Degrees: map[string]engine.Degrees{}}
	for name := range r.Layers[l] {
		var d engine.Degrees
		d.AddRow(0)
		shape.Edges[name], shape.Degrees[name] = 0, d
	}
	return r.shapeBytes(s, l, shape)
}

// shapeBytes estimates the host memory of layer l's inference over a
// block of every node's rows in place: the program's footprint, the
// input rows when they are copied (not float32 rows used in place), and
// the graphs as bound (the uploaded column ids and values, the GCN and
// mean weights of every entry, on the host and bound, and every node's
// scale).
func (r *Runner) shapeBytes(s *engine.Sizer, l int, shape engine.BlockShape) (int64, error) {
	e := r.Env
	fp, err := s.Blocks([]engine.BlockShape{shape}, shape.Src, engine.Usage{Inference: true})
	if err != nil {
		return 0, err
	}
	var in, nnz int64
	if e.DT != tensor.Float32 && (l > 0 || e.Half == 0) { // 16-bit features are used in place in any dtype
		in = int64(shape.Src) * int64(r.lw.widths[l]) * int64(e.DT.Size())
	}
	for _, n := range shape.Edges {
		nnz += n
	}
	perEdge := int64(4+4+4) + 2*int64(e.DT.Size())
	return fp.Bytes() + in + perEdge*nnz + 8*int64(shape.Src) + 16*int64(shape.Dst), nil
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
