package cpu

import (
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/ir"
	"strata/core/tensor"
)

// TestOpTableKernels checks every unary and binary function of the op
// table (ir.Ops) against its reference function and derivative, in both
// float types: Apply against F, ApplyBackward against DF·dy, Elementwise
// against F2 (same shape, row and scalar b).
func TestOpTableKernels(t *testing.T) {
	for _, dt := range dtypes {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		close := func(got, want float64) bool {
			return got == want || math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
		}
		for _, s := range ir.Ops {
			c := newTC(t, 2, dt, uint64(s.Code)+1)
			lo, hi := s.DomainLo, s.DomainHi
			if lo == 0 && hi == 0 {
				lo, hi = -2, 2
			}
			draw := func(shape ...int) (*tensor.Tensor, []float64) {
				n := 1
				for _, d := range shape {
					n *= d
				}
				v := make([]float64, n)
				for i := range v {
					v[i] = round(dt, lo+(hi-lo)*c.rng.Float64())
				}
				return c.put(shape, v), v
			}
			switch s.Class {
			case ir.ClassUnary:
				x, xv := draw(64)
				y := c.zeros(64)
				if err := c.be.Apply(backend.Unary(s.Code), s.CheckAlpha, x, y); err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				dy, dyv := c.rand(64)
				dx := c.zeros(64)
				if err := c.be.ApplyBackward(backend.Unary(s.Code), s.CheckAlpha, x, y, dy, dx); err != nil {
					t.Fatalf("%s backward: %v", s.Name, err)
				}
				yv, dxv := get(y), get(dx)
				for i := range xv {
					if want := s.F(xv[i], s.CheckAlpha); !close(yv[i], want) {
						t.Fatalf("%s %v: f(%g) = %g, want %g", s.Name, dt, xv[i], yv[i], want)
					}
					if want := s.DF(xv[i], yv[i], s.CheckAlpha) * dyv[i]; !close(dxv[i], want) {
						t.Fatalf("%s %v: f'(%g)·%g = %g, want %g", s.Name, dt, xv[i], dyv[i], dxv[i], want)
					}
				}
			case ir.ClassBinary:
				a, av := c.rand(4, 8)
				for _, bshape := range [][]int{{4, 8}, {8}, {1}} {
					b, bv := draw(bshape...)
					n := len(bv)
					y := c.zeros(4, 8)
					if err := c.be.Elementwise(backend.Binary(s.Code), a, b, y); err != nil {
						t.Fatalf("%s: %v", s.Name, err)
					}
					for i, got := range get(y) {
						if want := s.F2(av[i], bv[i%n]); !close(got, want) {
							t.Fatalf("%s %v b%v: element %d = %g, want %g", s.Name, dt, bshape, i, got, want)
						}
					}
				}
			}
		}
	}
}
