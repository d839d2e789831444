package cpu

/*
#include "kernels.h"
*/
import "C"

import (
	"unsafe"

	"gonum.org/v1/netlib/blas/netlib"

	"strata/core/backend"
	"strata/core/tensor"
)

// Feature rows stored in 16 bits (backend.HalfStorage): the bits live in
// a []uint16 buffer, and the kernels that read them widen them to float32
// in C (F16C's VCVTPH2PS for binary16, a shift for bfloat16) into a region
// of scratch that the float32 math then reads.

var _ backend.HalfStorage = (*Backend)(nil)

// halfCode is the C kernels' code of a 16-bit dtype: 0 binary16, 1 bfloat16.
func halfCode(dt tensor.DType) C.int {
	if dt == tensor.BFloat16 {
		return 1
	}
	return 0
}

// Widen writes x (Float16 or BFloat16) into y (Float32, as many elements)
// exactly, in parallel over rows.
func (b *Backend) Widen(x, y *tensor.Tensor) error {
	if err := chk.Lives("Widen", "x y", x, y); err != nil {
		return err
	}
	if !x.DType().IsHalf() || y.DType() != tensor.Float32 || x.Numel() != y.Numel() {
		return errf("Widen", "x %v must be float16 or bfloat16 and y %v float32 with as many elements", x, y)
	}
	if x.Numel() == 0 {
		return nil
	}
	xs, ys, cols := U16(x), F32(y), x.Cols()
	b.eachRow(x.Rows(), cols, func(lo, hi int) {
		C.k_widen_block(halfCode(x.DType()), (*C.uint16_t)(unsafe.Pointer(&xs[0])), C.int64_t(cols),
			C.int64_t(lo), C.int64_t(hi), 0, C.int64_t(cols), (*C.float)(unsafe.Pointer(&ys[lo*cols])))
	})
	return nil
}

// dropoutGEMMsHalf is DropoutGEMMs for a Float16 or BFloat16 x: the
// regions of op(x) are widened (and, for p > 0, masked) into scratch by
// the C loader, then multiplied by GEMM's own calls, so each product is
// Widen followed by the float32 DropoutGEMM bit for bit.
func (b *Backend) dropoutGEMMsHalf(seed uint64, rows *tensor.Tensor, p float64, transX bool, x *tensor.Tensor, prods []backend.DropoutProduct, scratch, keep *tensor.Tensor) error {
	if err := chk.Lives("DropoutGEMM", "x", x); err != nil {
		return err
	}
	if p < 0 || p >= 1 || p != p {
		return errf("DropoutGEMM", "dropout rate %g outside [0, 1)", p)
	}
	if err := chk.DropoutRows("DropoutGEMM", rows, x); err != nil {
		return err
	}
	// The float32 checks of the products on a float32 view of x's shape.
	xv := tensor.New(tensor.Float32, x.Shape(), x.Buffer())
	_, m, k, shared, err := b.checkProducts(transX, x, xv, prods, scratch)
	if err != nil {
		return err
	}
	var bits []int32
	if keep != nil && p > 0 {
		if bits, err = keepBits(keep, x); err != nil {
			return err
		}
	}
	if len(shared) == 0 {
		return nil
	}
	initBLAS()
	xs, ldx, code := U16(x), x.Cols(), halfCode(x.DType())
	base, thr, keys := backend.Mix64(seed), backend.DropoutThreshold(p), rowKeys(rows)
	scale := float32(1 / (1 - p))
	mode, bp, ldb := keepMode(bits, transX, ldx)
	mask := func(r0, r1, c0, c1 int, buf []float32) {
		if r1 <= r0 || c1 <= c0 {
			return
		}
		xp, out := (*C.uint16_t)(unsafe.Pointer(&xs[0])), (*C.float)(unsafe.Pointer(&buf[0]))
		if p == 0 {
			C.k_widen_block(code, xp, C.int64_t(ldx), C.int64_t(r0), C.int64_t(r1), C.int64_t(c0), C.int64_t(c1), out)
			return
		}
		C.k_dropout_block_h16(code, C.uint64_t(base), C.uint64_t(thr), C.float(scale), xp, C.int64_t(ldx), keysPtr(keys),
			C.int64_t(r0), C.int64_t(r1), C.int64_t(c0), C.int64_t(c1), out, bp, C.int64_t(ldb), C.int(mode))
	}
	for _, ps := range shared {
		gemmMasked(b, transX, m, k, mask, maskedProducts[float32](ps, F32), F32(scratch), netlib.Implementation{}.Sgemm)
	}
	return nil
}
