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
		return g.transposed(), g.rows, g.cols
	}
	return &g.fwd, g.cols, g.rows
}

// SpMM computes y = A·x + beta·y, or Aᵀ·x + beta·y when trans is set.
func (b *Backend) SpMM(ctx context.Context, a backend.Adj, trans bool, w, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	g, dt, h, err := chk.SpMM(a, trans, w, x, y)
	if err != nil {
		return err
	}
	if trans && beta == 0 && g.scatterT && (w != nil || dt == tensor.Float32 || g.vals32 == nil) {
		return b.spmmScatterT(ctx, g, dt, h, w, x, y)
	}
	c, _, out := g.orient(trans)
	f := x.Cols()
	var wp unsafe.Pointer
	var perm *int64
	if w == nil {
		wp = g.values(dt, trans)
	} else {
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

// spmmScatterT computes y = Aᵀ·x by scattering A's entries (k_spmmt),
// the outputs split among the goroutines in equal ranges, each reading
// all of A (Graph.ScatterTranspose).
func (b *Backend) spmmScatterT(ctx context.Context, g *Graph, dt tensor.DType, h int, w, x, y *tensor.Tensor) error {
	f := x.Cols()
	if g.cols == 0 || f == 0 {
		return ctxErr(ctx)
	}
	wp := ptr(w)
	if w == nil {
		wp = g.values(dt, false)
	}
	parts := int64(min(b.threads, g.cols))
	bounds := make([]int64, parts+1)
	for i := range bounds {
		bounds[i] = int64(g.cols) * int64(i) / parts
	}
	c := &g.fwd
	dc, it, xp, yp := dtCode(dt), c.itCode(), ptr(x), ptr(y)
	var ip *int64
	if len(c.indptr) > 0 {
		ip = &c.indptr[0]
	}
	return b.parallel(ctx, bounds, func(j0, j1 int64) {
		cSpMMT(dc, it, int64(g.rows), ip, c.idxPtr(), wp, int64(h), int64(f/h), xp, j0, j1, yp)
	})
}

// SpMMMax computes the row-wise max over sources and its argmax.
func (b *Backend) SpMMMax(ctx context.Context, a backend.Adj, x, y, argmax *tensor.Tensor) error {
	g, dt, err := chk.SpMMMax(a, x, y, argmax)
	if err != nil {
		return err
	}
	f := x.Cols()
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
	dt, err := chk.ScatterArgmax(argmax, dy, dx)
	if err != nil {
		return err
	}
	n, f := dy.Rows(), dy.Cols()
	if err := checkRange("ScatterArgmax", "argmax", argmax, -1, int64(dx.Rows())); err != nil {
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
	g, dt, h, err := chk.SDDMM(a, x, y, out)
	if err != nil {
		return err
	}
	f := x.Cols()
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
	g, dt, h, err := chk.UAddV(a, u, v, out)
	if err != nil {
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
	g, dt, h, err := chk.EdgeReduce(a, toSrc, e, out)
	if err != nil {
		return err
	}
	c, _, n := g.orient(toSrc)
	if n == 0 || h == 0 {
		return ctxErr(ctx)
	}
	dc, ep, outp, ip, perm := dtCode(dt), ptr(e), ptr(out), &c.indptr[0], c.permPtr()
	return b.parallel(ctx, c.chunks(h), func(lo, hi int64) {
		cEdgeReduce(dc, lo, hi, ip, perm, ep, int64(h), outp)
	})
}

// EdgeSoftmax normalises scores over the edges of each destination,
// shifting by the row maximum first; empty rows are left alone.
func (b *Backend) EdgeSoftmax(ctx context.Context, a backend.Adj, scores, out *tensor.Tensor) error {
	g, dt, h, err := chk.EdgeSoftmax(a, scores, out)
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
	g, dt, h, err := chk.EdgeSoftmaxBackward(a, out, dout, dscores)
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
