// Package autodiffcmp measures gorgonia's autodiff against strata's own tape
// on one full-batch 2-layer GCN training step on Cora (docs/decisions.md).
package autodiffcmp

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
	T "gorgonia.org/tensor"
	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/graph"
	"strata/core/graph/formats"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

const (
	hidden = 16
	lr     = 0.01
)

// cora is the dataset with Â = D^-1/2 (A+I) D^-1/2 as a CSR plus edge weights.
type cora struct {
	n, f, c int
	x       []float32 // [n*f], rows normalised to sum 1
	labels  []int32
	train   []int32
	adj     *graph.CSR
	norm    []float32
}

var (
	coraOnce sync.Once
	coraData *cora
	coraErr  error
)

func loadCora(tb testing.TB) *cora {
	coraOnce.Do(func() { coraData, coraErr = readCora() })
	if coraErr != nil {
		tb.Fatalf("cora: %v", coraErr)
	}
	return coraData
}

func readCora() (*cora, error) {
	ds, err := formats.LoadEmbedded("cora")
	if err != nil {
		return nil, err
	}
	d := &cora{n: ds.NumNodes, f: ds.FeatDim, c: ds.NumClasses, labels: ds.Labels, train: ds.Train,
		x: make([]float32, len(ds.Features)), adj: graph.AddSelfLoops(graph.Symmetrize(ds.Graph))}
	d.norm = graph.GCNNorm(d.adj)
	for i := 0; i < d.n; i++ {
		row, s := ds.Features[i*d.f:(i+1)*d.f], float32(0)
		for _, v := range row {
			s += v
		}
		for j, v := range row {
			if s > 0 {
				d.x[i*d.f+j] = v / s
			}
		}
	}
	return d, nil
}

// initWeights returns glorot weights and zero biases from strata's initialiser.
func initWeights(tb testing.TB, d *cora) map[string][]float64 {
	m := newTape(tb, d, nil)
	defer m.prog.Release()
	w, err := m.prog.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// gorgoniaGCN is the model as a gorgonia expression graph on a dense Â.
type gorgoniaGCN struct {
	vm     G.VM
	solver *G.AdamSolver
	params G.Nodes
	loss   G.Value
}

func newGorgonia(tb testing.TB, d *cora, w map[string][]float64, prune bool) *gorgoniaGCN {
	g := G.NewGraph()
	dense := func(v []float32, s ...int) *T.Dense { return T.New(T.WithShape(s...), T.WithBacking(v)) }
	param := func(name string, s ...int) *G.Node {
		v := make([]float32, len(w[name]))
		for i, x := range w[name] {
			v[i] = float32(x)
		}
		return G.NewMatrix(g, T.Float32, G.WithShape(s...), G.WithName(name), G.WithValue(dense(v, s...)))
	}
	a := make([]float32, d.n*d.n)
	for i := 0; i < d.n; i++ {
		for e := d.adj.Indptr[i]; e < d.adj.Indptr[i+1]; e++ {
			a[i*d.n+int(d.adj.Idx32[e])] = d.norm[e]
		}
	}
	// mask holds -1/|train| at (i, label_i) for train nodes: Σ mask⊙logp is the mean CE.
	mask := make([]float32, d.n*d.c)
	for _, i := range d.train {
		mask[int(i)*d.c+int(d.labels[i])] = -1 / float32(len(d.train))
	}
	adj := G.NewConstant(dense(a, d.n, d.n), G.WithName("adj"))
	x := G.NewConstant(dense(slices.Clone(d.x), d.n, d.f), G.WithName("x"))
	m := G.NewConstant(dense(mask, d.n, d.c), G.WithName("mask"))
	w1, b1 := param("W1", d.f, hidden), param("b1", 1, hidden)
	w2, b2 := param("W2", hidden, d.c), param("b2", 1, d.c)
	h := G.Must(G.Rectify(G.Must(G.BroadcastAdd(G.Must(G.Mul(adj, G.Must(G.Mul(x, w1)))), b1, nil, []byte{0}))))
	out := G.Must(G.BroadcastAdd(G.Must(G.Mul(adj, G.Must(G.Mul(h, w2)))), b2, nil, []byte{0}))
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(G.Must(G.LogSoftMax(out)), m))))
	params := G.Nodes{w1, b1, w2, b2}
	grads, err := G.Grad(cost, params...)
	if err != nil {
		tb.Fatal(err)
	}
	gg := &gorgoniaGCN{params: params, solver: G.NewAdamSolver(G.WithLearnRate(lr))}
	G.Read(cost, &gg.loss)
	if prune {
		// Grad also differentiates w.r.t. the constants Â and X; keep only
		// what the loss and the parameter gradients need.
		g = g.SubgraphRoots(append(grads, cost)...)
	}
	gg.vm = G.NewTapeMachine(g, G.BindDualValues(params...))
	return gg
}

// step runs forward, backward and Adam, and returns the loss before the update.
func (m *gorgoniaGCN) step(tb testing.TB) float64 {
	defer m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		tb.Fatal(err)
	}
	if err := m.solver.Step(G.NodesToValueGrads(m.params)); err != nil {
		tb.Fatal(err)
	}
	return float64(m.loss.Data().(float32))
}

// tapeGCN is the model compiled by strata's engine on the CPU backend.
type tapeGCN struct {
	be          *cpu.Backend
	prog        *engine.Program
	labels, idx *tensor.Tensor
	moments     [][2]*tensor.Tensor
	t           int
}

func newTape(tb testing.TB, d *cora, w map[string][]float64) *tapeGCN {
	b := ir.NewBuilder()
	x := b.Input("x", int64(d.f))
	gs := b.Graph("adj_self")
	w1 := b.Param("W1", []int64{int64(d.f), hidden}, "glorot")
	b1 := b.Param("b1", []int64{hidden}, "zeros")
	w2 := b.Param("W2", []int64{hidden, int64(d.c)}, "glorot")
	b2 := b.Param("b2", []int64{int64(d.c)}, "zeros")
	h := b.Unary(ir.OpReLU, b.Bias(b.Aggregate(gs, b.MatMul(x, w1), "gcn"), b1), 0)
	b.Output(b.Bias(b.Aggregate(gs, b.MatMul(h, w2), "gcn"), b2))
	g, err := b.Finish()
	if err != nil {
		tb.Fatal(err)
	}
	be := cpu.New(cpu.Options{})
	up := func(v any, dt tensor.DType, shape ...int) *tensor.Tensor {
		t, err := be.Alloc(dt, shape, tensor.Host)
		if err == nil {
			err = be.Upload(t, v)
		}
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}
	adj, err := be.UploadGraph(d.adj, tensor.Host)
	if err != nil {
		tb.Fatal(err)
	}
	env := engine.Env{Backend: be, DType: tensor.Float32, Tier: tensor.Host,
		Graphs: map[string]*engine.Graph{"adj_self": {Adj: adj, GCNNorm: up(d.norm, tensor.Float32, len(d.norm))}},
		Input:  up(d.x, tensor.Float32, d.n, d.f)}
	m := &tapeGCN{be: be, labels: up(d.labels, tensor.Int32, d.n), idx: up(d.train, tensor.Int32, len(d.train))}
	if m.prog, err = engine.Compile(g, env, 1); err != nil {
		tb.Fatal(err)
	}
	if w != nil {
		if err := m.prog.Restore(w); err != nil {
			tb.Fatal(err)
		}
	}
	for _, p := range m.prog.Params() {
		m.moments = append(m.moments, [2]*tensor.Tensor{
			up(make([]float32, p.Value.Numel()), tensor.Float32, p.Value.Shape()...),
			up(make([]float32, p.Value.Numel()), tensor.Float32, p.Value.Shape()...)})
	}
	return m
}

func (m *tapeGCN) step(tb testing.TB) float64 {
	ctx := context.Background()
	m.t++
	if err := m.prog.Forward(ctx, engine.Mode{Train: true, Seed: uint64(m.t)}); err != nil {
		tb.Fatal(err)
	}
	loss, err := m.be.SoftmaxCrossEntropy(m.prog.Output(), m.labels, m.idx, m.prog.OutputGrad())
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.prog.Backward(ctx); err != nil {
		tb.Fatal(err)
	}
	for i, p := range m.prog.Params() {
		if err := m.be.AdamStep(p.Value, p.Grad, m.moments[i][0], m.moments[i][1], lr, 0.9, 0.999, 1e-8, 0, m.t); err != nil {
			tb.Fatal(err)
		}
	}
	return loss
}

// TestSameLoss checks that both implementations compute the same model:
// the same initial loss from identical weights, to 2γ_K (float32) of two
// summation orders times 100 for magnitude against cancellation, K the
// longest sum (a dense Â row or a feature row, then the loss's mean over
// the nodes), and falling losses over a few Adam steps. Later losses have
// no bound: Adam's first update moves a parameter whose gradient is
// rounding noise by up to ±lr in either run
// (plugins/strategy/internal/testkit's CompareFloat32Step says more).
func TestSameLoss(t *testing.T) {
	d := loadCora(t)
	w := initWeights(t, d)
	gm, tm := newGorgonia(t, d, w, true), newTape(t, d, w)
	tol := floattol.Orders(floattol.Gamma(max(d.n, d.f)+d.n, floattol.UFloat32)) * 100
	var first [2]float64
	for s := 0; s < 5; s++ {
		lg, lt := gm.step(t), tm.step(t)
		t.Logf("step %d: gorgonia %.7f tape %.7f", s, lg, lt)
		switch {
		case s == 0 && math.Abs(lg-lt) > tol*math.Abs(lt):
			t.Fatalf("step 0: gorgonia loss %.7f, tape loss %.7f (relative bound %.2g)", lg, lt, tol)
		case s == 0:
			first = [2]float64{lg, lt}
		case !(lg < first[0]) || !(lt < first[1]):
			t.Fatalf("step %d: losses %.7f (gorgonia), %.7f (tape) do not fall from %.7f, %.7f", s, lg, lt, first[0], first[1])
		}
	}
}

// BenchmarkGCNEpochGorgonia times one training step with a dense Â: as
// gorgonia runs it out of the box (pure-Go gonum BLAS, the whole graph Grad
// built), pruned to what the parameter gradients need, and pruned with
// OpenBLAS, which strata's CPU backend uses for GEMM.
func BenchmarkGCNEpochGorgonia(b *testing.B) {
	d := loadCora(b)
	w := initWeights(b, d)
	for _, c := range []struct {
		name  string
		blas  T.BLAS
		prune bool
	}{{"default", gonum.Implementation{}, false}, {"pruned", gonum.Implementation{}, true}, {"pruned_openblas", netlib.Implementation{}, true}} {
		b.Run(c.name, func(b *testing.B) {
			T.Use(c.blas)
			defer T.Use(gonum.Implementation{})
			m := newGorgonia(b, d, w, c.prune)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				m.step(b)
			}
		})
	}
}

// BenchmarkGCNEpochTape times one training step with strata's engine.
func BenchmarkGCNEpochTape(b *testing.B) {
	d := loadCora(b)
	m := newTape(b, d, initWeights(b, d))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m.step(b)
	}
}
