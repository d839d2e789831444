package cpu

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
*/
import "C"

import (
	"sync"

	"strata/core/backend"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"

	"strata/core/tensor"
)

// OpenBLAS threading is not bitwise reproducible across thread counts (its
// row partition changes which micro-kernel edge path computes an element),
// so OpenBLAS runs single-threaded and GEMM parallelises itself: C is cut
// into a fixed grid of tiles that depends only on the shape (plus fixed K
// slices, summed in order, when the grid is too small to share out), and
// the tiles run on the backend's goroutines.
var blasOnce sync.Once

func initBLAS() {
	blasOnce.Do(func() { C.openblas_set_num_threads(1) })
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// GEMM computes c = alpha·op(a)·op(b) + beta·c with OpenBLAS.
func (b *Backend) GEMM(transA, transB bool, alpha float64, a, bm *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	dt, m, n, k, err := chk.GEMM(transA, transB, a, bm, c)
	if err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k == 0 { // c = beta·c
		if beta == 0 {
			return b.Fill(c, 0)
		}
		return b.Axpby(beta, c, 0, c)
	}
	initBLAS()
	impl := netlib.Implementation{}
	if dt == tensor.Float32 {
		gemm(b, transA, transB, m, n, k, float32(alpha), F32(a), a.Cols(), F32(bm), bm.Cols(), float32(beta), F32(c), impl.Sgemm)
	} else {
		gemm(b, transA, transB, m, n, k, alpha, F64(a), a.Cols(), F64(bm), bm.Cols(), beta, F64(c), impl.Dgemm)
	}
	return nil
}

type gemmFunc[T float] func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

func gemm[T float](be *Backend, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, call gemmFunc[T]) {
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	// sub returns op(a) rows [i0,i1) × k-slice [p0,p1) and op(b) k-slice ×
	// columns [j0,j1) as slices starting at their first element.
	subA := func(i0, p0 int) []T {
		if transA {
			return a[p0*lda+i0:]
		}
		return a[i0*lda+p0:]
	}
	subB := func(p0, j0 int) []T {
		if transB {
			return b[j0*ldb+p0:]
		}
		return b[p0*ldb+j0:]
	}
	mb, nb, kb := backend.GEMMTiles(m, n, k)
	tm, tn, tk := ceilDiv(m, mb), ceilDiv(n, nb), ceilDiv(k, kb)
	if tk == 1 {
		be.parallel(nil, evenBounds(int64(tm*tn), int64(tm*tn)), func(lo, _ int64) {
			i0, j0 := int(lo)/tn*mb, int(lo)%tn*nb
			i1, j1 := min(m, i0+mb), min(n, j0+nb)
			call(tA, tB, i1-i0, j1-j0, k, alpha, subA(i0, 0), lda, subB(0, j0), ldb, beta, c[i0*n+j0:], n)
		})
		return
	}
	// Split K: partial products of fixed K slices, then summed in slice order.
	parts := make([]T, tk*m*n)
	be.parallel(nil, evenBounds(int64(tk), int64(tk)), func(lo, _ int64) {
		p0 := int(lo) * kb
		p1 := min(k, p0+kb)
		call(tA, tB, m, n, p1-p0, 1, subA(0, p0), lda, subB(p0, 0), ldb, 0, parts[int(lo)*m*n:], n)
	})
	sumSlices(be, m*n, tk, alpha, beta, parts, c)
}

// sumSlices writes c = alpha·Σ parts + beta·c, the tk partial products of
// a split-K GEMM summed in slice order.
func sumSlices[T float](be *Backend, mn, tk int, alpha, beta T, parts, c []T) {
	be.each(mn, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := parts[i]
			for j := 1; j < tk; j++ {
				s += parts[j*mn+i]
			}
			if beta == 0 {
				c[i] = alpha * s
			} else {
				c[i] = alpha*s + beta*c[i]
			}
		}
	})
}
