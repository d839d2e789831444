package cpu

/*
#cgo CFLAGS: -O3 -mavx2
#cgo LDFLAGS: -lm
#include "kernels.h"
*/
import "C"

import "unsafe"

// Thin wrappers over the C kernels of kernels.h; one call covers one chunk.

func i64p(p *int64) *C.int64_t { return (*C.int64_t)(unsafe.Pointer(p)) }

func cSpMM(dt, it int, r0, r1 int64, indptr *int64, idx unsafe.Pointer, perm *int64, w unsafe.Pointer, h, c int64, x unsafe.Pointer, beta float64, y unsafe.Pointer) {
	C.k_spmm(C.int(dt), C.int(it), C.int64_t(r0), C.int64_t(r1), i64p(indptr), idx, i64p(perm), w, C.int64_t(h), C.int64_t(c), x, C.double(beta), y)
}

func cSpMMT(dt, it int, rows int64, indptr *int64, idx, w unsafe.Pointer, h, c int64, x unsafe.Pointer, j0, j1 int64, y unsafe.Pointer) {
	C.k_spmmt(C.int(dt), C.int(it), C.int64_t(rows), i64p(indptr), idx, w, C.int64_t(h), C.int64_t(c), x, C.int64_t(j0), C.int64_t(j1), y)
}

func cSpMMMax(dt, it, at int, r0, r1 int64, indptr *int64, idx, x unsafe.Pointer, f int64, y, am unsafe.Pointer) {
	C.k_spmm_max(C.int(dt), C.int(it), C.int(at), C.int64_t(r0), C.int64_t(r1), i64p(indptr), idx, x, C.int64_t(f), y, am)
}

func cSDDMM(dt, it int, r0, r1 int64, indptr *int64, idx, x, y unsafe.Pointer, h, c int64, out unsafe.Pointer) {
	C.k_sddmm(C.int(dt), C.int(it), C.int64_t(r0), C.int64_t(r1), i64p(indptr), idx, x, y, C.int64_t(h), C.int64_t(c), out)
}

func cUAddV(dt, it int, r0, r1 int64, indptr *int64, idx, u, v unsafe.Pointer, h int64, out unsafe.Pointer) {
	C.k_uaddv(C.int(dt), C.int(it), C.int64_t(r0), C.int64_t(r1), i64p(indptr), idx, u, v, C.int64_t(h), out)
}

func cScatterAdd(dt, it int, n int64, idx, x unsafe.Pointer, f, c0, c1 int64, y unsafe.Pointer) {
	C.k_scatter_add(C.int(dt), C.int(it), C.int64_t(n), idx, x, C.int64_t(f), C.int64_t(c0), C.int64_t(c1), y)
}

func cScatterArgmax(dt, it int, n int64, am, dy unsafe.Pointer, f, c0, c1 int64, dx unsafe.Pointer) {
	C.k_scatter_argmax(C.int(dt), C.int(it), C.int64_t(n), am, dy, C.int64_t(f), C.int64_t(c0), C.int64_t(c1), dx)
}

func cEdgeReduce(dt int, r0, r1 int64, indptr, perm *int64, e unsafe.Pointer, h int64, out unsafe.Pointer) {
	C.k_edge_reduce(C.int(dt), C.int64_t(r0), C.int64_t(r1), i64p(indptr), i64p(perm), e, C.int64_t(h), out)
}

func cEdgeSoftmax(dt int, r0, r1 int64, indptr *int64, s unsafe.Pointer, h int64, out unsafe.Pointer) {
	C.k_edge_softmax(C.int(dt), C.int64_t(r0), C.int64_t(r1), i64p(indptr), s, C.int64_t(h), out)
}

func cEdgeSoftmaxBwd(dt int, r0, r1 int64, indptr *int64, out, dout unsafe.Pointer, h int64, ds unsafe.Pointer) {
	C.k_edge_softmax_bwd(C.int(dt), C.int64_t(r0), C.int64_t(r1), i64p(indptr), out, dout, C.int64_t(h), ds)
}

func cHeadDot(dt int, r0, r1 int64, x, a unsafe.Pointer, h, c int64, y unsafe.Pointer) {
	C.k_headdot(C.int(dt), C.int64_t(r0), C.int64_t(r1), x, a, C.int64_t(h), C.int64_t(c), y)
}

func cHeadDotDx(dt int, r0, r1 int64, a, dy unsafe.Pointer, h, c int64, dx unsafe.Pointer) {
	C.k_headdot_dx(C.int(dt), C.int64_t(r0), C.int64_t(r1), a, dy, C.int64_t(h), C.int64_t(c), dx)
}

func cHeadDotDa(dt int, r0, r1 int64, x, dy unsafe.Pointer, h, c int64, part *float64) {
	C.k_headdot_da(C.int(dt), C.int64_t(r0), C.int64_t(r1), x, dy, C.int64_t(h), C.int64_t(c), (*C.double)(unsafe.Pointer(part)))
}

func cGather(it int, r0, r1 int64, idx, x unsafe.Pointer, rowBytes int64, y unsafe.Pointer) {
	C.k_gather(C.int(it), C.int64_t(r0), C.int64_t(r1), idx, x, C.int64_t(rowBytes), y)
}

func f32p(s []float32, off int) *C.float {
	if s == nil {
		return nil
	}
	return (*C.float)(unsafe.Pointer(unsafe.SliceData(s[off:])))
}

// hasAVX512 reports whether the CPU runs the AVX-512 dropout kernels.
func hasAVX512() bool { return C.k_has_avx512() != 0 }

// cBool is a C int flag.
func cBool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}

// cDropout runs k_dropout_f32 over [lo, hi) (with AVX-512 when wide); mask
// or y (with x) may be nil.
func cDropout(wide bool, base, thr uint64, scale float32, lo, hi int, mask, x, y []float32) {
	var xp, yp *C.float
	if y != nil {
		xp, yp = f32p(x, 0), f32p(y, 0)
	}
	C.k_dropout_f32(cBool(wide), C.uint64_t(base), C.uint64_t(thr), C.float(scale), C.int64_t(lo), C.int64_t(hi), f32p(mask, 0), xp, yp)
}

// cDropoutRows runs k_dropout_rows_f32 over rows [r0, r1) of cols
// columns keyed by keys; mask or y (with x) may be nil.
func cDropoutRows(wide bool, base, thr uint64, scale float32, keys []int64, cols, r0, r1 int, mask, x, y []float32) {
	if r1 <= r0 || cols == 0 {
		return
	}
	var xp, yp *C.float
	if y != nil {
		xp, yp = f32p(x, 0), f32p(y, 0)
	}
	C.k_dropout_rows_f32(cBool(wide), C.uint64_t(base), C.uint64_t(thr), C.float(scale), (*C.int64_t)(unsafe.Pointer(&keys[0])),
		C.int64_t(cols), C.int64_t(r0), C.int64_t(r1), f32p(mask, 0), xp, yp)
}

func cReLU(x, y []float32) {
	if len(x) > 0 {
		C.k_relu_f32(C.int64_t(len(x)), f32p(x, 0), f32p(y, 0))
	}
}

func cReLUBwd(x, dy, dx []float32) {
	if len(dy) > 0 {
		C.k_relu_bwd_f32(C.int64_t(len(dy)), f32p(x, 0), f32p(dy, 0), f32p(dx, 0))
	}
}

func cMul(a, b, y []float32) {
	if len(a) > 0 {
		C.k_mul_f32(C.int64_t(len(a)), f32p(a, 0), f32p(b, 0), f32p(y, 0))
	}
}

// cRowsOp computes y = a + b or a·b with b broadcast over rows of c elements.
func cRowsOp(mul bool, a, b, y []float32, c int) {
	if len(a) == 0 || c == 0 {
		return
	}
	m := 0
	if mul {
		m = 1
	}
	C.k_rows_f32(C.int(m), C.int64_t(len(a)/c), C.int64_t(c), f32p(a, 0), f32p(b, 0), f32p(y, 0))
}

func cLeaky(alpha float32, x, y []float32) {
	if len(x) > 0 {
		C.k_leaky_f32(C.float(alpha), C.int64_t(len(x)), f32p(x, 0), f32p(y, 0))
	}
}

// cActBwd is the LeakyReLU (elu false) or ELU backward; y is only read for ELU.
func cActBwd(elu bool, alpha float32, x, y, dy, dx []float32) {
	if len(dy) == 0 {
		return
	}
	e := 0
	if elu {
		e = 1
	}
	C.k_act_bwd_f32(C.int(e), C.float(alpha), C.int64_t(len(dy)), f32p(x, 0), f32p(y, 0), f32p(dy, 0), f32p(dx, 0))
}

func cLSTMGather(dt int, r0, r1, t int64, it int, indptr *int64, idx unsafe.Pointer, order *int64, xw, bias unsafe.Pointer, g4 int64, g unsafe.Pointer) {
	C.k_lstm_gather(C.int(dt), C.int64_t(r0), C.int64_t(r1), C.int64_t(t), C.int(it), i64p(indptr), idx, i64p(order), xw, bias, C.int64_t(g4), g)
}

func cLSTMCell(dt int, r0, r1, h, nnext int64, g, cprev, cout, hnext, out unsafe.Pointer, order *int64) {
	C.k_lstm_cell(C.int(dt), C.int64_t(r0), C.int64_t(r1), C.int64_t(h), C.int64_t(nnext), g, cprev, cout, hnext, out, i64p(order))
}

func cLSTMCellBwd(dt int, r0, r1, h, nnext int64, g, c, cprev, dhp, dout unsafe.Pointer, order *int64, dcs unsafe.Pointer) {
	C.k_lstm_cell_bwd(C.int(dt), C.int64_t(r0), C.int64_t(r1), C.int64_t(h), C.int64_t(nnext), g, c, cprev, dhp, dout, i64p(order), dcs)
}

func cLSTMScatter(dt int, s0, s1 int64, it int, bindptr *int64, bidx unsafe.Pointer, perm, indptr, rank, off *int64, g4 int64, dg, dxw unsafe.Pointer) {
	C.k_lstm_scatter(C.int(dt), C.int64_t(s0), C.int64_t(s1), C.int(it), i64p(bindptr), bidx, i64p(perm), i64p(indptr), i64p(rank), i64p(off), C.int64_t(g4), dg, dxw)
}
