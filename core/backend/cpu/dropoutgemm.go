package cpu

/*
#include "kernels.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"

	"strata/core/backend"
	"strata/core/tensor"
)

// DropoutGEMM computes c = op(dropout(x))·b + beta·c (op transposes when
// transX) without forming dropout(x): it runs GEMM's own tiles
// (backend.GEMMTiles) a region of op(x) at a time, backend.DropoutGEMMSlots
// regions at once, each masked into scratch by the dropout kernel and
// multiplied by the very BLAS calls GEMM makes for it, so the result is
// DropoutApply followed by GEMM bit for bit. A region is a row tile of
// op(x) over the whole inner dimension, or, when GEMM splits the inner
// dimension, one slice of it over all rows. scratch holds at least
// backend.DropoutGEMMScratch(m, n, k) elements of x's dtype.
//
// keep (backend.DropoutKeepWords of x, Int32, or nil) records the mask's
// kept elements in a forward call and replaces the draw in a transposed
// call, so the weight gradient does not draw the mask a second time
// (float32; float64 draws it both times).
func (b *Backend) DropoutGEMM(seed uint64, rows *tensor.Tensor, p float64, transX bool, x, bm *tensor.Tensor, beta float64, c, scratch, keep *tensor.Tensor) error {
	return b.DropoutGEMMs(seed, rows, p, transX, x, []backend.DropoutProduct{{B: bm, Beta: beta, C: c}}, scratch, keep)
}

var _ backend.DropoutGEMMSharer = (*Backend)(nil)

// DropoutGEMMs runs DropoutGEMM for every product over one masking pass
// (backend.DropoutGEMMSharer): each region of op(x) is masked into
// scratch once and multiplied by every product's calls for it. The
// products whose tilings split the inner dimension alike share a pass
// (in practice all: the row tiles depend on x alone, the split on the
// product's width only when it has fewer than 8 tiles).
func (b *Backend) DropoutGEMMs(seed uint64, rows *tensor.Tensor, p float64, transX bool, x *tensor.Tensor, prods []backend.DropoutProduct, scratch, keep *tensor.Tensor) error {
	if x != nil && x.DType().IsHalf() { // 16-bit feature rows (half.go)
		return b.dropoutGEMMsHalf(seed, rows, p, transX, x, prods, scratch, keep)
	}
	if _, err := chk.DropoutApply(rows, p, x, nil, x); err != nil {
		return err
	}
	dt, m, k, shared, err := b.checkProducts(transX, x, x, prods, scratch)
	if err != nil {
		return err
	}
	var bits []int32
	if keep != nil {
		if bits, err = keepBits(keep, x); err != nil {
			return err
		}
	}
	if len(shared) == 0 {
		return nil
	}
	initBLAS()
	impl := netlib.Implementation{}
	scale := 1 / (1 - p)
	base, thr := backend.Mix64(seed), backend.DropoutThreshold(p)
	ldx, keys := x.Cols(), rowKeys(rows)
	if dt == tensor.Float32 {
		xs := F32(x)
		// Regions start at a multiple of 32 columns (GEMMTiles' tiles and
		// slices are whole blocks), so each owns its words of keep.
		mode, bp, ldb := keepMode(bits, transX, ldx)
		mask := func(r0, r1, c0, c1 int, buf []float32) {
			if r1 > r0 && c1 > c0 {
				md := mode
				if c0%32 != 0 {
					md = 0 // never: see above
				}
				C.k_dropout_block_f32(cBool(b.wide), C.uint64_t(base), C.uint64_t(thr), C.float(float32(scale)),
					(*C.float)(unsafe.Pointer(&xs[0])), C.int64_t(ldx), keysPtr(keys), C.int64_t(r0), C.int64_t(r1),
					C.int64_t(c0), C.int64_t(c1), (*C.float)(unsafe.Pointer(&buf[0])), bp, C.int64_t(ldb), C.int(md))
			}
		}
		// A sparse wrapped x (input features) is masked from its index of
		// non-zero elements, with the same results (sparserows.go).
		if sp := b.sparseIndex(hostBuf(x), x.Rows(), ldx); sp != nil {
			mask = sp.masker(base, thr, keys, float32(scale), bits, ldb, mode)
		}
		for _, ps := range shared {
			gemmMasked(b, transX, m, k, mask, maskedProducts[float32](ps, F32), F32(scratch), impl.Sgemm)
		}
		return nil
	}
	xs := F64(x)
	mask := func(r0, r1, c0, c1 int, buf []float64) {
		w := c1 - c0
		for r := r0; r < r1; r++ {
			k := rowKey(keys, r)
			for col := c0; col < c1; col++ {
				v := 0.0
				if uniform(base, backend.DropoutIndex(k, ldx, col)) >= p {
					v = scale
				}
				buf[(r-r0)*w+col-c0] = xs[r*ldx+col] * v
			}
		}
	}
	for _, ps := range shared {
		gemmMasked(b, transX, m, k, mask, maskedProducts[float64](ps, F64), F64(scratch), impl.Dgemm)
	}
	return nil
}

// checkProducts checks the products of a DropoutGEMMs over x (xv: a view
// of x in the dtype the products multiply) and its scratch, runs the
// empty ones (c = beta·c), and returns the others grouped by their split
// of the inner dimension: the products of a group share masked regions.
func (b *Backend) checkProducts(transX bool, x, xv *tensor.Tensor, prods []backend.DropoutProduct, scratch *tensor.Tensor) (dt tensor.DType, m, k int, shared [][]backend.DropoutProduct, err error) {
	if len(prods) == 0 {
		return 0, 0, 0, nil, errf("DropoutGEMM", "no products")
	}
	need, empty := 0, []backend.DropoutProduct(nil)
	kbs := map[int]int{} // a split of the inner dimension -> its group
	for i, pr := range prods {
		var n int
		if dt, m, n, k, err = chk.GEMM(transX, false, xv, pr.B, pr.C); err != nil {
			return 0, 0, 0, nil, err
		}
		if xv != x && pr.B.DType() != tensor.Float32 {
			return 0, 0, 0, nil, errf("DropoutGEMM", "a %v x multiplies float32 operands, not %v", x.DType(), pr.B.DType())
		}
		for _, q := range prods[:i] {
			if overlaps(pr.C, q.C) {
				return 0, 0, 0, nil, errf("DropoutGEMM", "product %d's c shares a buffer with another product's", i)
			}
		}
		need = max(need, backend.DropoutGEMMScratch(m, n, k))
		if m == 0 || n == 0 || k == 0 {
			empty = append(empty, pr)
			continue
		}
		_, _, kb := backend.GEMMTiles(m, n, k)
		g, ok := kbs[kb]
		if !ok {
			g, kbs[kb] = len(shared), len(shared)
			shared = append(shared, nil)
		}
		shared[g] = append(shared[g], pr)
	}
	if scratch == nil || scratch.DType() != dt || scratch.Numel() < need {
		return 0, 0, 0, nil, fmt.Errorf("cpu: DropoutGEMM: scratch holds %d elements, the product needs %d of %v",
			numelOf(scratch), need, dt)
	}
	for _, pr := range empty {
		if err := b.GEMM(transX, false, 1, xv, pr.B, pr.Beta, pr.C); err != nil { // c = beta·c
			return 0, 0, 0, nil, err
		}
	}
	return dt, m, k, shared, nil
}

// overlaps reports whether a and b share a buffer (a view shares its
// tensor's).
func overlaps(a, b *tensor.Tensor) bool {
	return a != nil && b != nil && a.Buffer() == b.Buffer()
}

// maskedProducts is the float data of a group of products.
func maskedProducts[T float](ps []backend.DropoutProduct, data func(*tensor.Tensor) []T) []maskedProduct[T] {
	out := make([]maskedProduct[T], len(ps))
	for i, pr := range ps {
		out[i] = maskedProduct[T]{b: data(pr.B), ldb: pr.B.Cols(), n: pr.C.Cols(), beta: T(pr.Beta), c: data(pr.C)}
	}
	return out
}

func numelOf(t *tensor.Tensor) int {
	if t == nil {
		return 0
	}
	return t.Numel()
}

// maskedProduct is one product c = op(masked x)·b + beta·c of gemmMasked,
// c of n columns.
type maskedProduct[T float] struct {
	b      []T
	ldb, n int
	beta   T
	c      []T
}

// gemmMasked is gemm with alpha 1 whose a is the masked x, made a region
// at a time by mask (rows [r0,r1) × columns [c0,c1) of x into buf, c1-c0
// columns per row), for every product in ps (which split the inner
// dimension alike): each region is masked once and multiplied by every
// product's calls. It makes the calls gemm makes, with the same sizes
// and flags; only a's storage (and leading dimension) differs.
func gemmMasked[T float](be *Backend, transX bool, m, k int, mask func(r0, r1, c0, c1 int, buf []T),
	ps []maskedProduct[T], scratch []T, call gemmFunc[T]) {
	tA := blas.NoTrans
	if transX {
		tA = blas.Trans
	}
	// region returns op(x)[i0:i1, p0:p1], masked into buf, and its
	// leading dimension: x's rows [i0,i1) × columns [p0,p1), or, with
	// transX, x's rows [p0,p1) × columns [i0,i1).
	region := func(i0, i1, p0, p1 int, buf []T) ([]T, int) {
		if transX {
			mask(p0, p1, i0, i1, buf)
			return buf, i1 - i0
		}
		mask(i0, i1, p0, p1, buf)
		return buf, p1 - p0
	}
	mb, _, kb := backend.GEMMTiles(m, ps[0].n, k)
	tm, tk := ceilDiv(m, mb), ceilDiv(k, kb)
	size, count := mb*k, tm
	parts := make([][]T, len(ps))
	if tk > 1 {
		size, count = m*kb, tk
		for j, pr := range ps {
			parts[j] = make([]T, tk*m*pr.n)
		}
	}
	// run computes regions [r0, r1) with their masked part of x in buf:
	// one K slice over all of c (as gemm's split-K; r1 = r0+1), or row
	// tiles of op(x), masked in one pass (x's column tiles [i0, i1) are
	// then read in runs of i1-i0 columns) and each multiplied by the calls
	// gemm makes for it, reading its columns of the group (lda i1-i0).
	run := func(r0, r1 int, buf []T) {
		if tk > 1 {
			p0 := r0 * kb
			p1 := min(k, p0+kb)
			a, lda := region(0, m, p0, p1, buf[:m*(p1-p0)])
			for j, pr := range ps {
				call(tA, blas.NoTrans, m, pr.n, p1-p0, 1, a, lda, pr.b[p0*pr.ldb:], pr.ldb, 0, parts[j][r0*m*pr.n:], pr.n)
			}
			return
		}
		g0, g1 := r0*mb, min(m, r1*mb)
		a, lda := region(g0, g1, 0, k, buf[:(g1-g0)*k])
		for i0 := g0; i0 < g1; i0 += mb {
			i1 := min(g1, i0+mb)
			off := (i0 - g0) * lda // a row tile of the masked rows of x
			if transX {
				off = i0 - g0 // a column tile of the masked columns of x
			}
			ai := a[off:]
			for _, pr := range ps {
				_, nb, _ := backend.GEMMTiles(m, pr.n, k)
				for j0 := 0; j0 < pr.n; j0 += nb {
					j1 := min(pr.n, j0+nb)
					call(tA, blas.NoTrans, i1-i0, j1-j0, k, 1, ai, lda, pr.b[j0:], pr.ldb, pr.beta, pr.c[i0*pr.n+j0:], pr.n)
				}
			}
		}
	}
	if count <= backend.DropoutGEMMSlots { // every region has its place (only the last is smaller)
		be.parallel(nil, evenBounds(int64(count), int64(count)), func(lo, _ int64) {
			run(int(lo), int(lo)+1, scratch[int(lo)*size:])
		})
	} else { // workers claim regions in turn, each masking into its own slots
		workers := min(be.threads, backend.DropoutGEMMSlots)
		// With fewer workers than slots, a worker of the weight gradient
		// claims as many neighbouring regions as it has slots and masks
		// them in one pass, reading each row of x in longer runs; one at a
		// time near the end, so the workers finish together.
		group := 1
		if transX && tk == 1 {
			group = backend.DropoutGEMMSlots / workers
		}
		var next atomic.Int64
		claim := func() (int, int) {
			for {
				r := int(next.Load())
				g := group
				if count-r < group*workers {
					g = 1
				}
				if r >= count || next.CompareAndSwap(int64(r), int64(r+g)) {
					return r, min(count, r+g)
				}
			}
		}
		var wg sync.WaitGroup
		wg.Add(workers)
		for w := range workers {
			go func() {
				defer wg.Done()
				for r0, r1 := claim(); r0 < count; r0, r1 = claim() {
					run(r0, r1, scratch[w*group*size:(w+1)*group*size])
				}
			}()
		}
		wg.Wait()
	}
	if tk > 1 {
		for j, pr := range ps {
			sumSlices(be, m*pr.n, tk, 1, pr.beta, parts[j], pr.c)
		}
	}
}

// rowKeys returns the row keys of a dropout (nil: row r is keyed r).
func rowKeys(rows *tensor.Tensor) []int64 {
	if rows == nil {
		return nil
	}
	return I64(rows)
}

// rowKey is the key of row r under keys (rowKeys).
func rowKey(keys []int64, r int) uint64 {
	if keys == nil {
		return uint64(r)
	}
	return uint64(keys[r])
}

// keysPtr is keys for C (null without keys).
func keysPtr(keys []int64) *C.int64_t {
	if len(keys) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&keys[0]))
}

// keepMode is how the masking kernels treat the keep bits: 0 without
// them (draw the mask), 1 to record them (the forward product), 2 to
// read them (the weight gradient, transX); with the bits' words and
// the words per row of x's cols columns.
func keepMode(bits []int32, transX bool, cols int) (mode int, words *C.uint32_t, perRow int) {
	perRow = (cols + 31) / 32
	if len(bits) == 0 {
		return 0, nil, perRow
	}
	if transX {
		return 2, (*C.uint32_t)(unsafe.Pointer(&bits[0])), perRow
	}
	return 1, (*C.uint32_t)(unsafe.Pointer(&bits[0])), perRow
}

// keepBits returns the words of keep, the dropout bits of x, after
// checking their type and count.
func keepBits(keep, x *tensor.Tensor) ([]int32, error) {
	want := backend.DropoutKeepWords(x.Rows(), x.Cols())
	if keep.DType() != tensor.Int32 || keep.Numel() != want[0]*want[1] {
		return nil, fmt.Errorf("cpu: DropoutGEMM: keep must be int32 with %d×%d words for x %v", want[0], want[1], x.Shape())
	}
	return I32(keep), nil
}
