package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// toHalf returns a float32 tensor's rows stored in dt (Float16 or
// BFloat16); the float32 tensor is released.
func toHalf(t *testing.T, be backend.Backend, x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	t.Helper()
	f := make([]float32, x.Numel())
	if err := be.Download(x, f); err != nil {
		t.Fatal(err)
	}
	be.Release(x)
	bits := make([]uint16, len(f))
	tensor.EncodeHalf(dt, bits, f)
	h, err := be.Alloc(dt, x.Shape(), tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Upload(h, bits); err != nil {
		t.Fatal(err)
	}
	return h
}

// widened returns a float32 tensor of a 16-bit tensor's values.
func widened(t *testing.T, be backend.Backend, h *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	y, err := be.Alloc(tensor.Float32, h.Shape(), tensor.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.(backend.HalfStorage).Widen(h, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// TestHalfInputMatchesWidened binds every test model, full-graph and on
// blocks, to 16-bit input rows and to the same rows widened to float32,
// with the same parameters: two training steps (outputs and parameter
// gradients) and an evaluation forward agree bit for bit, an inference
// binding too. The models whose input only matmuls read (gcn, gat,
// dropmm) hold no float32 copy of it where their regions are smaller
// than the input (the big graph); the others (sage: an aggregation and a
// narrowing read it), and small inputs, widen it into a value of the plan.
func TestHalfInputMatchesWidened(t *testing.T) {
	models := maps.Clone(blockModels)
	models["mix"], models["dropmm"] = mixLayer, dropMatMulLayer
	direct := map[string]bool{"gcn": true, "gat": true, "dropmm": true}
	small, big := randomBlockFixture(9, 300, 900), randomBlockFixture(5, 9000, 20000)
	ctx := context.Background()
	seeds := []int32{0, 5, 17, 40, 41, 99, 200, 299}
	for _, name := range append(slices.Sorted(maps.Keys(models)), "big/dropmm", "big/gcn", "big/gat") {
		f := small
		if n, ok := strings.CutPrefix(name, "big/"); ok { // big enough for the regions to be smaller than the input
			f, name = big, n
		}
		g := linkLayers(t, models[name], []int64{inDim, width, classes})
		for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
			for _, blocks := range []bool{false, true} {
				for _, infer := range []bool{false, true} {
					if f == big && blocks {
						continue
					}
					t.Run(fmt.Sprintf("%s/%v/blocks=%v/infer=%v/n=%d", name, dt, blocks, infer, f.adj.NumRows), func(t *testing.T) {
						var got [2][][]float64
						for k := range 2 {
							env := f.fullEnv(t, tensor.Float32)
							if blocks {
								env = f.blockEnv(t, seeds, tensor.Float32)
							}
							env.Inference = infer
							env.Input = toHalf(t, f.be, env.Input, dt)
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
							// Read directly only where the regions are smaller
							// than the input: the small inputs are widened.
							if want := direct[name] && f == big; k == 0 && p.wideIn == want {
								t.Fatalf("widened %v, want %v", p.wideIn, !want)
							}
							if !infer {
								got[k] = stepTrace(t, ctx, f.be, p, 3)
								continue
							}
							if err := p.Forward(ctx, Mode{}); err != nil {
								t.Fatal(err)
							}
							v, err := downloadFloats(f.be, p.Output())
							if err != nil {
								t.Fatal(err)
							}
							got[k] = append(got[k], v)
						}
						for i := range got[0] {
							if !slices.Equal(got[0][i], got[1][i]) {
								t.Fatalf("result %d differs: 16-bit %v, widened %v", i, got[0][i][:min(4, len(got[0][i]))], got[1][i][:min(4, len(got[1][i]))])
							}
						}
					})
				}
			}
		}
	}
}

// TestHalfInputErrors: a 16-bit input needs float32 math and a program
// whose input takes no gradient.
func TestHalfInputErrors(t *testing.T) {
	f := randomBlockFixture(9, 50, 100)
	g := linkLayers(t, blockModels["gcn"], []int64{inDim, width, classes})
	ps, err := NewParams(g, f.be, tensor.Float64, tensor.Host, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Release()
	env := f.fullEnv(t, tensor.Float64)
	env.Input = toHalf(t, f.be, f.fullEnv(t, tensor.Float32).Input, tensor.Float16)
	if _, err := Bind(g, env, ps); err == nil {
		t.Error("a float64 program bound a float16 input")
	}
	ps32, err := NewParams(g, f.be, tensor.Float32, tensor.Host, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer ps32.Release()
	env = f.fullEnv(t, tensor.Float32)
	env.Input, env.InputGrad = toHalf(t, f.be, env.Input, tensor.Float16), true
	if _, err := Bind(g, env, ps32); err == nil {
		t.Error("a float16 input bound with InputGrad")
	}
}
