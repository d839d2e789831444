package cpu

import (
	"context"
	"unsafe"

	"strata/core/backend"
	"strata/core/tensor"
)

// Graph kernels. Each runs the C kernel of kernels.c once per chunk of
// destination rows (or source rows, through the transposed CSR), so every
// output row is written by one goroutine in edge order: no atomics, and the
// same bits for any thread count.

func ptr(t *tensor.Tensor) unsafe.Pointer {
	if t == nil {
		return nil
	}
	return t.Buffer().(*buffer).ptr()
}

// orient returns the CSR applied for trans and its input and output sizes.
func (g *Graph) orient(trans bool) (c *csr, in, out int) {
	if trans {
		return &g.bwd, g.rows, g.cols
	}
	return &g.fwd, g.cols, g.rows
}

// SpMM computes y = A·x + beta·y, or Aᵀ·x + beta·y when trans is set.
func (b *Backend) SpMM(ctx context.Context, a backend.Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	const op = "SpMM"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	var dt tensor.DType
	if w != nil {
		dt, err = floatArgs(op, "x y w", x, y, w)
	} else {
		dt, err = floatArgs(op, "x y", x, y)
	}
	if err != nil {
		return err
	}
	c, in, out := g.orient(trans)
	name := "adjacency"
	if trans {
		name = "transposed adjacency"
	}
	if x.Rows() != in {
		return errf(op, "x has %d rows, %s has %d columns", x.Rows(), name, in)
	}
	f := x.Cols()
	if y.Rows() != out || y.Cols() != f {
		return errf(op, "y has shape %v, want [%d,%d] (%s rows × x columns)", y.Shape(), out, f, name)
	}
	if y.Buffer() == x.Buffer() || w != nil && y.Buffer() == w.Buffer() {
		return errf(op, "y must not alias x or w")
	}
	h := 1
	var wp unsafe.Pointer
	var perm *int64
	if w == nil {
		wp = g.values(dt, trans)
	} else {
		if int64(w.Rows()) != g.nnz {
			return errf(op, "w has %d rows, adjacency has %d edges", w.Rows(), g.nnz)
		}
		h = w.Cols()
		if h == 0 || f%h != 0 {
			return errf(op, "x has %d columns, not a multiple of the %d heads of w", f, h)
		}
		wp = ptr(w)
		if trans {
			perm = c.permPtr()
		}
	}
	if out == 0 || f == 0 {
		return ctxErr(ctx)
	}
	dc, it, xp, yp := dtCode(dt), c.itCode(), ptr(x), ptr(y)
	idx, ip := c.idxPtr(), &c.indptr[0]
	return b.parallel(ctx, c.chunks(f), func(lo, hi int64) {
		cSpMM(dc, it, lo, hi, ip, idx, perm, wp, int64(h), int64(f/h), xp, beta, yp)
	})
}

// SpMMMax computes the row-wise max over sources and its argmax.
func (b *Backend) SpMMMax(ctx context.Context, a backend.Adj, x, y, argmax *tensor.Tensor) error {
	const op = "SpMMMax"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	dt, err := floatArgs(op, "x y", x, y)
	if err != nil {
		return err
	}
	if err := intArg(op, "argmax", argmax); err != nil {
		return err
	}
	if x.Rows() != g.cols {
		return errf(op, "x has %d rows, adjacency has %d columns", x.Rows(), g.cols)
	}
	f := x.Cols()
	if err := dims(op, "y", y, g.rows, f); err != nil {
		return err
	}
	if err := dims(op, "argmax", argmax, g.rows, f); err != nil {
		return err
	}
	if y.Buffer() == x.Buffer() {
		return errf(op, "y must not alias x")
	}
	if g.rows == 0 || f == 0 {
		return ctxErr(ctx)
	}
	c := &g.fwd
	dc, it, at := dtCode(dt), c.itCode(), itCode(argmax.DType())
	idx, ip, xp, yp, ap := c.idxPtr(), &c.indptr[0], ptr(x), ptr(y), ptr(argmax)
	return b.parallel(ctx, c.chunks(f), func(lo, hi int64) {
		cSpMMMax(dc, it, at, lo, hi, ip, idx, xp, int64(f), yp, ap)
	})
}

// ScatterArgmax accumulates dx[argmax[i,f], f] += dy[i,f]. Goroutines own
// disjoint column blocks and walk the rows in order, so it is deterministic.
func (b *Backend) ScatterArgmax(argmax, dy, dx *tensor.Tensor) error {
	const op = "ScatterArgmax"
	dt, err := floatArgs(op, "dy dx", dy, dx)
	if err != nil {
		return err
	}
	if err := intArg(op, "argmax", argmax); err != nil {
		return err
	}
	n, f := dy.Rows(), dy.Cols()
	if err := dims(op, "argmax", argmax, n, f); err != nil {
		return err
	}
	if dx.Cols() != f {
		return errf(op, "dx has %d columns, dy has %d", dx.Cols(), f)
	}
	if err := checkRange(op, "argmax", argmax, -1, int64(dx.Rows())); err != nil {
		return err
	}
	dc, it, ap, dyp, dxp := dtCode(dt), itCode(argmax.DType()), ptr(argmax), ptr(dy), ptr(dx)
	return b.parallel(nil, b.colBounds(n, f), func(c0, c1 int64) {
		cScatterArgmax(dc, it, int64(n), ap, dyp, int64(f), c0, c1, dxp)
	})
}

// colBounds splits f columns into blocks of whole cache lines, one per
// thread, for kernels that parallelise over columns.
func (b *Backend) colBounds(n, f int) []int64 {
	const line = 16
	blocks := (int64(f) + line - 1) / line
	chunks := min(int64(b.threads), blocks, int64(n)*int64(f)/grain)
	if chunks <= 1 {
		return []int64{0, int64(f)}
	}
	bs := make([]int64, chunks+1)
	for i := range bs {
		bs[i] = min(int64(f), blocks*int64(i)/chunks*line)
	}
	return bs
}

// SDDMM computes out[e,h] = <x[dst(e)] head h, y[src(e)] head h>.
func (b *Backend) SDDMM(ctx context.Context, a backend.Adj, x, y, out *tensor.Tensor) error {
	const op = "SDDMM"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	dt, err := floatArgs(op, "x y out", x, y, out)
	if err != nil {
		return err
	}
	if x.Rows() != g.rows {
		return errf(op, "x has %d rows, adjacency has %d rows", x.Rows(), g.rows)
	}
	if y.Rows() != g.cols {
		return errf(op, "y has %d rows, adjacency has %d columns", y.Rows(), g.cols)
	}
	f := x.Cols()
	if y.Cols() != f {
		return errf(op, "x has %d columns but y has %d", f, y.Cols())
	}
	if int64(out.Rows()) != g.nnz {
		return errf(op, "out has %d rows, adjacency has %d edges", out.Rows(), g.nnz)
	}
	h := out.Cols()
	if h == 0 || f%h != 0 {
		return errf(op, "x has %d columns, not a multiple of the %d heads of out", f, h)
	}
	if g.nnz == 0 {
		return ctxErr(ctx)
	}
	c := &g.fwd
	dc, it, xp, yp, op2 := dtCode(dt), c.itCode(), ptr(x), ptr(y), ptr(out)
	idx, ip := c.idxPtr(), &c.indptr[0]
	return b.parallel(ctx, c.chunks(f), func(lo, hi int64) {
		cSDDMM(dc, it, lo, hi, ip, idx, xp, yp, int64(h), int64(f/h), op2)
	})
}

// UAddV computes out[e,h] = u[src(e),h] + v[dst(e),h].
func (b *Backend) UAddV(ctx context.Context, a backend.Adj, u, v, out *tensor.Tensor) error {
	const op = "UAddV"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	dt, err := floatArgs(op, "u v out", u, v, out)
	if err != nil {
		return err
	}
	h := u.Cols()
	if err := dims(op, "u", u, g.cols, h); err != nil {
		return err
	}
	if err := dims(op, "v", v, g.rows, h); err != nil {
		return err
	}
	if err := dims(op, "out", out, int(g.nnz), h); err != nil {
		return err
	}
	if g.nnz == 0 || h == 0 {
		return ctxErr(ctx)
	}
	c := &g.fwd
	dc, it, up, vp, op2 := dtCode(dt), c.itCode(), ptr(u), ptr(v), ptr(out)
	idx, ip := c.idxPtr(), &c.indptr[0]
	return b.parallel(ctx, c.chunks(h), func(lo, hi int64) {
		cUAddV(dc, it, lo, hi, ip, idx, up, vp, int64(h), op2)
	})
}

// EdgeReduce sums edge values into destinations, or into sources (through
// the transposed CSR and its edge permutation) when toSrc is set.
func (b *Backend) EdgeReduce(ctx context.Context, a backend.Adj, toSrc bool, e, out *tensor.Tensor) error {
	const op = "EdgeReduce"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	dt, err := floatArgs(op, "e out", e, out)
	if err != nil {
		return err
	}
	h := e.Cols()
	if int64(e.Rows()) != g.nnz {
		return errf(op, "e has %d rows, adjacency has %d edges", e.Rows(), g.nnz)
	}
	c, _, n := g.orient(toSrc)
	if err := dims(op, "out", out, n, h); err != nil {
		return err
	}
	if n == 0 || h == 0 {
		return ctxErr(ctx)
	}
	dc, ep, outp, ip, perm := dtCode(dt), ptr(e), ptr(out), &c.indptr[0], c.permPtr()
	return b.parallel(ctx, c.chunks(h), func(lo, hi int64) {
		cEdgeReduce(dc, lo, hi, ip, perm, ep, int64(h), outp)
	})
}

// edgeArgs checks edge tensors of one float dtype with shape [E,H].
func edgeArgs(op, names string, g *Graph, ts ...*tensor.Tensor) (tensor.DType, int, error) {
	dt, err := floatArgs(op, names, ts...)
	if err != nil {
		return 0, 0, err
	}
	h := ts[0].Cols()
	for i, t := range ts {
		if err := dims(op, splitName(names, i), t, int(g.nnz), h); err != nil {
			return 0, 0, err
		}
	}
	return dt, h, nil
}

// EdgeSoftmax normalises scores over the edges of each destination,
// shifting by the row maximum first; empty rows are left alone.
func (b *Backend) EdgeSoftmax(ctx context.Context, a backend.Adj, scores, out *tensor.Tensor) error {
	const op = "EdgeSoftmax"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	dt, h, err := edgeArgs(op, "scores out", g, scores, out)
	if err != nil {
		return err
	}
	if g.nnz == 0 || h == 0 {
		return ctxErr(ctx)
	}
	c := &g.fwd
	dc, sp, outp, ip := dtCode(dt), ptr(scores), ptr(out), &c.indptr[0]
	return b.parallel(ctx, c.chunks(4*h), func(lo, hi int64) {
		cEdgeSoftmax(dc, lo, hi, ip, sp, int64(h), outp)
	})
}

// EdgeSoftmaxBackward computes dscores = out·(dout − Σ_row out·dout).
func (b *Backend) EdgeSoftmaxBackward(ctx context.Context, a backend.Adj, out, dout, dscores *tensor.Tensor) error {
	const op = "EdgeSoftmaxBackward"
	g, err := graphArg(op, a)
	if err != nil {
		return err
	}
	dt, h, err := edgeArgs(op, "out dout dscores", g, out, dout, dscores)
	if err != nil {
		return err
	}
	if g.nnz == 0 || h == 0 {
		return ctxErr(ctx)
	}
	c := &g.fwd
	dc, outp, dp, dsp, ip := dtCode(dt), ptr(out), ptr(dout), ptr(dscores), &c.indptr[0]
	return b.parallel(ctx, c.chunks(2*h), func(lo, hi int64) {
		cEdgeSoftmaxBwd(dc, lo, hi, ip, outp, dp, int64(h), dsp)
	})
}
