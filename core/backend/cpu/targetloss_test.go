package cpu

import (
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// TestTargetLossHand checks TargetLoss against values worked by hand: BCE
// of logit 0 is ln 2 whatever the target, of logit x against 0 is
// ln(1+e^x) and against 1 is ln(1+e^−x) (here x = ±2, and ±40 where a
// naive log(sigmoid) would overflow); MSE is the mean of squares.
func TestTargetLossHand(t *testing.T) {
	ln2 := math.Log(2)
	cases := []struct {
		name    string
		f       backend.Loss
		x, y    []float64
		rows    []int64
		loss    float64
		grad    []float64 // d loss / d x
		k, nRow int
	}{
		{"bce zero logits", backend.LossBCE, []float64{0, 0, 0, 0}, []float64{1, 0, 0, 1}, []int64{0, 1}, ln2, []float64{-0.125, 0.125, 0.125, -0.125}, 2, 2},
		{"bce ±2", backend.LossBCE, []float64{2, -2}, []float64{0, 0}, []int64{0}, (math.Log1p(math.Exp(2)) + math.Log1p(math.Exp(-2))) / 2,
			[]float64{1 / (1 + math.Exp(-2)) / 2, 1 / (1 + math.Exp(2)) / 2}, 2, 1},
		{"bce ±40 stable", backend.LossBCE, []float64{40, -40}, []float64{1, 0}, []int64{0}, math.Log1p(math.Exp(-40)), []float64{-math.Exp(-40) / 2, math.Exp(-40) / 2}, 2, 1},
		{"bce only the listed row", backend.LossBCE, []float64{0, 5}, []float64{1, 1}, []int64{0}, ln2, []float64{-0.5, 0}, 1, 2},
		{"mse", backend.LossMSE, []float64{1, 2, 3, 5}, []float64{0, 2, 1, 1}, []int64{0, 1}, (1 + 0 + 4 + 16) / 4.0, []float64{0.5, 0, 1, 2}, 2, 2},
		{"mse repeated row", backend.LossMSE, []float64{3, 0}, []float64{1, 0}, []int64{0, 0, 1}, (4 + 4 + 0) / 3.0, []float64{8.0 / 3, 0}, 1, 2},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			c := newTC(t, 1, tensor.Float64, 1)
			x, y := c.put([]int{cs.nRow, cs.k}, cs.x), c.put([]int{cs.nRow, cs.k}, cs.y)
			dx := c.zeros(cs.nRow, cs.k)
			loss, err := c.be.TargetLoss(cs.f, x, y, c.ints(tensor.Int64, cs.rows), dx)
			c.ok(err)
			if math.Abs(loss-cs.loss) > 1e-15*max(1, cs.loss) {
				t.Errorf("loss %v, want %v", loss, cs.loss)
			}
			for i, g := range get(dx) {
				if math.Abs(g-cs.grad[i]) > 1e-15 {
					t.Errorf("grad[%d] = %v, want %v", i, g, cs.grad[i])
				}
			}
		})
	}
}

// TestTargetLossFiniteDifferences checks the gradient of both losses
// against central differences of the loss (float64, step h): the error of
// a central difference is h²/6·|f”'| plus rounding eps·|f|/h; with h =
// 1e-5 and |f”'| ≤ 1 (BCE: σ” ≤ 0.1; MSE: 0) both stay below 1e-9.
func TestTargetLossFiniteDifferences(t *testing.T) {
	for _, f := range []backend.Loss{backend.LossBCE, backend.LossMSE} {
		t.Run(f.String(), func(t *testing.T) {
			c := newTC(t, 2, tensor.Float64, 7)
			const n, k, h = 6, 3, 1e-5
			xv := make([]float64, n*k)
			yv := make([]float64, n*k)
			for i := range xv {
				xv[i] = c.rng.Float64()*8 - 4
				yv[i] = float64(c.rng.IntN(2))
			}
			rows := c.ints(tensor.Int32, []int64{4, 1, 1, 5})
			lossAt := func(v []float64) float64 {
				l, err := c.be.TargetLoss(f, c.put([]int{n, k}, v), c.put([]int{n, k}, yv), rows, nil)
				c.ok(err)
				return l
			}
			dx := c.zeros(n, k)
			_, err := c.be.TargetLoss(f, c.put([]int{n, k}, xv), c.put([]int{n, k}, yv), rows, dx)
			c.ok(err)
			for i, g := range get(dx) {
				p, m := append([]float64(nil), xv...), append([]float64(nil), xv...)
				p[i] += h
				m[i] -= h
				if fd := (lossAt(p) - lossAt(m)) / (2 * h); math.Abs(fd-g) > 1e-9 {
					t.Errorf("d loss / d x[%d] = %v, central difference %v", i, g, fd)
				}
			}
		})
	}
}
