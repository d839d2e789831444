package steprun

import (
	"context"
	"runtime"

	"strata/core/backend"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/sampling"
	"strata/core/tensor"
	"strata/core/train"
)

// Layer-wise inference on the host reads a layer's input rows of every
// node in place: a range of destinations [lo, hi) binds the rows [lo, hi)
// of the whole graph, their columns the global ids, every node's rows as
// its sources (the previous layer's rows or the features, wrapped, not
// gathered) and its destinations at sources lo onward
// (engine.Env.DstFirst). A range then runs no sampler, gathers no rows
// and holds destination-sized values only, besides what the layer
// computes over every source (a product x·W before its aggregation,
// repeated per range). Each destination sums its in-neighbours in the
// graph's order, whatever the ranges.

// inPlace reports whether layer l's ranges read every node's rows in
// place: on the host, on a backend that views rows in place, with the
// layer's graphs held whole, and at the first layer with the features in
// memory as rows (not from disk, not bound by their entries).
func (r *Runner) inPlace(l int) bool {
	e := r.Env
	if r.lw.sampled || e.Tier != tensor.Host || l == 0 && (e.Entries != nil || e.Disk != nil) {
		return false
	}
	if _, ok := e.Be.(backend.RowViewer); !ok {
		return false
	}
	for name := range r.Layers[l] {
		if r.wholeGraph(name) == nil {
			return false
		}
	}
	return true
}

// wholeGraph returns the graph whose rows a block's graph name holds:
// the adjacency, or with self loops for adj_self (nil when the run did
// not build it).
func (r *Runner) wholeGraph(name string) *graph.CSR {
	if name == "adj_self" {
		return r.Env.Adjs.AdjSelf
	}
	return r.Env.Adjs.Adj
}

// rowsOf returns the rows [lo, hi) of g as a CSR of cols columns, its
// column ids and values shared with g (rows past g's are empty).
func rowsOf(g *graph.CSR, lo, hi, cols int) *graph.CSR {
	at := func(v int) int64 { return g.Indptr[min(v, g.NumRows)] }
	first, last := at(lo), at(hi)
	indptr := make([]int64, hi-lo+1)
	for v := lo; v <= hi; v++ {
		indptr[v-lo] = at(v) - first
	}
	out := &graph.CSR{NumRows: hi - lo, NumCols: cols, Indptr: indptr}
	if g.Idx64 != nil {
		out.Idx64 = g.Idx64[first:last]
	} else {
		out.Idx32 = g.Idx32[first:last]
	}
	if g.Values != nil {
		out.Values = g.Values[first:last]
	}
	return out
}

// rangeChunk runs layer l over the destinations [lo, hi) reading every
// node's rows in place (all is every node's id in order; rangeRun),
// then collects the garbage it left: its buffers and graphs are Go
// memory, which the collector's growth target would let pile up to 256
// MiB beside the next range's (on R-MAT 2^20, about 200 MiB of peak RSS).
func (r *Runner) rangeChunk(ctx context.Context, l int, all []int32, prev, next *layerRows, lo, hi int, fn func([]int32, *tensor.Tensor) error) error {
	err := r.rangeRun(ctx, l, all, prev, next, lo, hi, fn)
	runtime.GC()
	return err
}

// rangeRun runs layer l over the destinations [lo, hi) in place: its
// input rows from prev (or the features), its output rows into next, or
// at the last layer (next nil) to fn.
func (r *Runner) rangeRun(ctx context.Context, l int, all []int32, prev, next *layerRows, lo, hi int, fn func([]int32, *tensor.Tensor) error) error {
	e := r.Env
	be := backend.ForPurpose(e.Be, purposeInference)
	var input *tensor.Tensor
	var err error
	if prev != nil {
		input, err = prev.upload(be, all, e.DT, e.Tier)
	} else {
		input, err = r.firstInput(be, all)
	}
	if err != nil {
		return err
	}
	bb := &Bound{Tensors: []*tensor.Tensor{input}}
	defer bb.Release(e)
	nodes := Iota32From(lo, hi)
	b := sampling.Block{Dst: nodes, Src: all}
	env := engine.Env{Backend: e.Be, DType: e.DT, Tier: e.Tier, NodeIDs: [][]int32{all}, Input: input, Inference: true, DstFirst: lo}
	n := len(all)
	graphs, err := r.uploadGraphs(bb, l, b, func(name string) (*graph.CSR, []float32) {
		adj := rowsOf(r.wholeGraph(name), lo, hi, n)
		return adj, adj.Values
	}, train.GraphReducers(r.lw.layers[l]))
	if err != nil {
		return err
	}
	env.Blocks = []map[string]*engine.Graph{graphs}
	if bb.Prog, err = engine.Bind(r.lw.layers[l], env, r.PS); err != nil {
		return err
	}
	if err := bb.Prog.Forward(ctx, engine.Mode{}); err != nil {
		return err
	}
	if next == nil {
		return fn(nodes, bb.Prog.Output())
	}
	return next.put(be, bb.Prog.Output(), lo, hi-lo)
}
