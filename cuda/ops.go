//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"strata/core/backend"
	"strata/core/tensor"
)

// GEMM computes c = alpha·op(a)·op(b) + beta·c through cuBLAS. Row-major
// C = A·B is the column-major Cᵀ = Bᵀ·Aᵀ, so the operands swap places.
func (b *Backend) GEMM(transA, transB bool, alpha float64, a, bm *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	dt, m, n, k, err := b.chk.GEMM(transA, transB, a, bm, c)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	defer b.enter()()
	if k == 0 { // cuBLAS leaves C alone for k = 0; the contract scales it by beta
		return b.scale(c, beta)
	}
	return b.gemmRaw(dt == tensor.Float64, transA, transB, m, n, k, alpha, ptr(a), a.Cols(), ptr(bm), bm.Cols(), beta, ptr(c), n)
}

// gemmRaw is row-major GEMM on device addresses with leading dimensions.
func (b *Backend) gemmRaw(f64, tA, tB bool, m, n, k int, alpha float64, a uintptr, lda int, bm uintptr, ldb int, beta float64, c uintptr, ldc int) error {
	if err := b.blas.gemm(f64, tB, tA, n, m, k, alpha, bm, ldb, a, lda, beta, c, ldc); err != nil {
		return fmt.Errorf("cuda: GEMM %d×%d×%d: %w", m, n, k, err)
	}
	return nil
}

// scale computes t = beta·t (beta 0 writes zeros, ignoring NaNs).
func (b *Backend) scale(t *tensor.Tensor, beta float64) error {
	if beta == 1 {
		return nil
	}
	if beta == 0 {
		return b.launch("fill_"+t.DType().Short(), int64(t.Numel()), ptr(t), int64(t.Numel()), 0.0)
	}
	return b.launch("axpby_"+t.DType().Short(), int64(t.Numel()), ptr(t), ptr(t), int64(t.Numel()), 0.0, beta)
}

// Apply computes y = f(x) elementwise.
func (b *Backend) Apply(f backend.Unary, alpha float64, x, y *tensor.Tensor) error {
	dt, err := b.chk.Apply(f, x, y)
	if err != nil {
		return err
	}
	defer b.enter()()
	n := int64(x.Numel())
	return b.launch("apply_"+dt.Short(), n, int64(f), alpha, ptr(x), ptr(y), n)
}

// ApplyBackward computes dx = f'(x)·dy; only the operands f needs must be
// set (x for ReLU, LeakyReLU and ELU; y for ELU, Sigmoid, Tanh and Exp).
func (b *Backend) ApplyBackward(f backend.Unary, alpha float64, x, y, dy, dx *tensor.Tensor) error {
	dt, x, y, err := b.chk.ApplyBackward(f, x, y, dy, dx)
	if err != nil {
		return err
	}
	defer b.enter()()
	n := int64(dy.Numel())
	return b.launch("apply_bwd_"+dt.Short(), n, int64(f), alpha, ptr(x), ptr(y), ptr(dy), ptr(dx), n)
}

// Elementwise computes y = a op b, b being a's shape, a row of a.Cols()
// elements or a scalar.
func (b *Backend) Elementwise(op backend.Binary, a, bt, y *tensor.Tensor) error {
	dt, cols, err := b.chk.Elementwise(op, a, bt, y)
	if err != nil {
		return err
	}
	n := a.Numel()
	defer b.enter()()
	return b.launch("binary_"+dt.Short(), int64(n), int64(op), ptr(a), ptr(bt), ptr(y), int64(n), int64(cols))
}

// Axpby computes y = alpha·x + beta·y; with beta 0, y is not read.
func (b *Backend) Axpby(alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	dt, err := b.chk.Axpby(x, y)
	if err != nil {
		return err
	}
	defer b.enter()()
	n := int64(x.Numel())
	return b.launch("axpby_"+dt.Short(), n, ptr(x), ptr(y), n, alpha, beta)
}

// Fill sets every element to v (converted to t's dtype).
func (b *Backend) Fill(t *tensor.Tensor, v float64) error {
	if err := b.chk.Fill(t); err != nil {
		return err
	}
	defer b.enter()()
	n := int64(t.Numel())
	return b.launch("fill_"+t.DType().Short(), n, ptr(t), n, v)
}

// CopyCols copies n columns: dst[:, dstOff+j] = src[:, srcOff+j].
func (b *Backend) CopyCols(dst *tensor.Tensor, dstOff int, src *tensor.Tensor, srcOff, n int) error {
	if err := b.chk.CopyCols(dst, dstOff, src, srcOff, n); err != nil {
		return err
	}
	dt := dst.DType()
	defer b.enter()()
	rows := int64(src.Rows())
	return b.launch("copy_cols_"+dt.Short(), rows*int64(n), ptr(dst), int64(dst.Cols()), int64(dstOff),
		ptr(src), int64(src.Cols()), int64(srcOff), rows, int64(n))
}

// scratch holds temporaries of one call, freed together.
type scratch struct {
	b   *Backend
	bfs []*buffer
}

func (s *scratch) alloc(tier tensor.Tier, bytes int64) (uintptr, error) {
	bf, err := s.b.allocRaw(tier, bytes)
	if err != nil {
		return 0, err
	}
	s.bfs = append(s.bfs, bf)
	return bf.ptr, nil
}

func (s *scratch) tensor(dt tensor.DType, tier tensor.Tier, shape ...int) (*tensor.Tensor, error) {
	n := int64(dt.Size())
	for _, d := range shape {
		n *= int64(d)
	}
	bf, err := s.b.allocRaw(tier, n)
	if err != nil {
		return nil, err
	}
	s.bfs = append(s.bfs, bf)
	return tensor.New(dt, shape, bf), nil
}

func (s *scratch) release() {
	for _, bf := range s.bfs {
		s.b.releaseRaw(bf)
	}
}

// chunkRows is the row chunk of the first stage of a column reduction of
// n×c values: it depends only on n and c, so the sums do too.
func chunkRows(n, c int64) int64 {
	const target = 1 << 16 // partial sums wanted
	return max(32, (n*max(c, 1)+target-1)/target)
}

// colsum queues the partial column sums of mode (see kernels.cu) into a
// scratch [nb, width] of doubles and returns it with nb.
func (b *Backend) colsum(sc *scratch, mode int64, dt tensor.DType, x, dy, mu, inv uintptr, n, c int64) (uintptr, int64, error) {
	chunk := chunkRows(n, c)
	nb := (n + chunk - 1) / chunk
	width := c
	if mode == 2 {
		width = 2 * c
	}
	part, err := sc.alloc(DeviceTier, 8*max(nb*width, 1))
	if err != nil {
		return 0, 0, err
	}
	return part, nb, b.launch("colsum_"+dt.Short(), nb*c, mode, x, dy, mu, inv, n, c, chunk, part)
}

// SumRows computes y[c] = Σ_i x[i,c], in double.
func (b *Backend) SumRows(x, y *tensor.Tensor) error {
	dt, err := b.chk.SumRows(x, y)
	if err != nil {
		return err
	}
	n, c := int64(x.Rows()), int64(x.Cols())
	defer b.enter()()
	sc := scratch{b: b}
	defer sc.release()
	part, nb, err := b.colsum(&sc, 0, dt, ptr(x), 0, 0, 0, n, c)
	if err != nil {
		return err
	}
	return b.launch("sum_rows_final_"+dt.Short(), c, part, nb, c, ptr(y))
}

// HeadDot computes y[n,h] = Σ_c x[n,h·C+c]·a[h,c].
func (b *Backend) HeadDot(x, a, y *tensor.Tensor) error {
	dt, h, c, err := b.chk.HeadDot(x, a, y)
	if err != nil {
		return err
	}
	n := x.Rows()
	defer b.enter()()
	return b.launch("head_dot_"+dt.Short(), int64(n*h), ptr(x), ptr(a), ptr(y), int64(n), int64(h), int64(c))
}

// HeadDotBackward accumulates dx += dy ⊗ a per head and da += Σ_n dy·x.
// Either of dx and da may be nil.
func (b *Backend) HeadDotBackward(x, a, dy, dx, da *tensor.Tensor) error {
	dt, h, c, err := b.chk.HeadDotBackward(x, a, dy, dx, da)
	if err != nil {
		return err
	}
	defer b.enter()()
	N, H, C := int64(x.Rows()), int64(h), int64(c)
	if dx != nil {
		if err := b.launch("head_dot_dx_"+dt.Short(), N*H*C, ptr(a), ptr(dy), ptr(dx), N, H, C); err != nil {
			return err
		}
	}
	if da == nil {
		return nil
	}
	sc := scratch{b: b}
	defer sc.release()
	chunk := chunkRows(N, H*C)
	nb := (N + chunk - 1) / chunk
	part, err := sc.alloc(DeviceTier, 8*max(nb*H*C, 1))
	if err != nil {
		return err
	}
	if err := b.launch("head_dot_da_part_"+dt.Short(), nb*H*C, ptr(x), ptr(dy), N, H, C, chunk, part); err != nil {
		return err
	}
	return b.launch("add_colsum_"+dt.Short(), H*C, part, nb, H*C, ptr(da))
}

// DropoutMask fills mask with 0 or 1/(1-p) from the CPU backend's stream
// (backend.DropoutMask: element (r, c) is stream index K[r]·C + c, K the
// keys in rows, or r when rows is nil), so both backends draw the same
// masks.
func (b *Backend) DropoutMask(seed uint64, rows *tensor.Tensor, p float64, mask *tensor.Tensor) error {
	dt, err := b.chk.DropoutMask(rows, p, mask)
	if err != nil {
		return err
	}
	defer b.enter()()
	return b.dropout(dt, backend.Mix64(seed), p, ptr(rows), mask.Cols(), ptr(mask), 0, 0, int64(mask.Numel()))
}

// DropoutApply computes y = x·m in one pass and stores m in mask unless it
// is nil (see the CPU backend's method of the same name).
func (b *Backend) DropoutApply(seed uint64, rows *tensor.Tensor, p float64, x, mask, y *tensor.Tensor) error {
	dt, err := b.chk.DropoutApply(rows, p, x, mask, y)
	if err != nil {
		return err
	}
	defer b.enter()()
	return b.dropout(dt, backend.Mix64(seed), p, ptr(rows), x.Cols(), ptr(mask), ptr(x), ptr(y), int64(x.Numel()))
}

// dropout launches the dropout kernel over n elements, rows of cols
// columns, from stream base base (Mix64(seed) or a DropoutBaseAt): the
// mask into mask and x·mask into y, each unless 0 (device addresses);
// keys, unless 0, holds the rows' Int64 keys.
func (b *Backend) dropout(dt tensor.DType, base uint64, p float64, keys uintptr, cols int, mask, x, y uintptr, n int64) error {
	return b.launch("dropout_"+dt.Short(), n, base, backend.DropoutThreshold(p), 1/(1-p), mask, x, y, n, keys, int64(cols))
}

// BatchNorm normalises columns with the batch mean and biased variance.
func (b *Backend) BatchNorm(x, gamma, beta, y, mean, invStd *tensor.Tensor, eps float64) error {
	dt, err := b.chk.BatchNorm(x, gamma, beta, y, mean, invStd)
	if err != nil {
		return err
	}
	defer b.enter()()
	sc := scratch{b: b}
	defer sc.release()
	n, c, s := int64(x.Rows()), int64(x.Cols()), dt.Short()
	stats, err := sc.alloc(DeviceTier, 16*c) // mu, inv in double
	if err != nil {
		return err
	}
	mu, inv := stats, stats+uintptr(8*c)
	part, nb, err := b.colsum(&sc, 0, dt, ptr(x), 0, 0, 0, n, c)
	if err != nil {
		return err
	}
	if err := b.launch("bn_mean_"+s, c, part, nb, c, n, mu, ptr(mean)); err != nil {
		return err
	}
	if part, nb, err = b.colsum(&sc, 1, dt, ptr(x), 0, mu, 0, n, c); err != nil {
		return err
	}
	if err := b.launch("bn_inv_"+s, c, part, nb, c, n, eps, inv, ptr(invStd)); err != nil {
		return err
	}
	return b.launch("bn_norm_"+s, n*c, ptr(x), mu, inv, ptr(gamma), ptr(beta), ptr(y), n, c)
}

// BatchNormBackward computes dx, dgamma and dbeta (all overwritten).
func (b *Backend) BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta *tensor.Tensor) error {
	dt, err := b.chk.BatchNormBackward(x, gamma, dy, mean, invStd, dx, dgamma, dbeta)
	if err != nil {
		return err
	}
	defer b.enter()()
	sc := scratch{b: b}
	defer sc.release()
	n, c, s := int64(x.Rows()), int64(x.Cols()), dt.Short()
	stats, err := sc.alloc(DeviceTier, 16*c)
	if err != nil {
		return err
	}
	// The statistics in double: mu from mean, inv from invStd.
	mu, inv := stats, stats+uintptr(8*c)
	if err := b.toDouble(dt, ptr(mean), mu, c); err != nil {
		return err
	}
	if err := b.toDouble(dt, ptr(invStd), inv, c); err != nil {
		return err
	}
	part, nb, err := b.colsum(&sc, 2, dt, ptr(x), ptr(dy), mu, inv, n, c)
	if err != nil {
		return err
	}
	sums, err := sc.alloc(DeviceTier, 16*c)
	if err != nil {
		return err
	}
	if err := b.launch("bn_bwd_final_"+s, 2*c, part, nb, c, sums, ptr(dbeta), ptr(dgamma)); err != nil {
		return err
	}
	return b.launch("bn_bwd_dx_"+s, n*c, ptr(x), ptr(gamma), ptr(dy), ptr(mean), ptr(invStd), sums, ptr(dx), n, c)
}

// toDouble converts n values of dtype dt at src into doubles at dst, as a
// one-row column sum.
func (b *Backend) toDouble(dt tensor.DType, src, dst uintptr, n int64) error {
	return b.launch("colsum_"+dt.Short(), n, int64(0), src, uintptr(0), uintptr(0), uintptr(0), int64(1), n, int64(1), dst)
}

// BatchNormInfer normalises with the given mean and variance.
func (b *Backend) BatchNormInfer(x, gamma, beta, mean, variance, y *tensor.Tensor, eps float64) error {
	dt, err := b.chk.BatchNormInfer(x, gamma, beta, mean, variance, y)
	if err != nil {
		return err
	}
	defer b.enter()()
	n, c := int64(x.Rows()), int64(x.Cols())
	return b.launch("bn_infer_"+dt.Short(), n*c, ptr(x), ptr(gamma), ptr(beta), ptr(mean), ptr(variance), ptr(y), n, c, eps)
}

// SoftmaxCrossEntropy returns the mean cross-entropy over the rows in idx
// and writes its gradient into dlogits (zero elsewhere) when set.
func (b *Backend) SoftmaxCrossEntropy(logits, labels, idx, dlogits *tensor.Tensor) (float64, error) {
	const op = "SoftmaxCrossEntropy"
	dt, err := b.chk.SoftmaxCrossEntropy(logits, labels, idx, dlogits)
	if err != nil {
		return 0, err
	}
	n, k := logits.Rows(), logits.Cols()
	m := int64(idx.Numel())
	total, err := b.rowLosses(dt, dlogits, m, func(loss, errBuf uintptr) error {
		return b.launch("softmax_ce_"+dt.Short()+"_"+idx.DType().Short(), m, ptr(logits), ptr(labels), ptr(idx), m,
			int64(n), int64(k), ptr(dlogits), loss, errBuf)
	}, func(pos int64) error {
		return errf(op, "idx[%d] is outside [0,%d) or its row's label is outside [0,%d)", pos, n, k)
	})
	return total / float64(max(m, 1)), err
}

// TargetLoss returns the mean element-wise loss f over the rows in idx
// and every column, and writes its gradient into dout (zero elsewhere)
// when set.
func (b *Backend) TargetLoss(f backend.Loss, out, targets, idx, dout *tensor.Tensor) (float64, error) {
	const op = "TargetLoss"
	dt, err := b.chk.TargetLoss(f, out, targets, idx, dout)
	if err != nil {
		return 0, err
	}
	n, k := out.Rows(), out.Cols()
	m := int64(idx.Numel())
	if k == 0 {
		m = 0 // no elements: a zero loss
	}
	mse := int64(0)
	if f == backend.LossMSE {
		mse = 1
	}
	total, err := b.rowLosses(dt, dout, m, func(loss, errBuf uintptr) error {
		return b.launch("target_loss_"+dt.Short()+"_"+idx.DType().Short(), m, ptr(out), ptr(targets), ptr(idx), m,
			int64(n), int64(k), mse, ptr(dout), loss, errBuf)
	}, func(pos int64) error {
		return errf(op, "idx[%d] is outside [0,%d)", pos, n)
	})
	return total / float64(max(m*int64(k), 1)), err
}

// rowLosses runs a loss kernel over m rows: it zeroes the gradient d
// (when set), has kernel write each row's loss (float64) into a scratch
// buffer, flagging bad rows (bad names them), and returns the sum of the
// losses, in the fixed order of the column sum (0 for no rows).
func (b *Backend) rowLosses(dt tensor.DType, d *tensor.Tensor, m int64, kernel func(loss, errBuf uintptr) error, bad func(pos int64) error) (float64, error) {
	defer b.enter()()
	if d != nil {
		nd := int64(d.Numel())
		if err := b.launch("fill_"+dt.Short(), nd, ptr(d), nd, 0.0); err != nil {
			return 0, err
		}
	}
	if m == 0 {
		return 0, nil
	}
	sc := scratch{b: b}
	defer sc.release()
	loss, err := sc.alloc(DeviceTier, 8*m)
	if err != nil {
		return 0, err
	}
	if err := b.checked(func(errBuf uintptr) error { return kernel(loss, errBuf) }, bad); err != nil {
		return 0, err
	}
	part, nb, err := b.colsum(&sc, 0, tensor.Float64, loss, 0, 0, 0, m, 1)
	if err != nil {
		return 0, err
	}
	total, err := sc.tensor(tensor.Float64, DeviceTier, 1)
	if err != nil {
		return 0, err
	}
	if err := b.launch("sum_rows_final_f64", 1, part, nb, int64(1), ptr(total)); err != nil {
		return 0, err
	}
	out := []float64{0}
	if err := b.fromDevice(total.Buffer().(*buffer), 0, bytesOf(out)); err != nil {
		return 0, err
	}
	return out[0], nil
}

// ArgmaxRows writes the first column holding each row's maximum.
func (b *Backend) ArgmaxRows(x, out *tensor.Tensor) error {
	dt, err := b.chk.ArgmaxRows(x, out)
	if err != nil {
		return err
	}
	defer b.enter()()
	n := int64(x.Rows())
	return b.launch("argmax_rows_"+dt.Short(), n, ptr(x), ptr(out), n, int64(x.Cols()))
}

// AdamStep updates p, m and v in place (arithmetic in double per element).
func (b *Backend) AdamStep(p, g, m, v *tensor.Tensor, lr, beta1, beta2, eps, wd float64, t int) error {
	dt, err := b.chk.AdamStep(p, g, m, v, t)
	if err != nil {
		return err
	}
	bc1 := 1 - math.Pow(beta1, float64(t))
	bc2 := 1 - math.Pow(beta2, float64(t))
	defer b.enter()()
	n := int64(p.Numel())
	return b.launch("adam_"+dt.Short(), n, ptr(p), ptr(g), ptr(m), ptr(v), n, lr, beta1, beta2, eps, wd, bc1, bc2)
}

// Gather copies rows: y[i,:] = x[idx[i],:]. x may live in pinned host
// memory: the kernel then reads its rows over the bus in place.
func (b *Backend) Gather(x, idx, y *tensor.Tensor) error {
	const op = "Gather"
	if err := b.chk.Gather(x, idx, y); err != nil {
		return err
	}
	dt, n, c := x.DType(), idx.Numel(), x.Cols()
	defer b.enter()()
	return b.checked(func(errBuf uintptr) error {
		return b.launch("gather_"+dt.Short()+"_"+idx.DType().Short(), int64(n*c), ptr(x), int64(x.Rows()), ptr(idx), ptr(y),
			int64(n), int64(c), errBuf)
	}, func(pos int64) error { return errf(op, "idx[%d] is outside [0,%d)", pos, x.Rows()) })
}

// ScatterAdd accumulates rows: y[idx[i],:] += x[i,:], with atomics: the
// order of the additions into a repeated row is not fixed.
func (b *Backend) ScatterAdd(x, idx, y *tensor.Tensor) error {
	const op = "ScatterAdd"
	dt, err := b.chk.ScatterAdd(x, idx, y)
	if err != nil {
		return err
	}
	n, c := idx.Numel(), y.Cols()
	defer b.enter()()
	return b.checked(func(errBuf uintptr) error {
		return b.launch("scatter_add_"+dt.Short()+"_"+idx.DType().Short(), int64(n*c), ptr(x), ptr(idx), ptr(y), int64(y.Rows()),
			int64(n), int64(c), errBuf)
	}, func(pos int64) error { return errf(op, "idx[%d] is outside [0,%d)", pos, y.Rows()) })
}

// ScatterArgmax accumulates dx[argmax[i,f], f] += dy[i,f] with atomics.
func (b *Backend) ScatterArgmax(argmax, dy, dx *tensor.Tensor) error {
	const op = "ScatterArgmax"
	dt, err := b.chk.ScatterArgmax(argmax, dy, dx)
	if err != nil {
		return err
	}
	defer b.enter()()
	n, f := int64(dy.Rows()), int64(dy.Cols())
	return b.checked(func(errBuf uintptr) error {
		return b.launch("scatter_argmax_"+dt.Short()+"_"+argmax.DType().Short(), n*f, ptr(argmax), ptr(dy), ptr(dx),
			int64(dx.Rows()), n, f, errBuf)
	}, func(pos int64) error { return errf(op, "argmax element %d is outside [-1,%d)", pos, dx.Rows()) })
}
