package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"strata/core/tensor"
)

// sparseFeatures returns a rows×cols float32 tensor with about density
// of its elements non-zero (uniform positions, values in (0, 1]).
func sparseFeatures(tb testing.TB, be *Backend, rows, cols int, density float64, seed uint64) *tensor.Tensor {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	v := make([]float32, rows*cols)
	for i := range v {
		if rng.Float64() < density {
			v[i] = 1 - rng.Float32()
		}
	}
	x, err := be.Alloc(tensor.Float32, []int{rows, cols}, tensor.Host)
	if err == nil {
		err = be.Upload(x, v)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return x
}

// BenchmarkSparseInput times a first layer's two products with its input
// x [3327, 3703] (CiteSeer's shape), x·W and xᵀ·dy for a width n, as
// GEMM ("dense") and as the SpMM pair over x's non-zeros ("sparse"), at
// densities from 0.5% to 20%: where sparse stops winning is
// sparseInputMaxDensity (docs/decisions.md). Run it with
// -benchtime=20x and GOMAXPROCS as the training run's threads.
func BenchmarkSparseInput(b *testing.B) {
	const rows, cols = 3327, 3703
	for _, n := range []int{16, 32, 64, 256} {
		for _, d := range []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2} {
			be := New(Options{})
			x := sparseFeatures(b, be, rows, cols, d, 1)
			e := &benchEnv{be: be}
			w, y := e.alloc(b, tensor.Float32, cols, n), e.alloc(b, tensor.Float32, rows, n)
			dy, dw := e.alloc(b, tensor.Float32, rows, n), e.alloc(b, tensor.Float32, cols, n)
			b.Run(fmt.Sprintf("n=%d/density=%g/dense", n, d), func(b *testing.B) {
				for range b.N {
					if err := be.GEMM(false, false, 1, x, w, 0, y); err != nil {
						b.Fatal(err)
					}
					if err := be.GEMM(true, false, 1, x, dy, 0, dw); err != nil {
						b.Fatal(err)
					}
				}
			})
			m, ok, err := be.SparseInput(x, int64(rows)*cols, tensor.Host)
			if err != nil || !ok {
				b.Fatal(ok, err)
			}
			b.Run(fmt.Sprintf("n=%d/density=%g/sparse", n, d), func(b *testing.B) {
				ctx := context.Background()
				for range b.N {
					if err := be.SpMM(ctx, m.Adj, false, m.Values, w, 0, y); err != nil {
						b.Fatal(err)
					}
					if err := be.SpMM(ctx, m.Adj, true, m.Values, dy, 0, dw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
