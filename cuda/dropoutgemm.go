//go:build cuda

package cuda

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/tensor"
)

// DropoutGEMM computes c = op(dropout(x))·b + beta·c without forming
// dropout(x) (backend.DropoutGEMMer): x is masked a block of contiguous
// rows at a time into scratch by the dropout kernel (the block's stream
// offset folded into its base, backend.DropoutBaseAt, or with row keys
// the keys from the block's first row on) and multiplied by
// cuBLAS, each block's rows of c in the forward product (transX false)
// and, for the weight gradient (transX true), block after block into c
// (beta, then 1). A composition of the existing kernels, not the cpu
// backend's tiling: the weight gradient sums the rows in block order,
// deterministic but not the unfused GEMM bit for bit.
// keep is ignored: the mask is drawn again for the weight gradient.
func (b *Backend) DropoutGEMM(seed uint64, keys *tensor.Tensor, p float64, transX bool, x, bm *tensor.Tensor, beta float64, c, scratch, _ *tensor.Tensor) error {
	dt, m, n, k, err := b.chk.GEMM(transX, false, x, bm, c)
	if err != nil {
		return err
	}
	if _, err := b.chk.DropoutApply(keys, p, x, nil, x); err != nil {
		return err
	}
	rows, cols := x.Rows(), x.Cols()
	if scratch == nil || scratch.DType() != dt || scratch.Numel() < min(backend.DropoutGEMMScratch(m, n, k), rows*cols) || scratch.Numel() < cols {
		return fmt.Errorf("cuda: DropoutGEMM: scratch of %d elements, the product needs %d of %v",
			numel(scratch), backend.DropoutGEMMScratch(m, n, k), dt)
	}
	if m == 0 || n == 0 {
		return nil
	}
	defer b.enter()()
	if k == 0 {
		return b.scale(c, beta)
	}
	f64, es := dt == tensor.Float64, uintptr(dt.Size())
	block := scratch.Numel() / cols
	for r0 := 0; r0 < rows; r0 += block {
		r1 := min(rows, r0+block)
		base, kp := backend.DropoutBaseAt(seed, r0*cols), uintptr(0)
		if keys != nil {
			base, kp = backend.Mix64(seed), ptr(keys)+uintptr(r0)*8
		}
		ne := int64((r1 - r0) * cols)
		if err := b.dropout(dt, base, p, kp, cols, 0, ptr(x)+uintptr(r0*cols)*es, ptr(scratch), ne); err != nil {
			return err
		}
		if !transX {
			err = b.gemmRaw(f64, false, false, r1-r0, n, cols, 1, ptr(scratch), cols, ptr(bm), n, beta, ptr(c)+uintptr(r0*n)*es, n)
		} else {
			bt := 1.0
			if r0 == 0 {
				bt = beta
			}
			err = b.gemmRaw(f64, true, false, cols, n, r1-r0, 1, ptr(scratch), cols, ptr(bm)+uintptr(r0*n)*es, n, bt, ptr(c), n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func numel(t *tensor.Tensor) int {
	if t == nil {
		return 0
	}
	return t.Numel()
}

// SpMMBiasAct computes y = act(A·x + bias) (backend.SpMMBiasActer) as
// its unfused sequence, SpMM, the bias added in place and the activation
// in place: it gives the engine's buffer plan the one value per fused
// chain it plans for every backend, not a faster kernel.
func (b *Backend) SpMMBiasAct(ctx context.Context, a backend.Adj, w, x, bias *tensor.Tensor, act backend.Unary, alpha float64, y *tensor.Tensor) error {
	if err := b.SpMM(ctx, a, false, w, x, 0, y); err != nil {
		return err
	}
	if err := b.Elementwise(backend.Add, y, bias, y); err != nil {
		return err
	}
	if act == backend.Identity {
		return nil
	}
	return b.Apply(act, alpha, y, y)
}
