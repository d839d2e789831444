package cpu

import (
	"strata/core/backend"
	"strata/core/tensor"
)

var _ backend.RowCopier = (*Backend)(nil)

// Row moves by host index lists (backend.RowCopier): a cpu tensor is host
// memory, so rows move between tensors and host buffers with one copy
// each, without uploading the indices or clearing the destination.

// CopyRows copies rows: y[to[i],:] = x[from[i],:] (nil from or to: i).
func (b *Backend) CopyRows(x *tensor.Tensor, from []int32, y *tensor.Tensor, to []int32) error {
	return b.tensorRows("CopyRows", x, from, y, to, false)
}

// AddRows accumulates rows: y[to[i],:] += x[from[i],:], the rows to
// distinct (nil from or to: i); each element of y receives one term, so
// the result is ScatterAdd's.
func (b *Backend) AddRows(x *tensor.Tensor, from []int32, y *tensor.Tensor, to []int32) error {
	return b.tensorRows("AddRows", x, from, y, to, true)
}

// UploadRows copies the rows of src, a []float32 or []float64 of y's
// dtype: y[to[i],:] = src row i.
func (b *Backend) UploadRows(src any, y *tensor.Tensor, to []int32) error {
	const op = "UploadRows"
	yb, err := live(op, "y", y)
	if err != nil {
		return err
	}
	switch s := src.(type) {
	case []float32:
		if y.DType() == tensor.Float32 {
			return moveRows(b, op, yb.f32, y.Cols(), to, s, nil, false)
		}
	case []float64:
		if y.DType() == tensor.Float64 {
			return moveRows(b, op, yb.f64, y.Cols(), to, s, nil, false)
		}
	}
	return errf(op, "a host buffer of type %T into a %s tensor", src, y.DType())
}

// DownloadRows copies rows into dst, a []float32 or []float64 of x's
// dtype: dst row i = x[from[i],:].
func (b *Backend) DownloadRows(x *tensor.Tensor, from []int32, dst any) error {
	const op = "DownloadRows"
	xb, err := live(op, "x", x)
	if err != nil {
		return err
	}
	switch d := dst.(type) {
	case []float32:
		if x.DType() == tensor.Float32 {
			return moveRows(b, op, d, x.Cols(), nil, xb.f32, from, false)
		}
	case []float64:
		if x.DType() == tensor.Float64 {
			return moveRows(b, op, d, x.Cols(), nil, xb.f64, from, false)
		}
	}
	return errf(op, "a %s tensor into a host buffer of type %T", x.DType(), dst)
}

// HostData returns the storage of x, a live float32 or float64 tensor:
// its []float32 or []float64, row-major, numel elements, which the
// caller may read and write in place while x is live.
func (b *Backend) HostData(x *tensor.Tensor) (any, error) {
	const op = "HostData"
	xb, err := live(op, "x", x)
	if err != nil {
		return nil, err
	}
	switch x.DType() {
	case tensor.Float32:
		return xb.f32[:x.Numel()], nil
	case tensor.Float64:
		return xb.f64[:x.Numel()], nil
	}
	return nil, errf(op, "dtype %s (float32 or float64)", x.DType())
}

// tensorRows is CopyRows (add false) and AddRows (add true).
func (b *Backend) tensorRows(op string, x *tensor.Tensor, from []int32, y *tensor.Tensor, to []int32, add bool) error {
	xb, err := live(op, "x", x)
	if err != nil {
		return err
	}
	yb, err := live(op, "y", y)
	if err != nil {
		return err
	}
	if x.DType() != y.DType() || x.Cols() != y.Cols() {
		return errf(op, "x is %s %v, y %s %v: the dtypes and widths must agree", x.DType(), x.Shape(), y.DType(), y.Shape())
	}
	cols := y.Cols()
	switch y.DType() {
	case tensor.Float32:
		return moveRows(b, op, yb.f32, cols, to, xb.f32, from, add)
	case tensor.Float64:
		return moveRows(b, op, yb.f64, cols, to, xb.f64, from, add)
	}
	return errf(op, "dtype %s (float32 or float64)", y.DType())
}

// moveRows sets (or with add, adds into) row to[i] of dst to row from[i]
// of src, both of cols columns (nil to or from: i), over row-parallel
// ranges of i; it checks the rows' counts and ranges first.
func moveRows[T float32 | float64](b *Backend, op string, dst []T, cols int, to []int32, src []T, from []int32, add bool) error {
	if cols == 0 {
		return nil
	}
	dRows, sRows := len(dst)/cols, len(src)/cols
	n := dRows
	switch {
	case to != nil:
		n = len(to)
	case from != nil:
		n = len(from)
	}
	if (from != nil && len(from) != n) || (from == nil && sRows < n) || (to == nil && dRows < n) {
		return errf(op, "%d rows to %d (%d) from %d (%d)", n, dRows, len(to), sRows, len(from))
	}
	if err := int32sIn(op, "to", to, 0, int64(dRows)); err != nil {
		return err
	}
	if err := int32sIn(op, "from", from, 0, int64(sRows)); err != nil {
		return err
	}
	at := func(idx []int32, i int) int {
		if idx == nil {
			return i
		}
		return int(idx[i])
	}
	return b.parallel(nil, b.rowBounds(int64(n), int64(n*cols)), func(lo, hi int64) {
		for i := int(lo); i < int(hi); i++ {
			d, s := at(to, i)*cols, at(from, i)*cols
			if !add {
				copy(dst[d:d+cols], src[s:s+cols])
				continue
			}
			row := dst[d : d+cols]
			for j, v := range src[s : s+cols] {
				row[j] += v
			}
		}
	})
}
