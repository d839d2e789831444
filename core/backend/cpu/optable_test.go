package cpu

import (
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest/ref"
	"strata/core/ir"
	"strata/core/tensor"
	"strata/internal/floattol"
)

// TestOpTableKernels checks every unary and binary function of the op
// table (ir.Ops) against its reference function and derivative, in both
// float types: Apply against F, ApplyBackward against DF·dy, Elementwise
// against F2 (same shape, row and scalar b), each within the bound of its
// error model (backendtest/ref).
func TestOpTableKernels(t *testing.T) {
	for _, dt := range dtypes {
		close := func(got float64, want ref.Val) bool {
			i, _ := floattol.Exceeds([]float64{got}, []float64{want.V}, []float64{want.E})
			return i < 0
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
				m, err := ref.UnaryModel(s)
				c.ok(err)
				for i := range xv {
					x := floattol.In(xv[i])
					if want := m.Fwd(c.ar(), x, s.CheckAlpha); want.V != s.F(xv[i], s.CheckAlpha) || !close(yv[i], want) {
						t.Fatalf("%s %v: f(%g) = %g, want %g ± %.3g (op table: %g)", s.Name, dt, xv[i], yv[i], want.V, want.E, s.F(xv[i], s.CheckAlpha))
					}
					want := m.Bwd(c.ar(), x, floattol.In(yv[i]), floattol.In(dyv[i]), s.CheckAlpha)
					// The model's gradient is the table's formula, up to the
					// order of two float64 products (2 roundings each side).
					if table := s.DF(xv[i], yv[i], s.CheckAlpha) * dyv[i]; math.Abs(want.V-table) > 4*floattol.UFloat64*math.Abs(table) || !close(dxv[i], want) {
						t.Fatalf("%s %v: f'(%g)·%g = %g, want %g ± %.3g (op table: %g)", s.Name, dt, xv[i], dyv[i], dxv[i], want.V, want.E, table)
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
					want, err := ref.Binary(c.ar(), s.Name, av, bv)
					c.ok(err)
					for i, got := range get(y) {
						if table := s.F2(av[i], bv[i%n]); want[i].V != table || !close(got, want[i]) {
							t.Fatalf("%s %v b%v: element %d = %g, want %g ± %.3g (op table: %g)", s.Name, dt, bshape, i, got, want[i].V, want[i].E, table)
						}
					}
				}
			}
		}
	}
}
