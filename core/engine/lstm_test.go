package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/backend/backendtest/ref"
	"strata/core/backend/cpu"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

const lstmHidden = 3

// lstmModel records x·W1 -> lstm_aggregate over graph -> ·Wout.
func lstmModel(t *testing.T, graphName string) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	x := b.Input("x", inDim)
	g := b.Graph(graphName)
	h := b.MatMul(x, b.Param("W1", []int64{inDim, width}, "glorot"))
	a := b.LSTMAggregate(g, h,
		b.Param("Wih", []int64{width, 4 * lstmHidden}, "uniform"),
		b.Param("Whh", []int64{lstmHidden, 4 * lstmHidden}, "uniform"),
		b.Param("b", []int64{4 * lstmHidden}, "glorot"))
	b.Output(b.MatMul(a, b.Param("Wout", []int64{lstmHidden, classes}, "glorot")))
	gr, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

// lstmBlock is a bipartite block: 4 destinations (the first 4 of its 7
// sources), one without sources, one reading a source twice.
func lstmBlock() *graph.CSR {
	rows := [][]int32{{4, 1, 5, 4, 6}, {}, {0}, {6, 2, 3}}
	g := &graph.CSR{NumRows: len(rows), NumCols: 7, Indptr: []int64{0}, Idx32: []int32{}}
	for _, r := range rows {
		g.Idx32 = append(g.Idx32, r...)
		g.Indptr = append(g.Indptr, int64(len(g.Idx32)))
	}
	return g
}

type lstmCase struct {
	name  string
	graph string // the graph the model aggregates over
	block bool   // bind lstmBlock as a one-layer mini-batch
}

var lstmCases = []lstmCase{
	{name: "full/adj", graph: "adj"}, // node 5 has no neighbour
	{name: "full/adj_self", graph: "adj_self"},
	{name: "block", graph: "adj", block: true},
}

// csr returns the adjacency the case aggregates over.
func (c lstmCase) csr() *graph.CSR {
	switch {
	case c.block:
		return lstmBlock()
	case c.graph == "adj_self":
		return graph.AddSelfLoops(graph.Symmetrize(testGraph()))
	}
	return graph.Symmetrize(testGraph())
}

// harness binds the case's model with labels over every output row.
func (c lstmCase) harness(t *testing.T, dt tensor.DType) *harness {
	t.Helper()
	gr := lstmModel(t, c.graph)
	if !c.block {
		return newHarness(t, gr, dt)
	}
	be := cpu.New(cpu.Options{Threads: 2})
	blk := c.csr()
	a, err := be.UploadGraph(blk, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float64, blk.NumCols*inDim)
	r := newSplitMix(7)
	for i := range xs {
		xs[i] = r.normal()
	}
	env := Env{Backend: be, DType: dt, Tier: tensor.Host, Blocks: []map[string]*Graph{{"adj": {Adj: a, Host: blk}}}, NodeIDs: [][]int32{identityIDs(blk.NumCols)},
		Input: upload64(t, be, xs, []int{blk.NumCols, inDim}, dt)}
	prog, err := Compile(gr, env, 42)
	if err != nil {
		t.Fatal(err)
	}
	labels, idx := upload32(t, be, []int32{0, 2, 1, 2}), upload32(t, be, []int32{0, 1, 2, 3})
	return &harness{gr: gr, be: be, prog: prog, labels: labels, idx: idx}
}

// TestLSTMAggregateGradients checks the backward of lstm_aggregate (into
// x through W1, W_ih, W_hh, b) against central finite differences in
// float64, on the whole graph and on a bipartite block.
func TestLSTMAggregateGradients(t *testing.T) {
	for _, c := range lstmCases {
		t.Run(c.name, func(t *testing.T) {
			h := c.harness(t, tensor.Float64)
			h.loss(t, true)
			for _, p := range h.prog.Params() {
				analytic := download(t, h, p.Grad)
				if slices.Max(analytic) == 0 && slices.Min(analytic) == 0 {
					t.Errorf("param %s: zero gradient, the check is vacuous", p.Name)
					continue
				}
				h.checkFD(t, "param "+p.Name, p.Value, analytic)
			}
		})
	}
}

// TestLSTMAggregateMatchesDense compares the model's output with the dense
// reference in both precisions, and checks that a program bound for
// inference (no saved state) computes the same bits.
func TestLSTMAggregateMatchesDense(t *testing.T) {
	for _, c := range lstmCases {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				h := c.harness(t, dt)
				ctx := context.Background()
				if err := h.prog.Forward(ctx, Mode{}); err != nil {
					t.Fatal(err)
				}
				got := download(t, h, h.prog.Output())
				s, err := h.prog.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				// The dense reference in the program's order (x·W1, ·W_ih,
				// the recurrence, ·W_out) with its bounds.
				ar := checked(dt)
				in := floattol.Ins
				g := c.csr()
				hid := matmulV(ar, in(download(t, h, h.prog.env.Input)), in(s["W1"]), g.NumCols, inDim, width)
				xw := matmulV(ar, hid, in(s["Wih"]), g.NumCols, width, 4*lstmHidden)
				agg := ref.NewLSTM(ar, g, lstmHidden, xw, s["Whh"], s["b"]).Out
				want := matmulV(ar, agg, in(s["Wout"]), g.NumRows, lstmHidden, classes)
				if i, r := floattol.Exceeds(got, floattol.Values(want), floattol.Errors(want)); i >= 0 {
					t.Fatalf("output[%d] = %g, dense reference %g: off by %.3g times the bound %.3g", i, got[i], want[i].V, r, want[i].E)
				}
				env := h.prog.env
				env.Inference = true
				inf, err := Bind(lstmModel(t, c.graph), env, h.prog.ParamSet())
				if err != nil {
					t.Fatal(err)
				}
				defer inf.Release()
				if err := inf.Forward(ctx, Mode{}); err != nil {
					t.Fatal(err)
				}
				for i, v := range download(t, h, inf.Output()) {
					if math.Float64bits(v) != math.Float64bits(got[i]) {
						t.Fatalf("inference output[%d] = %v, training binding %v", i, v, got[i])
					}
				}
			})
		}
	}
}

// TestLSTMAggregateBackwardTwice: the backward consumes the saved gates,
// so a second Backward without a Forward is an error.
func TestLSTMAggregateBackwardTwice(t *testing.T) {
	h := lstmCases[0].harness(t, tensor.Float64)
	h.loss(t, true)
	err := h.prog.Backward(context.Background())
	if err == nil || !strings.Contains(err.Error(), "second Backward") {
		t.Fatalf("second Backward: error %v, want one about a second Backward", err)
	}
	h.loss(t, true) // a new Forward makes Backward valid again
}
