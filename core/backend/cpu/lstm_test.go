package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest/ref"
	"strata/core/graph"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// lstmRun is one forward (saving the state) and backward on the backend.
type lstmRun struct {
	c                       *tc
	a                       *Graph
	h                       int
	xw, whh, bias, dout     *tensor.Tensor
	out, gates, cells, hprv *tensor.Tensor
	dxw, dwhh               *tensor.Tensor
}

func newLSTMRun(c *tc, g *graph.CSR, h int) (*lstmRun, []float64, []float64, []float64, []float64) {
	a, err := c.be.UploadGraph(g, tensor.Host)
	c.ok(err)
	r := &lstmRun{c: c, a: a.(*Graph), h: h}
	e := int(g.NNZ())
	var xw, whh, bias, dout []float64
	r.xw, xw = c.rand(g.NumCols, 4*h)
	r.whh, whh = c.rand(h, 4*h)
	r.bias, bias = c.rand(4 * h)
	r.dout, dout = c.rand(g.NumRows, h)
	r.out, r.gates, r.cells, r.hprv = c.zeros(g.NumRows, h), c.zeros(e, 4*h), c.zeros(e, h), c.zeros(e, h)
	r.dxw, r.dwhh = c.zeros(g.NumCols, 4*h), c.zeros(h, 4*h)
	return r, xw, whh, bias, dout
}

func (r *lstmRun) forward(save bool) []float64 {
	if save {
		r.c.ok(r.c.be.LSTMAggregate(ctx, r.a, r.xw, r.whh, r.bias, r.out, r.gates, r.cells, r.hprv))
	} else {
		r.c.ok(r.c.be.LSTMAggregate(ctx, r.a, r.xw, r.whh, r.bias, r.out, nil, nil, nil))
	}
	return get(r.out)
}

func (r *lstmRun) backward() (dxw, dwhh []float64) {
	r.c.ok(r.c.be.LSTMAggregateBackward(ctx, r.a, r.whh, r.gates, r.cells, r.hprv, r.dout, r.dxw, r.dwhh))
	return get(r.dxw), get(r.dwhh)
}

// TestLSTMAggregate compares the forward and backward with the reference
// on square and bipartite graphs (empty rows, hubs, repeated sources),
// 32- and 64-bit ids, both dtypes; forAll checks that 1 and 4 threads give
// the same bits.
func TestLSTMAggregate(t *testing.T) {
	for _, gc := range graphCases {
		for _, h := range []int{1, 3, 9} {
			t.Run(fmt.Sprintf("%s/H=%d", gc.name, h), func(t *testing.T) {
				forAll(t, func(c *tc) []float64 {
					g := c.graph(gc)
					r, xw, whh, bias, dout := newLSTMRun(c, g, h)
					inferred := r.forward(false)
					out := r.forward(true)
					for i := range out {
						if math.Float64bits(out[i]) != math.Float64bits(inferred[i]) {
							t.Fatalf("out[%d] = %v saving the state, %v without", i, out[i], inferred[i])
						}
					}
					dxw, dwhh := r.backward()
					want := ref.NewLSTM(c.ar(), g, h, floattol.Ins(xw), whh, bias)
					want.Backward(dout)
					c.near("out", out, want.Out)
					c.near("dxw", dxw, want.DXW)
					c.near("dwhh", dwhh, want.DWHH)
					return append(append(out, dxw...), dwhh...)
				})
			})
		}
	}
}

// TestLSTMAggregateExtremes feeds pre-activations from -1e4 to 1e4
// (float32's vectorised exp, sigmoid and tanh clamp and switch formulas),
// which must stay within floattol.FuncULPs of the exact functions, and a
// NaN, which must come out as NaN.
func TestLSTMAggregateExtremes(t *testing.T) {
	vals := []float64{-1e4, -100, -88.5, -30, -9, -1, -0.6, -1e-3, -1e-30, 0, 1e-30, 1e-3, 0.6, 0.7, 1, 9, 30, 88.5, 100, 1e4}
	g := &graph.CSR{NumRows: len(vals), NumCols: len(vals), Indptr: make([]int64, len(vals)+1), Idx32: make([]int32, len(vals))}
	for i := range vals {
		g.Indptr[i+1], g.Idx32[i] = int64(i+1), int32(i)
	}
	const h = 9
	for _, dt := range dtypes {
		c := newTC(t, 1, dt, 1)
		r, _, _, _, _ := newLSTMRun(c, g, h)
		xw := make([]float64, len(vals)*4*h)
		for i := range xw {
			xw[i] = round(dt, vals[(i/(4*h)+i%7)%len(vals)])
		}
		r.xw = c.put([]int{len(vals), 4 * h}, xw)
		zero := make([]float64, 4*h*h)
		r.whh, r.bias = c.put([]int{h, 4 * h}, zero), c.put([]int{4 * h}, zero[:4*h])
		want := ref.NewLSTM(c.ar(), g, h, floattol.Ins(xw), zero, zero[:4*h])
		c.near("out", r.forward(true), want.Out)
		xw[5] = math.NaN()
		r.xw = c.put([]int{len(vals), 4 * h}, xw)
		if got := r.forward(true); !math.IsNaN(got[5]) {
			t.Errorf("%v: a NaN input gate gave %v, want NaN", dt, got[5])
		}
	}
}

// TestLSTMAggregateFiniteDifferences checks the backward against central
// differences of <out, dout> in float64, for every entry of xw, whh and
// the bias (whose gradient is the column sum of dxw).
func TestLSTMAggregateFiniteDifferences(t *testing.T) {
	for _, gc := range graphCases[:3] {
		t.Run(gc.name, func(t *testing.T) {
			c := newTC(t, 2, tensor.Float64, 7)
			g := c.graph(gc)
			const h = 3
			r, _, _, _, dout := newLSTMRun(c, g, h)
			r.forward(true)
			dxw, dwhh := r.backward()
			dbias := make([]float64, 4*h)
			for i, v := range dxw {
				dbias[i%(4*h)] += v
			}
			loss := func() float64 {
				s := 0.0
				for i, v := range r.forward(false) {
					s += v * dout[i]
				}
				return s
			}
			// Step and bound from the loss's roundings (a row's chain: each
			// step's h·W_hh sum, gates and cell, then the sum over rows)
			// and its scale Σ|out·dout| (floattol.Slope).
			scale, maxDeg := 0.0, int64(0)
			for i, v := range r.forward(false) {
				scale += math.Abs(v * dout[i])
			}
			for i := range g.NumRows {
				maxDeg = max(maxDeg, g.Indptr[i+1]-g.Indptr[i])
			}
			scale = math.Max(1, scale)
			gam := floattol.Gamma(int(maxDeg)*(h+8)+g.NumRows*h, floattol.UFloat64)
			eps := gam * scale
			for _, p := range []struct {
				name string
				t    *tensor.Tensor
				grad []float64
			}{{"xw", r.xw, dxw}, {"whh", r.whh, dwhh}, {"bias", r.bias, dbias}} {
				v := F64(p.t)
				num, bound := floattol.Gradient(len(v), func(i int, d float64) float64 {
					orig := v[i]
					v[i] = orig + d
					l := loss()
					v[i] = orig
					return l
				}, floattol.CentralStep(eps, scale), eps)
				for i, a := range p.grad {
					bound[i] += gam * (math.Abs(a) + scale) // the backward's own rounding
				}
				if i, q := floattol.Exceeds(p.grad, num, bound); i >= 0 {
					t.Errorf("%s[%d]: backward %g, central difference %g: off by %.3g times the bound %.3g", p.name, i, p.grad[i], num[i], q, bound[i])
				}
			}
		})
	}
}

// TestLSTMAggregateScratchIsCounted checks that the temporaries of the
// recurrence come from Alloc: they show in the peak (so a simulated device
// counts them) and a capacity too small for them is an out-of-memory
// error.
func TestLSTMAggregateScratchIsCounted(t *testing.T) {
	const h, dev = 3, tensor.Host
	g := randGraph(rand.New(rand.NewPCG(1, 2)), 20, 30, false, false)
	e := int(g.NNZ())
	type run struct {
		be                             *Backend
		a                              *Graph
		xw, whh, bias, out, dout       *tensor.Tensor
		gates, cells, hprev, dxw, dwhh *tensor.Tensor
		base                           int64 // in use before a call
		fwd, bwd                       int64 // the scratch of inference and of backward
	}
	setup := func(capacity int64) *run {
		be := New(Options{Threads: 2, Capacity: capacity})
		a, err := be.UploadGraph(g, dev)
		if err != nil {
			t.Fatal(err)
		}
		r := &run{be: be, a: a.(*Graph)}
		s := r.a.schedule()
		r.fwd = int64(8 * s.off.Rows(0) * 6 * h)               // gates, cell and hidden state of the rows with a source
		r.bwd = int64(8 * (s.off.Rows(0) + s.off.Rows(1)) * h) // carried cell gradient, hidden gradient
		for _, x := range []struct {
			t     **tensor.Tensor
			shape []int
		}{{&r.xw, []int{g.NumCols, 4 * h}}, {&r.whh, []int{h, 4 * h}}, {&r.bias, []int{4 * h}}, {&r.out, []int{g.NumRows, h}},
			{&r.dout, []int{g.NumRows, h}}, {&r.gates, []int{e, 4 * h}}, {&r.cells, []int{e, h}}, {&r.hprev, []int{e, h}},
			{&r.dxw, []int{g.NumCols, 4 * h}}, {&r.dwhh, []int{h, 4 * h}}} {
			if *x.t, err = be.Alloc(tensor.Float64, x.shape, dev); err != nil {
				t.Fatal(err)
			}
		}
		r.base = be.Stats().InUse[dev]
		return r
	}
	r := setup(0)
	if err := r.be.LSTMAggregate(ctx, r.a, r.xw, r.whh, r.bias, r.out, r.gates, r.cells, r.hprev); err != nil {
		t.Fatal(err)
	}
	if err := r.be.LSTMAggregateBackward(ctx, r.a, r.whh, r.gates, r.cells, r.hprev, r.dout, r.dxw, r.dwhh); err != nil {
		t.Fatal(err)
	}
	if st := r.be.Stats(); st.Peak[dev] != r.base+r.bwd || st.InUse[dev] != r.base {
		t.Errorf("training: peak %d and in use %d, want %d (scratch %d) and %d", st.Peak[dev], st.InUse[dev], r.base+r.bwd, r.bwd, r.base)
	}
	if err := r.be.LSTMAggregate(ctx, r.a, r.xw, r.whh, r.bias, r.out, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := r.be.Stats(); st.Peak[dev] != r.base+max(r.fwd, r.bwd) || st.InUse[dev] != r.base {
		t.Errorf("inference: peak %d and in use %d, want %d (scratch %d) and %d", st.Peak[dev], st.InUse[dev], r.base+r.fwd, r.fwd, r.base)
	}
	short := setup(r.base + r.fwd - 1)
	err := short.be.LSTMAggregate(ctx, short.a, short.xw, short.whh, short.bias, short.out, nil, nil, nil)
	var oom *backend.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("inference one byte short: error %v, want an OutOfMemoryError", err)
	}
}

// TestLSTMAggregateErrors checks that bad shapes name the op and shapes.
func TestLSTMAggregateErrors(t *testing.T) {
	c := newTC(t, 1, tensor.Float64, 1)
	g := randGraph(c.rng, 6, 8, false, false)
	r, _, _, _, _ := newLSTMRun(c, g, 2)
	bad := c.zeros(5, 8)
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"xw rows", c.be.LSTMAggregate(ctx, r.a, bad, r.whh, r.bias, r.out, nil, nil, nil), "cpu: LSTMAggregate: xw has shape [5 8], want [8,8]"},
		{"saved partly", c.be.LSTMAggregate(ctx, r.a, r.xw, r.whh, r.bias, r.out, r.gates, nil, nil), "all set (training) or all nil"},
		{"out", c.be.LSTMAggregate(ctx, r.a, r.xw, r.whh, r.bias, r.dxw, nil, nil, nil), "out has shape [8 8], want [6,2]"},
		{"dwhh", c.be.LSTMAggregateBackward(ctx, r.a, r.whh, r.gates, r.cells, r.hprv, r.dout, r.dxw, bad), "dwhh has shape [5 8], want [2,8]"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, tt.err, tt.want)
		}
	}
}

// BenchmarkLSTMAggregate runs the recurrence (forward, and forward then
// backward) on an R-MAT graph, float32. GFLOPS counts the W_hh GEMMs only:
// 2·(E-n0)·H·4H per pass (forward; backward twice that).
func BenchmarkLSTMAggregate(b *testing.B) {
	for _, h := range []int{32, 128} {
		for _, pass := range []string{"fwd", "fwd+bwd"} {
			b.Run(fmt.Sprintf("n=2^14/H=%d/%s", h, pass), func(b *testing.B) {
				e := newBench(b, 14, "random")
				rows, cols, nnz := e.g.NumRows, e.g.NumCols, int(e.g.NNZ())
				xw, whh, bias := e.alloc(b, tensor.Float32, cols, 4*h), e.alloc(b, tensor.Float32, h, 4*h), e.alloc(b, tensor.Float32, 4*h)
				r := rand.New(rand.NewPCG(5, 6))
				for _, t := range []*tensor.Tensor{xw, whh, bias} {
					for i := range F32(t) {
						F32(t)[i] = float32(2*r.Float64()-1) / float32(math.Sqrt(float64(h)))
					}
				}
				out, dout := e.alloc(b, tensor.Float32, rows, h), e.alloc(b, tensor.Float32, rows, h)
				gates, cells, hprev := e.alloc(b, tensor.Float32, nnz, 4*h), e.alloc(b, tensor.Float32, nnz, h), e.alloc(b, tensor.Float32, nnz, h)
				dxw, dwhh := e.alloc(b, tensor.Float32, cols, 4*h), e.alloc(b, tensor.Float32, h, 4*h)
				steps := e.a.(*Graph).schedule()
				flops := 2 * float64(nnz-steps.off.Rows(0)) * float64(h) * float64(4*h)
				if pass != "fwd" {
					flops *= 3
				}
				b.ResetTimer()
				for range b.N {
					if err := e.be.LSTMAggregate(ctx, e.a, xw, whh, bias, out, gates, cells, hprev); err != nil {
						b.Fatal(err)
					}
					if pass == "fwd" {
						continue
					}
					if err := e.be.LSTMAggregateBackward(ctx, e.a, whh, gates, cells, hprev, dout, dxw, dwhh); err != nil {
						b.Fatal(err)
					}
				}
				report(b, flops, 0)
				b.ReportMetric(float64(steps.off.Len()), "steps")
			})
		}
	}
}
