package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// chainLayer strings together the elementwise ops that the buffer plan
// runs in place (bias, ReLU, dropout, tanh, add, scale, sigmoid, ELU) with
// a value read twice and one read by the backward (tanh's output).
func chainLayer(b *ir.Builder, in, out int64, last bool) int32 {
	x := b.Input("x", in)
	h := b.Aggregate(b.Graph("adj_self"), b.MatMul(x, b.Param("w", []int64{in, out}, "glorot")), "gcn")
	h = b.Unary(ir.OpReLU, b.Bias(h, b.Param("b", []int64{out}, "normal")), 0)
	h = b.Unary(ir.OpDropout, h, 0.5)
	t := b.Unary(ir.OpTanh, h, 0)
	h = b.Binary(ir.OpAdd, t, b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot")))
	h = b.Unary(ir.OpScale, b.Binary(ir.OpMul, h, t), 0.5)
	if !last {
		h = b.Unary(ir.OpELU, b.Unary(ir.OpSigmoid, h, 0), 1)
	}
	return h
}

// dropMatMulLayer reads a dropout of its input with two matmuls (GCN's
// and SAGE's input dropout): the first layer's runs inside them
// (fuseInputDropouts), a later layer's is formed.
func dropMatMulLayer(b *ir.Builder, in, out int64, last bool) int32 {
	x := b.Unary(ir.OpDropout, b.Input("x", in), 0.5)
	h := b.Aggregate(b.Graph("adj_self"), b.MatMul(x, b.Param("w", []int64{in, out}, "glorot")), "gcn")
	h = b.Binary(ir.OpAdd, h, b.MatMul(x, b.Param("wr", []int64{in, out}, "glorot")))
	h = b.Bias(h, b.Param("b", []int64{out}, "normal"))
	if !last {
		h = b.Unary(ir.OpReLU, h, 0)
	}
	return h
}

// TestBufferPlanMatchesUnshared runs every test model, full-graph and on
// blocks, with the buffer plan and with a buffer for every value, gradient
// and mask: the losses, outputs, last hidden values and parameter
// gradients of a training step, and the outputs of an evaluation forward,
// agree bit for bit, and the plan holds fewer bytes.
func TestBufferPlanMatchesUnshared(t *testing.T) {
	models := maps.Clone(blockModels)
	models["mix"], models["chain"], models["dropmm"] = mixLayer, chainLayer, dropMatMulLayer
	f := randomBlockFixture(23, 60, 200)
	seeds := []int32{1, 5, 9, 17, 33, 40}
	ctx := context.Background()
	for _, name := range slices.Sorted(maps.Keys(models)) {
		for _, blocks := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/blocks=%v", name, blocks), func(t *testing.T) {
				g := linkLayers(t, models[name], []int64{inDim, width, classes})
				var got [2][][]float64
				var held [2]int64
				for k, share := range []bool{true, false} {
					ps, err := NewParams(g, f.be, tensor.Float32, tensor.Host, 3)
					if err != nil {
						t.Fatal(err)
					}
					defer ps.Release()
					env := f.fullEnv(t, tensor.Float32)
					if blocks {
						env = f.blockEnv(t, seeds, tensor.Float32)
					}
					p, err := bindShare(g, env, ps, nil, share)
					if err != nil {
						t.Fatal(err)
					}
					defer p.Release()
					held[k] = p.Allocated().Bytes()
					got[k] = stepTrace(t, ctx, f.be, p, 1)
					if h, ok := g.LastHidden(); ok {
						v, err := downloadFloats(f.be, p.Value(h))
						if err != nil {
							t.Fatal(err)
						}
						got[k] = append(got[k], v)
					}
				}
				for i := range got[0] {
					if !slices.Equal(got[0][i], got[1][i]) {
						t.Fatalf("result %d differs: planned %v, unshared %v", i, got[0][i][:min(4, len(got[0][i]))], got[1][i][:min(4, len(got[1][i]))])
					}
				}
				if held[0] >= held[1] && name != "sage-lstm" {
					t.Errorf("the plan holds %d bytes, unshared %d", held[0], held[1])
				}
				t.Logf("planned %d bytes, unshared %d", held[0], held[1])
			})
		}
	}
}

var _ backend.Backend = dryBackend{}

// TestInputDropoutFused binds a model whose first layer reads its input's
// dropout with two matmuls to a graph of 9,000 nodes (large enough that
// the fused kernel's scratch, in the forward and in the weight gradient's
// split inner dimension, is smaller than the input): a training binding
// forms no value for that dropout (a later layer's is formed, an
// inference binding fuses nothing), holds less than the reference binding
// without sharing, and gives its outputs and parameter gradients bit for
// bit, in float32 and float64.
func TestInputDropoutFused(t *testing.T) {
	f := randomBlockFixture(5, 9000, 20000)
	g := linkLayers(t, dropMatMulLayer, []int64{inDim, width, classes})
	ctx := context.Background()
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		var got [2][][]float64
		var held [2]int64
		for k, share := range []bool{true, false} {
			ps, err := NewParams(g, f.be, dt, tensor.Host, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer ps.Release()
			p, err := bindShare(g, f.fullEnv(t, dt), ps, nil, share)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release()
			held[k] = p.Allocated().Bytes()
			var fused, formed int
			for i, op := range p.g.Ops {
				if op.Kind == ir.OpDropout && p.aux[i].dropInto {
					fused++
				} else if op.Kind == ir.OpDropout {
					formed++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[share]; fused != want || formed != 2-want {
				t.Fatalf("%v share=%v: fused %d dropouts and formed %d, want %d and %d", dt, share, fused, formed, want, 2-want)
			}
			// What a cost model reads: the dropouts a training binding
			// multiplies in, from the graph alone.
			if share {
				marked := MultipliedInDropouts(p.g)
				for i := range p.g.Ops {
					if marked[i] != p.aux[i].dropInto {
						t.Errorf("%v: MultipliedInDropouts marks op %d (%s) %v, the binding fused it: %v", dt, i, p.g.Ops[i].Kind, marked[i], p.aux[i].dropInto)
					}
				}
				if n := len(slices.DeleteFunc(MultipliedInDropouts(g), func(b bool) bool { return !b })); n != 1 {
					t.Errorf("%v: MultipliedInDropouts marks %d ops of the model, want its one input dropout", dt, n)
				}
			}
			got[k] = stepTrace(t, ctx, f.be, p, 7)
		}
		for i := range got[0] {
			if !slices.Equal(got[0][i], got[1][i]) {
				t.Fatalf("%v: result %d differs: fused %v, unfused %v", dt, i, got[0][i][:min(4, len(got[0][i]))], got[1][i][:min(4, len(got[1][i]))])
			}
		}
		if in := int64(9000 * inDim * dt.Size()); held[0] > held[1]-in {
			t.Errorf("%v: the fused binding holds %d bytes, the unshared %d: not an input's %d less", dt, held[0], held[1], in)
		}
	}
	ps, err := NewParams(g, f.be, tensor.Float32, tensor.Host, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Release()
	env := f.fullEnv(t, tensor.Float32)
	env.Inference = true
	p, err := Bind(g, env, ps)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	for i := range p.g.Ops {
		if p.aux[i].dropInto {
			t.Errorf("an inference binding fused dropout #%d", i)
		}
	}
}

// stepTrace runs two training steps of p (seeds seed and seed+1, the
// output gradient filled with 0.25) and an evaluation forward, and
// returns every step's output and parameter gradients, then the
// evaluation's output.
func stepTrace(t *testing.T, ctx context.Context, be backend.Backend, p *Program, seed uint64) [][]float64 {
	t.Helper()
	var got [][]float64
	down := func(x *tensor.Tensor) {
		v, err := downloadFloats(be, x)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	for step := range 2 {
		if err := p.Forward(ctx, Mode{Train: true, Seed: seed + uint64(step)}); err != nil {
			t.Fatal(err)
		}
		down(p.Output())
		if err := be.Fill(p.OutputGrad(), 0.25); err != nil {
			t.Fatal(err)
		}
		if err := p.Backward(ctx); err != nil {
			t.Fatal(err)
		}
		for _, pr := range p.Params() {
			down(pr.Grad)
		}
	}
	if err := p.Forward(ctx, Mode{}); err != nil {
		t.Fatal(err)
	}
	down(p.Output())
	return got
}
