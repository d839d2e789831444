package cpu

import (
	"math"

	"strata/core/backend"
	"strata/core/tensor"
)

// TargetLoss returns the mean element-wise loss f over the rows in idx
// and every column, and writes its gradient into dout (zero elsewhere)
// when set. Repeated rows count once per occurrence.
func (b *Backend) TargetLoss(f backend.Loss, out, targets, idx, dout *tensor.Tensor) (float64, error) {
	const op = "TargetLoss"
	dt, err := chk.TargetLoss(f, out, targets, idx, dout)
	if err != nil {
		return 0, err
	}
	n := out.Rows()
	if err := checkRange(op, "idx", idx, 0, int64(n)); err != nil {
		return 0, err
	}
	rows := toInt64(idx)
	if dout != nil {
		b.Fill(dout, 0)
	}
	if len(rows) == 0 || out.Cols() == 0 {
		return 0, nil
	}
	seen := make([]bool, n)
	dup := false
	for _, r := range rows {
		dup = dup || seen[r]
		seen[r] = true
	}
	var loss float64
	if dt == tensor.Float32 {
		loss = targetLoss(b, f, fl[float32](out), fl[float32](targets), rows, out.Cols(), fl[float32](dout), dup)
	} else {
		loss = targetLoss(b, f, fl[float64](out), fl[float64](targets), rows, out.Cols(), fl[float64](dout), dup)
	}
	return loss / float64(len(rows)*out.Cols()), nil
}

// targetLoss sums the element losses over fixed chunks of idx; gradients
// go straight to their rows, or serially when idx repeats a row.
func targetLoss[T float](b *Backend, f backend.Loss, x, y []T, rows []int64, k int, dx []T, dup bool) float64 {
	inv := 1 / float64(len(rows)*k)
	be := b
	if dup {
		be = &Backend{threads: 1}
	}
	return be.reduceRows(int64(len(rows)), 1, func(lo, hi int64, p []float64) {
		for _, r := range rows[lo:hi] {
			o := int(r) * k
			for j := o; j < o+k; j++ {
				l, g := elementLoss(f, float64(x[j]), float64(y[j]))
				p[0] += l
				if dx != nil {
					dx[j] += T(g * inv)
				}
			}
		}
	})[0]
}

// elementLoss is one element's loss f of x against target y and its
// derivative in x. BCE is computed stably: max(x,0) - x·y + log1p(exp(-|x|)), with
// derivative sigmoid(x) - y.
func elementLoss(f backend.Loss, x, y float64) (loss, grad float64) {
	if f == backend.LossMSE {
		d := x - y
		return d * d, 2 * d
	}
	e := math.Exp(-math.Abs(x))
	sig := 1 / (1 + e) // sigmoid(|x|)
	if x < 0 {
		sig = e / (1 + e)
	}
	return max(x, 0) - x*y + math.Log1p(e), sig - y
}
