package engine

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/ir"
	"strata/core/tensor"
)

// mixLayer uses the ops with their own buffers that the shipped models
// lack: dropout (of an input that takes no gradient), max aggregation,
// batch norm, a scalar and a same-shape product, a head dot of the input
// (its gradient a sink) and a concatenation of destinations and sources.
func mixLayer(b *ir.Builder, in, out int64, last bool) int32 {
	x := b.Input("x", in)
	d := b.Unary(ir.OpDropout, x, 0.5)
	h := b.MatMul(b.Aggregate(b.Graph("adj"), d, "max"), b.Param("w", []int64{in, out}, "glorot"))
	h = b.BatchNorm(h, b.Param("gamma", []int64{out}, "ones"), b.Param("beta", []int64{out}, "zeros"), 1e-5)
	h = b.Binary(ir.OpMul, h, b.Param("s", []int64{1}, "ones"))
	h = b.Binary(ir.OpMul, h, b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot")))
	return b.Concat(h, b.HeadDot(x, b.Param("a", []int64{1, in}, "glorot")))
}

// shapedBlockEnv is blockEnv with the shapes of its blocks.
func (f *blockFixture) shapedBlockEnv(t *testing.T, seeds []int32, dt tensor.DType) (Env, []BlockShape) {
	t.Helper()
	b1, s1 := blockOf(f.adj, seeds)
	b0, s0 := blockOf(f.adj, s1)
	var shapes []BlockShape
	layer := func(dst, src []int32, b *graph.CSR) map[string]*Graph {
		self := relabel(t, f.adjSelf, dst, src)
		shapes = append(shapes, BlockShape{Dst: len(dst), Src: len(src),
			Edges:   map[string]int64{"adj": b.NNZ(), "adj_self": self.NNZ()},
			Degrees: map[string]Degrees{"adj": DegreesOf(b), "adj_self": DegreesOf(self)}})
		return map[string]*Graph{
			"adj":      f.bind(t, b, relabel(t, f.mean, dst, src), dt),
			"adj_self": f.bind(t, self, relabel(t, f.meanSelf, dst, src), dt),
		}
	}
	env := Env{Backend: f.be, DType: dt, Tier: tensor.Host}
	env.Blocks = []map[string]*Graph{layer(s1, s0, b0), layer(seeds, s1, b1)}
	env.NodeIDs = [][]int32{s0, s1}
	env.Input = f.rows(t, s0, dt)
	return env, shapes
}

// TestSizerMatchesBind binds every test model to the blocks of random
// seeds of random graphs on the CPU backend and checks that the dry
// binding counts the bytes Bind allocates, and (float32, whose graphs the
// backend keeps in one copy) that the footprint is the peak a training
// step or an evaluation forward reaches (exactly, but for an LSTM's
// evaluation forward) and the dry run holds what stays allocated after it.
func TestSizerMatchesBind(t *testing.T) {
	models := maps.Clone(blockModels)
	models["mix"], models["dropmm"] = mixLayer, dropMatMulLayer
	for name, layer := range dropModels { // dropout row keys
		models["drop-"+name] = layer
	}
	r := newSplitMix(17)
	usages := []Usage{{}, {AccumulateGrads: true}, {Inference: true}}
	for trial := 0; trial < 4; trial++ {
		n := 20 + int(r.next()%60)
		f := randomBlockFixture(r.next(), n, n+int(r.next()%uint64(4*n)))
		var seeds []int32
		for v := range n {
			if r.next()%4 == 0 || v == n-1 && len(seeds) == 0 {
				seeds = append(seeds, int32(v))
			}
		}
		stats := func() backend.Stats { return f.be.Stats() }
		for name, layer := range models {
			// The input rows in the program's dtype, and stored in 16 bits
			// (data.feature_dtype, read directly or widened: half.go).
			for _, v := range []struct{ dt, in tensor.DType }{{tensor.Float32, 0}, {tensor.Float64, 0}, {tensor.Float32, tensor.Float16}} {
				dt := v.dt
				g := linkLayers(t, layer, []int64{inDim, width, classes})
				sz, err := NewSizer(g, dt)
				if err != nil {
					t.Fatal(err)
				}
				sz.Input = v.in
				if sz.Learnable != g.NumParams() {
					t.Errorf("%s: %d learnable scalars, the graph has %d", name, sz.Learnable, g.NumParams())
				}
				ps, err := NewParams(g, f.be, dt, tensor.Host, 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range usages {
					t.Run(fmt.Sprintf("%d/%s/%s/in=%v/infer=%v/acc=%v", trial, name, dt, v.in, u.Inference, u.AccumulateGrads), func(t *testing.T) {
						env, shapes := f.shapedBlockEnv(t, seeds, dt)
						if v.in != 0 {
							env.Input = toHalf(t, f.be, env.Input, v.in)
						}
						env.Inference = u.Inference
						m := &meter{}
						if _, err := sz.bind(shapes, env.Input.Rows(), u, m); err != nil {
							t.Fatal(err)
						}
						fp, err := sz.Blocks(shapes, env.Input.Rows(), u)
						if err != nil {
							t.Fatal(err)
						}
						f.be.(backend.PeakResetter).ResetPeak()
						before := stats().InUse[tensor.Host]
						p, err := Bind(g, env, ps)
						if err != nil {
							t.Fatal(err)
						}
						defer p.Release()
						if got, want := stats().InUse[tensor.Host]-before, m.current(dt).Bytes(); got != want {
							t.Errorf("Bind allocated %d bytes, the dry binding counts %d (%+v)", got, want, m.current(dt))
						}
						if got, want := p.Allocated(), m.current(dt); got != want {
							t.Errorf("the bound program holds %+v, the dry binding %+v", got, want)
						}
						if got, want := p.Allocated().Buffers, int64(len(p.owned.ts)); got != want {
							t.Errorf("the program counts %d buffers, it owns %d", got, want)
						}
						if dt != tensor.Float32 {
							return
						}
						ctx := context.Background()
						if u.Inference {
							err = p.Forward(ctx, Mode{})
						} else if err = p.Forward(ctx, Mode{Train: true, Seed: 5, AccumulateGrads: u.AccumulateGrads}); err == nil {
							if err = f.be.Fill(p.OutputGrad(), 0.01); err == nil {
								err = p.Backward(ctx)
							}
						}
						if err != nil {
							t.Fatal(err)
						}
						st := stats()
						// An evaluation forward of two LSTM aggregations frees
						// the first one's temporaries before the backend makes
						// the second graph's schedule; the footprint counts
						// them together, a bound by less than the schedules.
						got := st.Peak[tensor.Host] - before
						bound := u.Inference && fp.GraphWords > 0 && got < fp.Bytes() && fp.Bytes()-got < 8*fp.GraphWords
						if got != fp.Bytes() && !bound {
							t.Errorf("peak %d bytes, footprint %d (%+v)", got, fp.Bytes(), fp)
						}
						// What stays: everything but the kernels' temporaries.
						m2 := &meter{}
						p2, err := sz.bind(shapes, env.Input.Rows(), u, m2)
						if err != nil {
							t.Fatal(err)
						}
						if u.Inference {
							err = p2.Forward(ctx, Mode{})
						} else if err = p2.Forward(ctx, Mode{Train: true, AccumulateGrads: u.AccumulateGrads}); err == nil {
							err = p2.Backward(ctx)
						}
						if err != nil {
							t.Fatal(err)
						}
						if got, want := st.InUse[tensor.Host]-before, m2.current(dt).Bytes(); got != want {
							t.Errorf("%d bytes in use after the run, the dry run holds %d", got, want)
						}
						want := m2.current(dt)
						want.GraphWords = 0
						if got := p.Allocated(); got != want {
							t.Errorf("after the run the program holds %+v, the dry run %+v", got, want)
						}
					})
				}
				ps.Release()
			}
		}
	}
}

// TestSizerErrors: an LSTM aggregation needs its graph's degrees, and the
// planner's errors come back.
func TestSizerErrors(t *testing.T) {
	g := linkModel(t, "sage-lstm", []int64{inDim, width, classes})
	sz, err := NewSizer(g, tensor.Float32)
	if err != nil {
		t.Fatal(err)
	}
	b0 := BlockShape{Dst: 3, Src: 5, Edges: map[string]int64{"adj": 6}}
	b1 := BlockShape{Dst: 2, Src: 3, Edges: map[string]int64{"adj": 4}}
	if _, err := sz.Blocks([]BlockShape{b0, b1}, 5, Usage{}); err == nil || !strings.Contains(err.Error(), "Degrees") {
		t.Errorf("without degrees: error %v", err)
	}
	b0.Degrees = map[string]Degrees{"adj": {Rows1: 3, Rows2: 2, Max: 2}}
	b1.Degrees = map[string]Degrees{"adj": {Rows1: 2, Rows2: 2, Max: 2}}
	if _, err := sz.Blocks([]BlockShape{b0, b1}, 5, Usage{}); err != nil {
		t.Error(err)
	}
	if _, err := sz.Blocks([]BlockShape{b0}, 5, Usage{}); err == nil {
		t.Error("no error with one block for two layers")
	}
}

// TestSizerMatchesFusedBind sizes a program whose input dropout runs
// inside its matmuls (a block of over 8,192 input rows, so that the fused
// kernel's scratch is smaller than the input both ways), and programs that
// read 16-bit input rows directly (training and inference): the footprint
// is the peak of a training step or an evaluation forward, as for every
// other program.
func TestSizerMatchesFusedBind(t *testing.T) {
	f := randomBlockFixture(5, 9000, 20000)
	seeds := make([]int32, 9000)
	for v := range seeds {
		seeds[v] = int32(v)
	}
	dt := tensor.Float32
	// The fused dropout in float32 rows, and the 16-bit rows read
	// directly by the matmuls (half.go): training and inference.
	cases := []struct {
		name  string
		layer func(b *ir.Builder, in, out int64, last bool) int32
		in    tensor.DType
		infer bool
	}{
		{"dropmm", dropMatMulLayer, 0, false},
		{"dropmm/float16", dropMatMulLayer, tensor.Float16, false},
		{"dropmm/float16/infer", dropMatMulLayer, tensor.Float16, true},
		{"gcn/bfloat16", blockModels["gcn"], tensor.BFloat16, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := linkLayers(t, c.layer, []int64{inDim, width, classes})
			sz, err := NewSizer(g, dt)
			if err != nil {
				t.Fatal(err)
			}
			sz.Input = c.in
			ps, err := NewParams(g, f.be, dt, tensor.Host, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ps.Release()
			env, shapes := f.shapedBlockEnv(t, seeds, dt)
			if c.in != 0 {
				env.Input = toHalf(t, f.be, env.Input, c.in)
			}
			env.Inference = c.infer
			fp, err := sz.Blocks(shapes, env.Input.Rows(), Usage{Inference: c.infer})
			if err != nil {
				t.Fatal(err)
			}
			f.be.(backend.PeakResetter).ResetPeak()
			before := f.be.Stats().InUse[tensor.Host]
			p, err := Bind(g, env, ps)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release()
			fused, direct := false, false
			for i := range p.g.Ops {
				fused = fused || p.aux[i].dropInto
				direct = direct || p.aux[i].halfX
			}
			if c.name == "dropmm" && !fused || c.in != 0 && (!direct || p.wideIn) {
				t.Fatalf("fused %v, read directly %v, widened %v for %d input rows", fused, direct, p.wideIn, env.Input.Rows())
			}
			ctx := context.Background()
			if c.infer {
				err = p.Forward(ctx, Mode{})
			} else if err = p.Forward(ctx, Mode{Train: true, Seed: 3}); err == nil {
				if err = f.be.Fill(p.OutputGrad(), 0.01); err == nil {
					err = p.Backward(ctx)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.be.Stats().Peak[tensor.Host] - before; got != fp.Bytes() {
				t.Errorf("peak %d bytes, footprint %d (%+v)", got, fp.Bytes(), fp)
			}
		})
	}
}
