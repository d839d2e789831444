package cpu

import (
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
	if err := e.be.DropoutMask(7, 0.5, mask); err != nil {
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
	run("DropoutBackward/Regenerated", elems*8, func() error { return e.be.DropoutApply(7, 0.5, x, nil, y) })
	run("DropoutBackward/RegeneratedInPlace", elems*8, func() error { return e.be.DropoutApply(7, 0.5, y, nil, y) })
	run("DropoutForward/KeepMask", elems*12, func() error { return e.be.DropoutApply(7, 0.5, x, mask, y) })
	run("DropoutForward/NoMask", elems*8, func() error { return e.be.DropoutApply(7, 0.5, x, nil, y) })
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
