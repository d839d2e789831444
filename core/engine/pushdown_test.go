package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// pushModels are layers whose root terms pushNarrows moves: the
// narrow goes below a product and a bias (sage), below a product whose
// backward is the first to reach the layer input's gradient (the root
// last), below a ReLU and two
// products (deep root), stops at a value that the aggregation reads too
// (the dropout of sage with dropout, and the fused dropout of sage with
// the weight first), and lands on a scale (gin).
var pushModels = map[string]func(b *ir.Builder, in, out int64, last bool) int32{
	"sage": blockModels["sage"],
	"sage with dropout": func(b *ir.Builder, in, out int64, last bool) int32 {
		d := b.Dropout(b.Input("x", in), 0.5)
		root := b.Bias(b.MatMul(d, b.Param("wr", []int64{in, out}, "glorot")), b.Param("br", []int64{out}, "normal"))
		nbr := b.MatMul(b.Aggregate(b.Graph("adj"), d, "mean"), b.Param("wn", []int64{in, out}, "glorot"))
		return b.Binary(ir.OpAdd, root, nbr)
	},
	"sage with the weight first": func(b *ir.Builder, in, out int64, last bool) int32 {
		d := b.Dropout(b.Input("x", in), 0.5) // read by two products alone: multiplied in
		root := b.MatMul(d, b.Param("wr", []int64{in, out}, "glorot"))
		nbr := b.Aggregate(b.Graph("adj"), b.MatMul(d, b.Param("wn", []int64{in, out}, "glorot")), "mean")
		h := b.Binary(ir.OpAdd, root, nbr)
		if !last {
			h = b.Unary(ir.OpReLU, h, 0)
		}
		return h
	},
	"sage with the root last": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		nbr := b.MatMul(b.Aggregate(b.Graph("adj"), x, "mean"), b.Param("wn", []int64{in, out}, "glorot"))
		root := b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot")) // its backward runs first
		h := b.Binary(ir.OpAdd, nbr, root)
		if !last {
			h = b.Unary(ir.OpTanh, h, 0)
		}
		return h
	},
	"deep root": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		root := b.MatMul(b.Unary(ir.OpReLU, b.MatMul(x, b.Param("w1", []int64{in, out}, "glorot")), 0), b.Param("w2", []int64{out, out}, "glorot"))
		nbr := b.MatMul(b.Aggregate(b.Graph("adj"), x, "sum"), b.Param("wn", []int64{in, out}, "glorot"))
		return b.Binary(ir.OpAdd, root, nbr)
	},
	"gin": func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		h := b.Binary(ir.OpAdd, b.Scale(x, 1.5), b.Aggregate(b.Graph("adj"), x, "sum"))
		return b.MatMul(h, b.Param("w", []int64{in, out}, "glorot"))
	},
}

// TestPushedNarrowsMatch trains two steps of every model over blocks
// with the narrows pushed and as written, from the same parameters and
// seed, and checks the outputs and the parameter gradients agree: the
// pushed program computes the rows it keeps from the same operands, and
// its weight gradients leave out rows that were zero (float64 and
// float32, within the rounding of the sums' other order), and that it
// computes fewer rows. On a graph large enough for the input's dropout
// to be multiplied in (fuseInputDropouts), the root's product over the
// first rows multiplies its own.
func TestPushedNarrowsMatch(t *testing.T) {
	small := []int32{3, 17, 5, 22, 9, 31, 0, 12}
	var many []int32 // blocks of over 8,192 input rows: the dropout's products split (backend.GEMMTiles)
	for v := int32(0); v < 20000; v += 5 {
		many = append(many, v)
	}
	type fixture struct {
		name  string
		make  func() *blockFixture
		seeds []int32
	}
	fixtures := []fixture{{"small", newBlockFixture, small}, {"large", func() *blockFixture { return randomBlockFixture(5, 20000, 40000) }, many}}
	for name, layer := range pushModels {
		for _, fx := range fixtures {
			if fx.name == "large" && name != "sage with the weight first" {
				continue
			}
			for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
				t.Run(name+"/"+fx.name+"/"+dt.String(), func(t *testing.T) {
					pushedMatches(t, linkLayers(t, layer, []int64{inDim, width, classes}), fx.make(), fx.seeds, dt, fx.name == "large")
				})
			}
		}
	}
}

// pushedMatches is one case of TestPushedNarrowsMatch.
func pushedMatches(t *testing.T, g *ir.Graph, f *blockFixture, seeds []int32, dt tensor.DType, wantFused bool) {
	full, err := Compile(g, f.fullEnv(t, dt), 11)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Release()
	ps := full.ParamSet()
	run := func(keep bool) ([]float64, map[string][]float64, int) {
		env := f.blockEnv(t, seeds, dt)
		env.keepAsWritten = keep
		p, err := Bind(g, env, ps)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		fused := false
		for i := range p.g.Ops {
			fused = fused || p.plan.prefix[i] && p.aux[i].maskedBy > 0
		}
		if !keep && fused != wantFused {
			t.Fatalf("a product over the first rows multiplies the dropout in: %v, want %v", fused, wantFused)
		}
		labels := make([]int32, len(seeds))
		idx := make([]int32, len(seeds))
		for i, s := range seeds {
			labels[i], idx[i] = s%classes, int32(i)
		}
		// Two steps: the second finds last step's values in the buffers.
		lossGrads(t, p, f.be, labels, idx, false)
		lossGrads(t, p, f.be, labels, idx, false)
		grads, err := gradsOf(f.be, ps)
		if err != nil {
			t.Fatal(err)
		}
		return download(t, &harness{prog: p}, p.Output()), grads, nodeRows(p)
	}
	wantOut, wantGrads, wantRows := run(true)
	gotOut, gotGrads, gotRows := run(false)
	if gotRows >= wantRows {
		t.Errorf("the pushed program computes %d node rows, as written %d: want fewer", gotRows, wantRows)
	}
	tol := func(v float64) float64 { return pushTol(g, f, dt, v) }
	for i := range wantOut {
		if d := math.Abs(gotOut[i] - wantOut[i]); d > tol(wantOut[i]) {
			t.Fatalf("output %d: pushed %g, as written %g", i, gotOut[i], wantOut[i])
		}
	}
	for pn, w := range wantGrads {
		for i := range w {
			if d := math.Abs(gotGrads[pn][i] - w[i]); d > tol(w[i]) {
				t.Fatalf("gradient %s[%d]: pushed %g, as written %g", pn, i, gotGrads[pn][i], w[i])
			}
		}
	}
}

// nodeRows sums the rows of a program's node values (the narrows'
// included).
func nodeRows(p *Program) int {
	n := 0
	for i := range p.g.Ops {
		if p.plan.space[i] == SpaceNode {
			n += p.plan.rows[i]
		}
	}
	return n
}

// pushTol is tol64 in the precision of dt: the two programs sum the same
// terms, in other orders where a product's rows differ.
func pushTol(g *ir.Graph, f *blockFixture, dt tensor.DType, v float64) float64 {
	u := floattol.UFloat64
	if dt == tensor.Float32 {
		u = floattol.UFloat32
	}
	k := len(g.Ops) * (int(f.adjSelf.NNZ()) + inDim + width + 2)
	return floattol.Orders(floattol.Gamma(k, u)) * 100 * math.Max(1, math.Abs(v))
}

// TestPushedNarrowsHalfInput binds a layer whose input only products
// read to 16-bit input rows over large blocks, where the products read
// the rows directly (half.go): the root's product multiplies the first
// 16-bit rows, and two training steps and an evaluation agree bit for bit
// with the float32 program over the widened rows.
func TestPushedNarrowsHalfInput(t *testing.T) {
	layer := func(b *ir.Builder, in, out int64, last bool) int32 {
		x := b.Input("x", in)
		root := b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot"))
		return b.Binary(ir.OpAdd, root, b.Aggregate(b.Graph("adj"), b.MatMul(x, b.Param("wn", []int64{in, out}, "glorot")), "mean"))
	}
	g := linkLayers(t, layer, []int64{inDim, width, classes})
	f := randomBlockFixture(5, 20000, 40000)
	var seeds []int32
	for v := int32(0); v < 20000; v += 5 {
		seeds = append(seeds, v)
	}
	var got [2][][]float64
	for k := range 2 {
		env := f.blockEnv(t, seeds, tensor.Float32)
		env.Input = toHalf(t, f.be, env.Input, tensor.Float16)
		if k == 1 {
			env.Input = widened(t, f.be, env.Input)
		}
		defer f.be.Release(env.Input)
		ps, err := NewParams(g, f.be, tensor.Float32, tensor.Host, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Release()
		p, err := Bind(g, env, ps)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		root := slices.IndexFunc(p.g.Ops, func(op ir.Op) bool { return op.Kind == ir.OpMatMul })
		if !p.plan.prefix[root] || k == 0 && (p.wideIn || !p.aux[root].halfX) {
			t.Fatalf("the root's product reads the first rows: %v; 16-bit rows widened %v, read directly %v; want true, false, true",
				p.plan.prefix[root], p.wideIn, p.aux[root].halfX)
		}
		got[k] = stepTrace(t, context.Background(), f.be, p, 3)
	}
	for i := range got[0] {
		if !slices.Equal(got[0][i], got[1][i]) {
			t.Fatalf("result %d differs: 16-bit %v, widened %v", i, got[0][i][:min(4, len(got[0][i]))], got[1][i][:min(4, len(got[1][i]))])
		}
	}
}

// TestNarrowsKeptOverEntries binds a root term to blocks whose input is
// given by its entries (Env.InputEntries: products run as SpMM over
// them, which has no rows to read in place): the narrow stays above the
// root's product, and a training step agrees with the dense input's
// pushed program within the rounding of the sums' other order.
func TestNarrowsKeptOverEntries(t *testing.T) {
	g := linkLayers(t, pushModels["sage with the weight first"], []int64{inDim, width, classes})
	f := newBlockFixture()
	seeds := []int32{3, 17, 5, 22, 9, 31, 0, 12}
	var got [2][][]float64
	for k := range 2 {
		env := f.blockEnv(t, seeds, tensor.Float64)
		if k == 0 {
			m, ok, err := f.be.(backend.SparseInputs).SparseInput(env.Input, int64(env.Input.Numel()), tensor.Host)
			if err != nil || !ok {
				t.Fatalf("entries: %v, %v", ok, err)
			}
			env.Input, env.InputEntries = nil, &m
		}
		ps, err := NewParams(g, f.be, tensor.Float64, tensor.Host, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Release()
		p, err := Bind(g, env, ps)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release()
		root := slices.IndexFunc(p.g.Ops, func(op ir.Op) bool { return op.Kind == ir.OpMatMul })
		if k == 0 && (p.plan.prefix[root] || !p.aux[root].sparseX) {
			t.Fatalf("entries: the root's product reads the first rows %v, runs over the entries %v; want false, true", p.plan.prefix[root], p.aux[root].sparseX)
		}
		got[k] = stepTrace(t, context.Background(), f.be, p, 3)
	}
	for i := range got[0] {
		for j, w := range got[1][i] {
			if d := math.Abs(got[0][i][j] - w); d > pushTol(g, f, tensor.Float64, w) {
				t.Fatalf("result %d[%d]: entries %g, dense %g", i, j, got[0][i][j], w)
			}
		}
	}
}
