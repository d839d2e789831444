package cpu

import "strata/core/tensor"

// Gather copies rows: y[i,:] = x[idx[i],:]. Any dtype.
func (b *Backend) Gather(x, idx, y *tensor.Tensor) error {
	if err := chk.Gather(x, idx, y); err != nil {
		return err
	}
	n, f := idx.Numel(), x.Cols()
	if err := checkRange("Gather", "idx", idx, 0, int64(x.Rows())); err != nil {
		return err
	}
	if n == 0 || f == 0 {
		return nil
	}
	it, ip, xp, yp, rb := itCode(idx.DType()), ptr(idx), ptr(x), ptr(y), int64(f*x.DType().Size())
	return b.parallel(nil, b.rowBounds(int64(n), int64(n*f)), func(lo, hi int64) {
		cGather(it, lo, hi, ip, xp, rb, yp)
	})
}

// ScatterAdd accumulates rows: y[idx[i],:] += x[i,:]. It is deterministic
// without atomics or a grouping pass: goroutines own disjoint column blocks
// of y and each walks all of idx in order, so every y[r,c] receives its
// terms in increasing i whatever the thread count.
func (b *Backend) ScatterAdd(x, idx, y *tensor.Tensor) error {
	dt, err := chk.ScatterAdd(x, idx, y)
	if err != nil {
		return err
	}
	n, f := idx.Numel(), x.Cols()
	if err := checkRange("ScatterAdd", "idx", idx, 0, int64(y.Rows())); err != nil {
		return err
	}
	if n == 0 || f == 0 {
		return nil
	}
	dc, it, ip, xp, yp := dtCode(dt), itCode(idx.DType()), ptr(idx), ptr(x), ptr(y)
	return b.parallel(nil, b.colBounds(n, f), func(c0, c1 int64) {
		cScatterAdd(dc, it, int64(n), ip, xp, int64(f), c0, c1, yp)
	})
}

// CopyCols copies n columns: dst[:, dstOff+j] = src[:, srcOff+j]. It is a
// row-wise memmove, done in Go; any dtype.
func (b *Backend) CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error {
	if err := chk.CopyCols(dst, dstOff, src, srcOff, n); err != nil {
		return err
	}
	db, sb := dst.Buffer().(*buffer), src.Buffer().(*buffer)
	rows, dc, sc := dst.Rows(), dst.Cols(), src.Cols()
	if rows == 0 || n == 0 {
		return nil
	}
	return b.parallel(nil, b.rowBounds(int64(rows), int64(rows*n)), func(lo, hi int64) {
		copyCols(db.f32, sb.f32, lo, hi, dc, sc, dstOff, srcOff, n)
		copyCols(db.f64, sb.f64, lo, hi, dc, sc, dstOff, srcOff, n)
		copyCols(db.i32, sb.i32, lo, hi, dc, sc, dstOff, srcOff, n)
		copyCols(db.i64, sb.i64, lo, hi, dc, sc, dstOff, srcOff, n)
	})
}

func copyCols[T any](d, s []T, lo, hi int64, dc, sc, doff, soff, n int) {
	if len(d) == 0 {
		return
	}
	for i := int(lo); i < int(hi); i++ {
		copy(d[i*dc+doff:i*dc+doff+n], s[i*sc+soff:i*sc+soff+n])
	}
}

// HeadDot computes y[n,h] = Σ_c x[n,h·C+c]·a[h,c].
func (b *Backend) HeadDot(x, a, y *tensor.Tensor) error {
	dt, h, c, err := chk.HeadDot(x, a, y)
	if err != nil {
		return err
	}
	n := x.Rows()
	if n == 0 || h == 0 {
		return nil
	}
	dc, xp, ap, yp := dtCode(dt), ptr(x), ptr(a), ptr(y)
	return b.parallel(nil, b.rowBounds(int64(n), int64(n*h*c)), func(lo, hi int64) {
		cHeadDot(dc, lo, hi, xp, ap, int64(h), int64(c), yp)
	})
}

// HeadDotBackward accumulates dx += dy ⊗ a per head and da += Σ_n dy·x. Either
// of dx and da may be nil. The da sum runs over fixed row chunks in float64.
func (b *Backend) HeadDotBackward(x, a, dy, dx, da *tensor.Tensor) error {
	dt, h, c, err := chk.HeadDotBackward(x, a, dy, dx, da)
	if err != nil {
		return err
	}
	n := x.Rows()
	f := int64(h * c)
	if n == 0 || f == 0 {
		return nil
	}
	dc, xp, ap, dyp := dtCode(dt), ptr(x), ptr(a), ptr(dy)
	if dx != nil {
		dxp := ptr(dx)
		if err := b.parallel(nil, b.rowBounds(int64(n), int64(n)*f), func(lo, hi int64) {
			cHeadDotDx(dc, lo, hi, ap, dyp, int64(h), int64(c), dxp)
		}); err != nil {
			return err
		}
	}
	if da != nil {
		sum := b.reduceRows(int64(n), f, func(lo, hi int64, part []float64) {
			cHeadDotDa(dc, lo, hi, xp, dyp, int64(h), int64(c), &part[0])
		})
		addFloat64(da, sum)
	}
	return nil
}

// addFloat64 adds s to t elementwise, rounding once to t's dtype.
func addFloat64(t *tensor.Tensor, s []float64) {
	if d := F32(t); d != nil {
		for i := range d {
			d[i] = float32(float64(d[i]) + s[i])
		}
		return
	}
	d := F64(t)
	for i := range d {
		d[i] += s[i]
	}
}

// setFloat64 stores s into t, rounding to t's dtype.
func setFloat64(t *tensor.Tensor, s []float64) {
	if d := F32(t); d != nil {
		for i := range d {
			d[i] = float32(s[i])
		}
		return
	}
	copy(F64(t), s)
}
