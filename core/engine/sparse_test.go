package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/graph"
	_ "strata/core/graph/formats" // embedded:cora
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// crossover is the cpu backend with its sparse-input crossover set to d
// (backend.SparseInputs): 1 holds every input sparse, 0 none.
type crossover struct {
	*cpu.Backend
	d float64
}

func (c crossover) SparseInputDensity(_, _, _ int) float64 { return c.d }

// sparseMatMulGraph is one matmul of the input (through a dropout of
// rate p when p > 0) by W [k, n].
func sparseMatMulGraph(t *testing.T, k, n int64, p float64) *ir.Graph {
	b := ir.NewBuilder()
	x := b.Input("x", k)
	if p > 0 {
		x = b.Unary(ir.OpDropout, x, p)
	}
	b.Output(b.MatMul(x, b.Param("W", []int64{k, n}, "glorot")))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// randomSparse returns rows×cols values with about density of them
// non-zero (normal values at uniform positions).
func randomSparse(rows, cols int, density float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	v := make([]float64, rows*cols)
	for i := range v {
		if rng.Float64() < density {
			v[i] = rng.NormFloat64()
		}
	}
	return v
}

// sparseRun is what one binding computed: the output of a training
// forward and W's gradient for a given output gradient.
type sparseRun struct{ out, grad, w []float64 }

// runSparseMatMul binds g to x on be (fresh parameters from one seed;
// Env.SparseInput = on), runs a training forward and a backward from dy,
// and reports whether the matmul ran sparse.
func runSparseMatMul(t *testing.T, be backend.Backend, g *ir.Graph, x *tensor.Tensor, dy []float64, dt tensor.DType, on bool) (sparseRun, bool) {
	t.Helper()
	return runMatMulEnv(t, g, Env{Backend: be, DType: dt, Tier: tensor.Host, Graphs: map[string]*Graph{}, Input: x, SparseInput: on}, dy)
}

// runMatMulEnv is runSparseMatMul on a binding env.
func runMatMulEnv(t *testing.T, g *ir.Graph, env Env, dy []float64) (sparseRun, bool) {
	t.Helper()
	p, err := Compile(g, env, 42)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	ctx := context.Background()
	if err := p.Forward(ctx, Mode{Train: true, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	var r sparseRun
	r.out = mustDownload(t, p, p.Output())
	if err := uploadFloats(p.be, p.OutputGrad(), dy); err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(ctx); err != nil {
		t.Fatal(err)
	}
	r.grad = mustDownload(t, p, p.Params()[0].Grad)
	r.w = mustDownload(t, p, p.Params()[0].Value)
	sparse := false
	for i := range p.aux {
		sparse = sparse || p.aux[i].sparseX
	}
	return r, sparse
}

func mustDownload(t *testing.T, p *Program, tt *tensor.Tensor) []float64 {
	t.Helper()
	v, err := p.downloadFloats(tt)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSparseInputMatchesDense multiplies inputs of several densities (0,
// bag-of-words 1%, 20% and fully dense) by a weight, with no dropout and
// with a fused one (rate 0.5, so that the masked input is the same bits
// both ways), as SpMM over the non-zeros and as the dense product, and
// checks the output and the weight's gradient: each is a sum that the two
// paths order differently, so each path is within floattol.GEMM of the
// exact value (the magnitude Σ|scale·x|·|w| over the sum), and the two
// within twice that (floattol.Orders).
func TestSparseInputMatchesDense(t *testing.T) {
	const rows, k, n = 700, 600, 8
	be := cpu.New(cpu.Options{Threads: 2})
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		u := floattol.UFloat64
		if dt == tensor.Float32 {
			u = floattol.UFloat32
		}
		for _, density := range []float64{0, 0.01, 0.2, 1} {
			for _, rate := range []float64{0, 0.5} {
				t.Run(fmt.Sprintf("%v/density=%g/dropout=%g", dt, density, rate), func(t *testing.T) {
					xs := randomSparse(rows, k, density, 1)
					x := upload64(t, be, xs, []int{rows, k}, dt)
					defer be.Release(x)
					dy := randomSparse(rows, n, 1, 2)
					g := sparseMatMulGraph(t, k, n, rate)
					sp, isSparse := runSparseMatMul(t, crossover{be, 1}, g, x, dy, dt, true)
					de, isDense := runSparseMatMul(t, crossover{be, 0}, g, x, dy, dt, true)
					_, isOff := runSparseMatMul(t, crossover{be, 1}, g, x, dy, dt, false)
					if !isSparse || isDense || isOff {
						t.Fatalf("sparse binding ran sparse: %v, dense binding: %v, binding without Env.SparseInput: %v", isSparse, !isDense, !isOff)
					}
					scale := 1 / (1 - rate)
					outMag, gradMag := make([]float64, rows*n), make([]float64, k*n)
					for r := range rows {
						for c := range k {
							a := scale * math.Abs(xs[r*k+c])
							for j := range n {
								outMag[r*n+j] += a * math.Abs(de.w[c*n+j])
								gradMag[c*n+j] += a * math.Abs(dy[r*n+j])
							}
						}
					}
					for _, cmp := range []struct {
						name      string
						got, want []float64
						mag       []float64
						sum       int
					}{{"output", sp.out, de.out, outMag, k}, {"gradient", sp.grad, de.grad, gradMag, rows}} {
						bound := make([]float64, len(cmp.mag))
						for i, m := range cmp.mag {
							bound[i] = floattol.Orders(floattol.GEMM(cmp.sum, u, m))
						}
						if i, r := floattol.Exceeds(cmp.got, cmp.want, bound); i >= 0 {
							t.Fatalf("%s[%d]: sparse %g, dense %g: off by %.3g times the bound %.3g", cmp.name, i, cmp.got[i], cmp.want[i], r, bound[i])
						}
					}
				})
			}
		}
	}
}

// coraGCN is a 2-layer GCN (16 hidden) with dropout 0.5 on the input and
// the hidden rows: the node-classification model of configs/gcn-cora.toml.
func coraGCN(t *testing.T, k, classes int64) *ir.Graph {
	b := ir.NewBuilder()
	gs := b.Graph("adj_self")
	x := b.Unary(ir.OpDropout, b.Input("x", k), 0.5)
	h := b.Aggregate(gs, b.MatMul(x, b.Param("W1", []int64{k, 16}, "glorot")), "gcn")
	h = b.Unary(ir.OpDropout, b.Unary(ir.OpReLU, b.Bias(h, b.Param("b1", []int64{16}, "zeros")), 0), 0.5)
	h = b.Aggregate(gs, b.MatMul(h, b.Param("W2", []int64{16, classes}, "glorot")), "gcn")
	b.Output(b.Bias(h, b.Param("b2", []int64{classes}, "zeros")))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// trainCora runs steps full-graph training steps (cross-entropy over the
// training nodes, Adam with weight decay) of g on Cora in float64 on be
// and returns each step's loss and the parameters after the last, and
// whether the first layer ran sparse.
func trainCora(t *testing.T, be backend.Backend, g *ir.Graph, ds *graph.Dataset, steps int) ([]float64, map[string][]float64, bool) {
	t.Helper()
	dt := tensor.Float64
	csr := graph.AddSelfLoops(graph.Symmetrize(ds.Graph))
	a, err := be.UploadGraph(csr, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer be.ReleaseGraph(a)
	norm := upload64(t, be, toF64(graph.GCNNorm(csr)), []int{int(csr.NNZ())}, dt)
	x := upload64(t, be, toF64(ds.Features), []int{ds.NumNodes, ds.FeatDim}, dt)
	labels, idx := uploadInts(t, be, ds.Labels), uploadInts(t, be, ds.Train)
	for _, tt := range []*tensor.Tensor{norm, x, labels, idx} {
		defer be.Release(tt)
	}
	env := Env{Backend: be, DType: dt, Tier: tensor.Host, Graphs: map[string]*Graph{"adj_self": {Adj: a, GCNNorm: norm}}, Input: x, SparseInput: true}
	p, err := Compile(g, env, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var moments []*tensor.Tensor
	for _, pr := range p.Params() {
		for range 2 {
			m, err := be.Alloc(dt, pr.Value.Shape(), tensor.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Release(m)
			moments = append(moments, m)
		}
	}
	ctx := context.Background()
	var losses []float64
	for s := range steps {
		if err := p.Forward(ctx, Mode{Train: true, Seed: uint64(s)}); err != nil {
			t.Fatal(err)
		}
		l, err := be.SoftmaxCrossEntropy(p.Output(), labels, idx, p.OutputGrad())
		if err == nil {
			err = p.Backward(ctx)
		}
		for i, pr := range p.Params() {
			if err == nil {
				err = be.AdamStep(pr.Value, pr.Grad, moments[2*i], moments[2*i+1], 0.01, 0.9, 0.999, 1e-8, 5e-4, s+1)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	params, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sparse := false
	for i := range p.aux {
		sparse = sparse || p.aux[i].sparseX
	}
	return losses, params, sparse
}

func uploadInts(t *testing.T, be backend.Backend, v []int32) *tensor.Tensor {
	t.Helper()
	tt, err := be.Alloc(tensor.Int32, []int{len(v)}, tensor.Host)
	if err == nil {
		err = be.Upload(tt, v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// TestSparseInputTrainsAsDense trains Cora's GCN (input dropout 0.5, so
// the entries are masked) for a few float64 steps with the first layer
// over the sparse input (1.27% non-zero) and dense, and compares every
// step's loss and the final parameters. The two runs differ only in the
// order of the first layer's sums, K = 1,433 terms forward and N = 2,708
// for the weight gradient; the rest of each step is the same computation
// on values that differ relatively by about that, so the runs agree to
// twice γ_{K+N} (float64) relative, as the strategies' float64 runs that
// split the same steps do (testkit.SplitTol).
func TestSparseInputTrainsAsDense(t *testing.T) {
	ds, err := graph.Open("embedded:cora")
	if err != nil {
		t.Fatal(err)
	}
	const steps = 3
	g := coraGCN(t, int64(ds.FeatDim), int64(ds.NumClasses))
	be := cpu.New(cpu.Options{Threads: 2})
	spLoss, spParams, isSparse := trainCora(t, crossover{be, 1}, g, ds, steps)
	deLoss, deParams, isDense := trainCora(t, crossover{be, 0}, g, ds, steps)
	if !isSparse || isDense {
		t.Fatalf("sparse run ran sparse: %v, dense run: %v", isSparse, !isDense)
	}
	tol := floattol.Orders(floattol.Gamma(ds.FeatDim+ds.NumNodes, floattol.UFloat64))
	for s := range steps {
		if d := math.Abs(spLoss[s]-deLoss[s]) / deLoss[s]; !(d <= tol) {
			t.Errorf("step %d: loss %.17g sparse, %.17g dense: relative %.3g > %.3g", s, spLoss[s], deLoss[s], d, tol)
		}
	}
	for name, want := range deParams {
		scale := 0.0
		for _, v := range want {
			scale = max(scale, math.Abs(v))
		}
		for i, v := range spParams[name] {
			if d := math.Abs(v-want[i]) / scale; !(d <= tol) {
				t.Fatalf("%s[%d]: %.17g sparse, %.17g dense: relative %.3g > %.3g", name, i, v, want[i], d, tol)
			}
		}
	}
}

// TestInputEntriesMatchHeld binds the input by its entries
// (Env.InputEntries, made by the caller) and checks that the program
// computes what the one that holds the same input sparse itself computes,
// bit for bit (the same SpMMs over the same entries; that one matches the
// dense product to rounding, TestSparseInputMatchesDense), with and
// without a dropout of the input.
func TestInputEntriesMatchHeld(t *testing.T) {
	const rows, k, n = 300, 200, 8
	be := cpu.New(cpu.Options{Threads: 2})
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, rate := range []float64{0, 0.5} {
			t.Run(fmt.Sprintf("%v/dropout=%g", dt, rate), func(t *testing.T) {
				x := upload64(t, be, randomSparse(rows, k, 0.02, 1), []int{rows, k}, dt)
				defer be.Release(x)
				m, ok, err := be.SparseInput(x, rows*k, tensor.Host)
				if err != nil || !ok {
					t.Fatalf("SparseInput: %v, %v", ok, err)
				}
				defer be.ReleaseGraph(m.Adj)
				defer be.Release(m.Values)
				dy := randomSparse(rows, n, 1, 2)
				g := sparseMatMulGraph(t, k, n, rate)
				held, _ := runSparseMatMul(t, crossover{be, 1}, g, x, dy, dt, true)
				given, sparse := runMatMulEnv(t, g, Env{Backend: be, DType: dt, Tier: tensor.Host, Graphs: map[string]*Graph{}, InputEntries: &m}, dy)
				if !sparse {
					t.Fatal("the binding by entries ran dense")
				}
				for _, c := range []struct {
					name      string
					got, want []float64
				}{{"output", given.out, held.out}, {"gradient", given.grad, held.grad}} {
					for i := range c.want {
						if c.got[i] != c.want[i] {
							t.Fatalf("%s[%d]: by entries %g, held sparse %g", c.name, i, c.got[i], c.want[i])
						}
					}
				}
			})
		}
	}
}

// TestInputEntriesRefuseDense: a model that reads the input other than
// by a matmul fails to bind to its entries with ErrDenseInput, and so
// does an input given both ways.
func TestInputEntriesRefuseDense(t *testing.T) {
	be := cpu.New(cpu.Options{Threads: 2})
	x := upload64(t, be, randomSparse(20, 10, 0.1, 1), []int{20, 10}, tensor.Float32)
	defer be.Release(x)
	m, _, err := be.SparseInput(x, 200, tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer be.ReleaseGraph(m.Adj)
	defer be.Release(m.Values)
	b := ir.NewBuilder()
	in := b.Input("x", 10)
	b.Output(b.Binary(ir.OpAdd, b.MatMul(in, b.Param("W", []int64{10, 10}, "glorot")), b.Unary(ir.OpReLU, in, 0)))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Backend: be, DType: tensor.Float32, Tier: tensor.Host, Graphs: map[string]*Graph{}, InputEntries: &m}
	if _, err := Compile(g, env, 1); !errors.Is(err, ErrDenseInput) {
		t.Errorf("a ReLU of the input: %v, want ErrDenseInput", err)
	}
	env.Input = x
	if _, err := Compile(sparseMatMulGraph(t, 10, 4, 0), env, 1); err == nil {
		t.Error("an input given as a tensor and by its entries: no error")
	}
}
