package cpu

import (
	"context"
	"math"
	"slices"

	"strata/core/backend"
	"strata/core/tensor"
)

var (
	_ backend.SegmentSelector   = (*Backend)(nil)
	_ backend.SegmentMultiplier = (*Backend)(nil)
)

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

// SegmentProd implements backend.SegmentMultiplier: per destination row
// and column, the product of its in-edge values in edge order.
func (b *Backend) SegmentProd(ctx context.Context, a backend.Adj, e, out *tensor.Tensor) error {
	g, dt, cols, err := chk.SegmentProd(a, e, out)
	if err != nil {
		return err
	}
	c := &g.fwd
	if dt == tensor.Float32 {
		return b.parallel(ctx, c.chunks(cols), func(lo, hi int64) { segmentProd(c.indptr, lo, hi, cols, fl[float32](e), fl[float32](out)) })
	}
	return b.parallel(ctx, c.chunks(cols), func(lo, hi int64) { segmentProd(c.indptr, lo, hi, cols, fl[float64](e), fl[float64](out)) })
}

func segmentProd[T float](indptr []int64, lo, hi int64, cols int, e, out []T) {
	for r := lo; r < hi; r++ {
		o := out[int(r)*cols : int(r+1)*cols]
		for c := range o {
			o[c] = 1
		}
		for k := indptr[r]; k < indptr[r+1]; k++ {
			for c, v := range e[int(k)*cols : int(k+1)*cols] {
				o[c] *= v
			}
		}
	}
}

// SegmentProdBackward implements backend.SegmentMultiplier: the product
// of a row's other factors per edge, from the row's zero count and the
// product of its non-zero factors.
func (b *Backend) SegmentProdBackward(ctx context.Context, a backend.Adj, e, dout, de *tensor.Tensor) error {
	g, dt, cols, err := chk.SegmentProdBackward(a, e, dout, de)
	if err != nil {
		return err
	}
	c := &g.fwd
	if dt == tensor.Float32 {
		return b.parallel(ctx, c.chunks(cols), func(lo, hi int64) {
			segmentProdBackward(c.indptr, lo, hi, cols, fl[float32](e), fl[float32](dout), fl[float32](de))
		})
	}
	return b.parallel(ctx, c.chunks(cols), func(lo, hi int64) {
		segmentProdBackward(c.indptr, lo, hi, cols, fl[float64](e), fl[float64](dout), fl[float64](de))
	})
}

func segmentProdBackward[T float](indptr []int64, lo, hi int64, cols int, e, dout, de []T) {
	zeros, p := make([]int32, cols), make([]T, cols) // per column of the row: zero factors, product of the others
	for r := lo; r < hi; r++ {
		k0, k1 := indptr[r], indptr[r+1]
		for c := range cols {
			zeros[c], p[c] = 0, 1
		}
		for k := k0; k < k1; k++ {
			for c, v := range e[int(k)*cols : int(k+1)*cols] {
				if v == 0 {
					zeros[c]++
				} else {
					p[c] *= v
				}
			}
		}
		dy := dout[int(r)*cols : int(r+1)*cols]
		for k := k0; k < k1; k++ {
			ev, dv := e[int(k)*cols:int(k+1)*cols], de[int(k)*cols:int(k+1)*cols]
			for c, v := range ev {
				switch {
				case zeros[c] == 0:
					dv[c] = dy[c] * p[c] / v
				case zeros[c] == 1 && v == 0:
					dv[c] = dy[c] * p[c]
				default:
					dv[c] = 0
				}
			}
		}
	}
}
