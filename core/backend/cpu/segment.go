package cpu

import (
	"context"
	"math"
	"slices"

	"strata/core/backend"
	"strata/core/tensor"
)

var _ backend.SegmentSelector = (*Backend)(nil)

// SegmentSelect implements backend.SegmentSelector: per destination row and
// column, the rank-selected (q) or the nth in-edge value and its position.
func (b *Backend) SegmentSelect(ctx context.Context, a backend.Adj, q float64, nth int, e, out, idx *tensor.Tensor) error {
	g, dt, cols, err := chk.SegmentSelect(a, e, out, idx)
	if err != nil {
		return err
	}
	if !(q >= 0 && q <= 1) {
		return chk.Errf("SegmentSelect", "q = %g outside [0,1]", q)
	}
	c := &g.fwd
	bf := idx.Buffer().(*buffer)
	set := func(i int, k int64) {
		if bf.i32 != nil {
			bf.i32[i] = int32(k)
		} else {
			bf.i64[i] = k
		}
	}
	if dt == tensor.Float32 {
		return b.parallel(ctx, c.chunks(cols), func(lo, hi int64) {
			segmentSelect(c.indptr, lo, hi, q, nth, cols, fl[float32](e), fl[float32](out), set)
		})
	}
	return b.parallel(ctx, c.chunks(cols), func(lo, hi int64) {
		segmentSelect(c.indptr, lo, hi, q, nth, cols, fl[float64](e), fl[float64](out), set)
	})
}

// segmentSelect runs rows lo..hi: a stable sort of each row's edges by
// value, per column, picks the floor(q·(d-1))-th (nth < 0), else the nth
// edge in order.
func segmentSelect[T float](indptr []int64, lo, hi int64, q float64, nth, cols int, e, out []T, set func(int, int64)) {
	var order []int64
	for r := lo; r < hi; r++ {
		k0, k1 := indptr[r], indptr[r+1]
		d := k1 - k0
		for c := range cols {
			o := int(r)*cols + c
			switch {
			case nth >= 0 && int64(nth) < d:
				k := k0 + int64(nth)
				out[o] = e[int(k)*cols+c]
				set(o, k)
			case nth >= 0 || d == 0:
				out[o] = 0
				set(o, -1)
			default:
				order = order[:0]
				for k := k0; k < k1; k++ {
					order = append(order, k)
				}
				slices.SortStableFunc(order, func(x, y int64) int {
					vx, vy := e[int(x)*cols+c], e[int(y)*cols+c]
					switch {
					case vx < vy:
						return -1
					case vx > vy:
						return 1
					}
					return 0
				})
				k := order[int(math.Floor(q*float64(d-1)))]
				out[o] = e[int(k)*cols+c]
				set(o, k)
			}
		}
	}
}
