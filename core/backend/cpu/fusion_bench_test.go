package cpu

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// BenchmarkMemoryFusions times what the engine's buffer plan runs instead
// of the unfused sequences it replaced (core/engine/liveness.go), on
// 2^18 × 64 float32 values:
//
//   - DropoutBackward: dx = dy·mask with the forward's stored float mask
//     (StoredMask) against the mask made again from the seed in the same
//     pass (Regenerated, in place over dy as the plan runs it), which keeps
//     no mask (4 bytes per element less between forward and backward).
//   - DropoutForward: y = x·mask keeping the mask (KeepMask) or not (NoMask).
//   - BiasReLU: bias add then ReLU into fresh buffers (Unfused, two
//     full-size buffers) against both in place over the input (InPlace, none).
func BenchmarkMemoryFusions(b *testing.B) {
	n, c := 1<<18, 64
	e := &benchEnv{be: New(Options{})}
	x, y, z := e.alloc(b, tensor.Float32, n, c), e.alloc(b, tensor.Float32, n, c), e.alloc(b, tensor.Float32, n, c)
	mask := e.alloc(b, tensor.Float32, n, c)
	bias := e.alloc(b, tensor.Float32, c)
	if err := e.be.DropoutMask(7, nil, 0.5, mask); err != nil {
		b.Fatal(err)
	}
	elems := float64(n * c)
	run := func(name string, bytes float64, f func() error) {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, elems, bytes)
		})
	}
	run("DropoutBackward/StoredMask", elems*12, func() error { return e.be.Elementwise(backend.Mul, x, mask, y) })
	run("DropoutBackward/Regenerated", elems*8, func() error { return e.be.DropoutApply(7, nil, 0.5, x, nil, y) })
	run("DropoutBackward/RegeneratedInPlace", elems*8, func() error { return e.be.DropoutApply(7, nil, 0.5, y, nil, y) })
	run("DropoutForward/KeepMask", elems*12, func() error { return e.be.DropoutApply(7, nil, 0.5, x, mask, y) })
	run("DropoutForward/NoMask", elems*8, func() error { return e.be.DropoutApply(7, nil, 0.5, x, nil, y) })
	run("BiasReLU/Unfused", elems*16, func() error {
		if err := e.be.Elementwise(backend.Add, x, bias, y); err != nil {
			return err
		}
		return e.be.Apply(backend.ReLU, 0, y, z)
	})
	run("BiasReLU/InPlace", elems*16, func() error {
		if err := e.be.Elementwise(backend.Add, z, bias, z); err != nil {
			return err
		}
		return e.be.Apply(backend.ReLU, 0, z, z)
	})
}

// BenchmarkFusedKernels times each fused kernel against its unfused
// sequence (issue 17), float32, the machine's threads:
//
//   - DropoutGEMM: the input dropout and the first layer's matmul on a
//     coauthor-physics-like input (8,192 × 8,415 by 64; STRATA_BENCH_SCALE
//     is not read): Unfused is DropoutApply into an input-sized buffer then
//     GEMM, Fused the region-at-a-time DropoutGEMM (a scratch of
//     backend.DropoutGEMMScratch elements). Forward (x·W) and the weight
//     gradient (xᵀ·dy, Trans).
//   - SpMMBiasReLU: a GCN layer's aggregation, bias and ReLU on an R-MAT
//     2^18 graph (average degree 16) with 64 features: Unfused is SpMM,
//     Elementwise(Add) and Apply(ReLU) in place (as the buffer plan runs
//     them), Fused one SpMMBiasAct.
//
// Step runs what a training step runs of the first layer: the forward
// product and the weight gradient. Unfused is main before the fusion
// (DropoutApply with the AVX2 kernel into an input-sized buffer, GEMM,
// then GEMM over the stored buffer, Trans); Fused the two DropoutGEMMs (the forward records
// the keep bits, the weight gradient reads them), with the machine's
// dropout kernels or AVX2 only (AVX2Only). Each sub-benchmark also
// reports the process's CPU seconds per call (cpu-s/op, user+sys), which a
// loaded machine inflates less than the wall time.
//
// DropoutGEMMs/Step runs the same for a layer whose input dropout two
// matmuls read (GraphSAGE): two forward products and two weight gradients
// (benchSharedStep).
func BenchmarkFusedKernels(b *testing.B) {
	run := func(b *testing.B, flops, bytes float64, f func() error) {
		b.ResetTimer()
		c0 := cpuSeconds(b)
		for range b.N {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds(b)-c0)/float64(b.N), "cpu-s/op")
		report(b, flops, bytes)
	}
	b.Run("DropoutGEMM", func(b *testing.B) {
		m, k, n := 8192, 8415, 64
		e := &benchEnv{be: New(Options{})}
		x, w := e.alloc(b, tensor.Float32, m, k), e.alloc(b, tensor.Float32, k, n)
		y, dy, dw := e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, k, n)
		flops, bytes := 2*float64(m)*float64(k)*float64(n), float64(m*k*4)
		keep := e.alloc(b, tensor.Int32, backend.DropoutKeepWords(m, k)...)
		if err := e.be.DropoutGEMM(7, nil, 0.5, false, x, w, 0, y, e.alloc(b, tensor.Float32, backend.DropoutGEMMScratch(m, n, k)), keep); err != nil {
			b.Fatal(err) // the forward records the bits the transposed calls read
		}
		for _, trans := range []bool{false, true} {
			name := map[bool]string{false: "Forward", true: "Trans"}[trans]
			b.Run(name+"/Unfused", func(b *testing.B) {
				xd := e.alloc(b, tensor.Float32, m, k)
				defer e.be.Release(xd)
				run(b, flops, bytes*3, func() error {
					if err := e.be.DropoutApply(7, nil, 0.5, x, nil, xd); err != nil {
						return err
					}
					if trans {
						return e.be.GEMM(true, false, 1, xd, dy, 0, dw)
					}
					return e.be.GEMM(false, false, 1, xd, w, 0, y)
				})
			})
			b.Run(name+"/Fused", func(b *testing.B) {
				mm, kk := m, k
				if trans {
					mm, kk = k, m
				}
				scratch := e.alloc(b, tensor.Float32, backend.DropoutGEMMScratch(mm, n, kk))
				defer e.be.Release(scratch)
				run(b, flops, bytes, func() error {
					if trans {
						return e.be.DropoutGEMM(7, nil, 0.5, true, x, dy, 0, dw, scratch, keep)
					}
					return e.be.DropoutGEMM(7, nil, 0.5, false, x, w, 0, y, scratch, keep)
				})
			})
		}
	})
	for _, input := range []string{"Dense", "Sparse", "SparseWrapped"} {
		b.Run("DropoutGEMM/Step/"+input, func(b *testing.B) { benchStep(b, run, input) })
	}
	for _, input := range []string{"Dense", "Sparse", "SparseWrapped"} {
		b.Run("DropoutGEMMs/Step/"+input, func(b *testing.B) { benchSharedStep(b, run, input) })
	}
	b.Run("SpMMBiasReLU", func(b *testing.B) {
		e := newBench(b, 18, "random")
		n, nnz, f := e.g.NumRows, int(e.g.NNZ()), 64
		w, x, y := e.alloc(b, tensor.Float32, nnz), e.alloc(b, tensor.Float32, n, f), e.alloc(b, tensor.Float32, n, f)
		bias := e.alloc(b, tensor.Float32, f)
		flops, bytes := 2*float64(nnz)*float64(f), spmmBytes(n, nnz, f)
		b.Run("Unfused", func(b *testing.B) {
			run(b, flops, bytes+float64(n*f*16), func() error {
				if err := e.be.SpMM(ctx, e.a, false, w, x, 0, y); err != nil {
					return err
				}
				if err := e.be.Elementwise(backend.Add, y, bias, y); err != nil {
					return err
				}
				return e.be.Apply(backend.ReLU, 0, y, y)
			})
		})
		b.Run("Fused", func(b *testing.B) {
			run(b, flops, bytes, func() error {
				return e.be.SpMMBiasAct(ctx, e.a, w, x, bias, backend.ReLU, 0, y)
			})
		})
	})
}

// cpuSeconds is the process's user+sys CPU time so far.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// stepInput is the x of BenchmarkFusedKernels' Step benchmarks: m × k,
// "Dense" (whatever the allocation holds), "Sparse" (0.4% non-zero, as
// coauthor-physics' keyword counts, allocated: masked densely) or
// "SparseWrapped" (the same values wrapped, as training's input features
// are: masked from their index of non-zero elements, sparserows.go).
func stepInput(b *testing.B, e *benchEnv, m, k int, input string) *tensor.Tensor {
	if input == "Dense" {
		return e.alloc(b, tensor.Float32, m, k)
	}
	r := rand.New(rand.NewPCG(3, 4))
	xs := make([]float32, m*k)
	for i := range xs {
		if r.IntN(1000) < 4 {
			xs[i] = float32(1 + r.IntN(3))
		}
	}
	if input == "SparseWrapped" {
		x, err := e.be.WrapHost(xs, []int{m, k})
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	x := e.alloc(b, tensor.Float32, m, k)
	copy(F32(x), xs)
	return x
}

// benchStep is BenchmarkFusedKernels' Step on an input of stepInput's.
func benchStep(b *testing.B, run func(b *testing.B, flops, bytes float64, f func() error), input string) {
	m, k, n := 8192, 8415, 64
	e := &benchEnv{be: New(Options{})}
	narrow := New(Options{AVX2Only: true})
	x, w := stepInput(b, e, m, k, input), e.alloc(b, tensor.Float32, k, n)
	y, dy, dw := e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, k, n)
	flops, bytes := 4*float64(m)*float64(k)*float64(n), float64(m*k*4)
	b.Run("Unfused", func(b *testing.B) {
		xd := e.alloc(b, tensor.Float32, m, k)
		defer e.be.Release(xd)
		run(b, flops, bytes*4, func() error {
			if err := narrow.DropoutApply(7, nil, 0.5, x, nil, xd); err != nil {
				return err
			}
			if err := e.be.GEMM(false, false, 1, xd, w, 0, y); err != nil {
				return err
			}
			return e.be.GEMM(true, false, 1, xd, dy, 0, dw)
		})
	})
	for _, v := range []struct {
		name string
		be   *Backend
	}{{"Fused", e.be}, {"FusedAVX2Only", narrow}} {
		b.Run(v.name, func(b *testing.B) {
			keep := e.alloc(b, tensor.Int32, backend.DropoutKeepWords(m, k)...)
			scratch := e.alloc(b, tensor.Float32, max(backend.DropoutGEMMScratch(m, n, k), backend.DropoutGEMMScratch(k, n, m)))
			defer e.be.Release(keep)
			defer e.be.Release(scratch)
			run(b, flops, bytes*2, func() error {
				if err := v.be.DropoutGEMM(7, nil, 0.5, false, x, w, 0, y, scratch, keep); err != nil {
					return err
				}
				return v.be.DropoutGEMM(7, nil, 0.5, true, x, dy, 0, dw, scratch, keep)
			})
		})
	}
}

// benchSharedStep is what a training step runs of a GraphSAGE first
// layer, whose input dropout two matmuls read (self and neighbour
// weights): both forward products and both weight gradients. Unfused is
// main before the fusion (DropoutApply with the AVX2 kernel into an
// input-sized buffer once, then four GEMMs over it), PerProduct the four
// DropoutGEMMs the engine ran before DropoutGEMMs (a masking pass each),
// Shared two DropoutGEMMs calls (one masking pass forward, one for the
// weight gradients).
func benchSharedStep(b *testing.B, run func(b *testing.B, flops, bytes float64, f func() error), input string) {
	m, k, n := 8192, 8415, 64
	e := &benchEnv{be: New(Options{})}
	narrow := New(Options{AVX2Only: true})
	x := stepInput(b, e, m, k, input)
	w1, w2 := e.alloc(b, tensor.Float32, k, n), e.alloc(b, tensor.Float32, k, n)
	y1, y2 := e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, m, n)
	dy1, dy2 := e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, m, n)
	dw1, dw2 := e.alloc(b, tensor.Float32, k, n), e.alloc(b, tensor.Float32, k, n)
	flops, bytes := 8*float64(m)*float64(k)*float64(n), float64(m*k*4)
	b.Run("Unfused", func(b *testing.B) {
		xd := e.alloc(b, tensor.Float32, m, k)
		defer e.be.Release(xd)
		run(b, flops, bytes*6, func() error {
			if err := narrow.DropoutApply(7, nil, 0.5, x, nil, xd); err != nil {
				return err
			}
			for _, g := range []struct {
				trans bool
				b, c  *tensor.Tensor
			}{{false, w1, y1}, {false, w2, y2}, {true, dy1, dw1}, {true, dy2, dw2}} {
				if err := e.be.GEMM(g.trans, false, 1, xd, g.b, 0, g.c); err != nil {
					return err
				}
			}
			return nil
		})
	})
	keep := e.alloc(b, tensor.Int32, backend.DropoutKeepWords(m, k)...)
	scratch := e.alloc(b, tensor.Float32, max(backend.DropoutGEMMScratch(m, n, k), backend.DropoutGEMMScratch(k, n, m)))
	defer e.be.Release(keep)
	defer e.be.Release(scratch)
	b.Run("PerProduct", func(b *testing.B) {
		run(b, flops, bytes*4, func() error {
			for _, g := range []struct {
				trans bool
				b, c  *tensor.Tensor
			}{{false, w1, y1}, {false, w2, y2}, {true, dy1, dw1}, {true, dy2, dw2}} {
				if err := e.be.DropoutGEMM(7, nil, 0.5, g.trans, x, g.b, 0, g.c, scratch, keep); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("Shared", func(b *testing.B) {
		run(b, flops, bytes*2, func() error {
			if err := e.be.DropoutGEMMs(7, nil, 0.5, false, x, []backend.DropoutProduct{{B: w1, C: y1}, {B: w2, C: y2}}, scratch, keep); err != nil {
				return err
			}
			return e.be.DropoutGEMMs(7, nil, 0.5, true, x, []backend.DropoutProduct{{B: dy1, C: dw1}, {B: dy2, C: dw2}}, scratch, keep)
		})
	})
}
