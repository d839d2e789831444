package cpu

import (
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// BenchmarkHalfLoader times the first layer's matmul over feature rows
// stored in 16 bits (data.feature_dtype) against the float32 rows, on a
// coauthor-physics-like input (4,096 × 8,415 by 64), the machine's
// threads:
//
//   - Forward (x·W) and Trans (the weight gradient xᵀ·dy), with the
//     input's dropout multiplied in (Dropout: DropoutGEMM, p = 0.5, keep
//     bits) and without (Plain: GEMM for float32, DropoutGEMM with p = 0
//     for 16-bit rows), for x in float32, float16 and bfloat16. The 16-bit
//     loader widens each region into the scratch before masking it
//     (core/backend/cpu/kernels.c, k_dropout_block_h16, k_widen_block).
//   - Widen: the whole matrix widened to float32, by the C loader (F16C's
//     VCVTPH2PS for float16, a shift for bfloat16; all threads) and by
//     core/tensor's scalar Go conversion (one thread), GB/s of float32
//     written.
func BenchmarkHalfLoader(b *testing.B) {
	m, k, n := 4096, 8415, 64
	e := &benchEnv{be: New(Options{})}
	xf := e.alloc(b, tensor.Float32, m, k)
	bits := map[tensor.DType][]uint16{}
	xs := map[tensor.DType]*tensor.Tensor{tensor.Float32: xf}
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		bits[dt] = make([]uint16, m*k)
		tensor.EncodeHalf(dt, bits[dt], F32(xf))
		x := e.alloc(b, dt, m, k)
		if err := e.be.Upload(x, bits[dt]); err != nil {
			b.Fatal(err)
		}
		xs[dt] = x
	}
	w, y := e.alloc(b, tensor.Float32, k, n), e.alloc(b, tensor.Float32, m, n)
	dy, dw := e.alloc(b, tensor.Float32, m, n), e.alloc(b, tensor.Float32, k, n)
	flops := 2 * float64(m) * float64(k) * float64(n)
	run := func(b *testing.B, flops, bytes float64, f func() error) {
		b.ResetTimer()
		for range b.N {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		report(b, flops, bytes)
	}
	for _, trans := range []bool{false, true} {
		mm, kk := m, k
		if trans {
			mm, kk = k, m
		}
		scratch := e.alloc(b, tensor.Float32, backend.DropoutGEMMScratch(mm, n, kk))
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16} {
			x, rowBytes := xs[dt], float64(m*k*dt.Size())
			keep := e.alloc(b, tensor.Int32, backend.DropoutKeepWords(m, k)...)
			if err := e.be.DropoutGEMM(7, nil, 0.5, false, x, w, 0, y, e.alloc(b, tensor.Float32, backend.DropoutGEMMScratch(m, n, k)), keep); err != nil {
				b.Fatal(err) // the forward records the bits the transposed calls read
			}
			name := map[bool]string{false: "Forward", true: "Trans"}[trans]
			b.Run(name+"/Dropout/"+dt.String(), func(b *testing.B) {
				run(b, flops, rowBytes, func() error {
					if trans {
						return e.be.DropoutGEMM(7, nil, 0.5, true, x, dy, 0, dw, scratch, keep)
					}
					return e.be.DropoutGEMM(7, nil, 0.5, false, x, w, 0, y, scratch, keep)
				})
			})
			b.Run(name+"/Plain/"+dt.String(), func(b *testing.B) {
				run(b, flops, rowBytes, func() error {
					switch {
					case dt == tensor.Float32 && trans:
						return e.be.GEMM(true, false, 1, x, dy, 0, dw)
					case dt == tensor.Float32:
						return e.be.GEMM(false, false, 1, x, w, 0, y)
					case trans:
						return e.be.DropoutGEMM(0, nil, 0, true, x, dy, 0, dw, scratch, nil)
					}
					return e.be.DropoutGEMM(0, nil, 0, false, x, w, 0, y, scratch, nil)
				})
			})
		}
	}
	out := e.alloc(b, tensor.Float32, m, k)
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		b.Run("Widen/C/"+dt.String(), func(b *testing.B) {
			run(b, 0, float64(m*k*4), func() error { return e.be.Widen(xs[dt], out) })
		})
		b.Run("Widen/Go/"+dt.String(), func(b *testing.B) {
			run(b, 0, float64(m*k*4), func() error { tensor.DecodeHalf(dt, F32(out), bits[dt]); return nil })
		})
	}
}
