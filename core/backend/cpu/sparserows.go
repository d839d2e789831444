package cpu

import (
	"math"
	"slices"
	"sync"

	"strata/core/backend"
)

// sparseDensity is the largest share of non-zero elements for which a
// wrapped matrix gets a sparseRows index: 1/32, so the index (8 bytes an
// element) is at most 1/16 of the matrix it indexes.
const sparseDensity = 32

// sparseRows is the non-zero elements of a wrapped float32 matrix, row by
// row: row r's are col[start[r]:start[r+1]] (ascending) with values val.
// "Non-zero" is by bits, so -0 and NaN are listed: the masking kernels
// write x·0 = -0 for a dropped -0 and the index must too.
//
// A wrapped matrix is never written (WrapHost), so the index, built on
// the first masked product over it, holds for the tensor's life. The
// masking of a fused dropout-matmul (DropoutGEMM) then touches only the
// listed elements: it writes x·scale or x·0 where x is listed, drawing
// (or reading the keep bit of) those elements alone, into a region that
// is zero elsewhere. That is the region the dense kernel writes, bit for
// bit: an unlisted element is +0, and +0·m is +0 for both masks. Input
// features are often this sparse (coauthor-physics: 0.39% of 34,493 ×
// 8,415).
type sparseRows struct {
	rows, cols int
	start      []int64
	col        []int32
	val        []float32
}

// sparseIndex returns the index of x's matrix when x is a rows × cols
// view of a wrapped float32 buffer sparse enough to have one (built on
// the first call), else nil.
func (b *Backend) sparseIndex(bf *buffer, rows, cols int) *sparseRows {
	if bf == nil || !bf.wrapped || len(bf.f32) != rows*cols || rows == 0 || cols == 0 {
		return nil
	}
	bf.nzOnce.Do(func() { bf.nz = b.buildSparseRows(bf.f32, rows, cols) })
	if bf.nz == nil || bf.nz.rows != rows || bf.nz.cols != cols {
		return nil
	}
	return bf.nz
}

// buildSparseRows indexes the non-zero elements of the rows × cols
// matrix x, or returns nil when more than 1/sparseDensity of them are
// non-zero. Rows are counted, then filled, in parallel.
func (b *Backend) buildSparseRows(x []float32, rows, cols int) *sparseRows {
	start := make([]int64, rows+1)
	bounds := evenBounds(int64(rows), int64(max(1, min(rows, 4*b.threads))))
	row := func(r int64) []float32 { return x[r*int64(cols) : (r+1)*int64(cols)] }
	_ = b.parallel(nil, bounds, func(lo, hi int64) {
		for r := lo; r < hi; r++ {
			n := int64(0)
			for _, v := range row(r) {
				if math.Float32bits(v) != 0 {
					n++
				}
			}
			start[r+1] = n
		}
	})
	for r := range rows {
		start[r+1] += start[r]
	}
	nnz := start[rows]
	if nnz > int64(rows)*int64(cols)/sparseDensity {
		return nil
	}
	s := &sparseRows{rows: rows, cols: cols, start: start, col: make([]int32, nnz), val: make([]float32, nnz)}
	_ = b.parallel(nil, bounds, func(lo, hi int64) {
		for r := lo; r < hi; r++ {
			e := start[r]
			for c, v := range row(r) {
				if math.Float32bits(v) != 0 {
					s.col[e], s.val[e] = int32(c), v
					e++
				}
			}
		}
	})
	return s
}

// span returns the listed elements of row r in columns [c0, c1): indexes
// into col and val.
func (s *sparseRows) span(r, c0, c1 int) (lo, hi int64) {
	lo, hi = s.start[r], s.start[r+1]
	cs := s.col[lo:hi]
	if c0 > 0 {
		i, _ := slices.BinarySearch(cs, int32(c0))
		cs, lo = cs[i:], lo+int64(i)
	}
	if c1 < s.cols {
		i, _ := slices.BinarySearch(cs, int32(c1))
		hi = lo + int64(i)
	}
	return lo, hi
}

// region is rows [r0, r1) × columns [c0, c1) of the matrix, as a masking
// function writes it: row by row, c1-c0 columns a row.
type region struct{ r0, r1, c0, c1 int }

func (g region) size() int { return (g.r1 - g.r0) * (g.c1 - g.c0) }

// masker returns the masking function of one DropoutGEMMs call over the
// indexed matrix: what k_dropout_block_f32 writes for a region, with the
// same modes and keep bits (ldb words a row). In mode 1 it records the
// listed elements' bits and leaves the others of their words as they
// were (no reader looks at them: an unlisted element's product is +0
// either way).
//
// A worker masks region after region into the same slot of the scratch.
// The slot is cleared on its first use in the call; afterwards only the
// elements the slot's last region wrote are zeroed again, as the rest is
// still zero (the GEMM calls only read it).
func (s *sparseRows) masker(base, thr uint64, keys []int64, scale float32, bits []int32, ldb, mode int) func(r0, r1, c0, c1 int, y []float32) {
	var mu sync.Mutex
	last := map[*float32]region{} // a slot's first element -> its last region
	return func(r0, r1, c0, c1 int, y []float32) {
		g := region{r0, r1, c0, c1}
		if g.size() <= 0 {
			return
		}
		mu.Lock()
		prev, used := last[&y[0]]
		last[&y[0]] = g
		mu.Unlock()
		zero := 0 // y[:zero] is zero
		if used { // the slot's last region, perhaps longer than y
			s.unmask(prev, y[:cap(y)])
			zero = prev.size()
		}
		if n := g.size(); n > zero {
			clear(y[zero:n])
		}
		s.mask(base, thr, keys, scale, g, y, bits, ldb, mode)
	}
}

// mask writes the listed elements of region g into y (zero elsewhere);
// keys are the rows' keys (nil: row r is keyed r).
func (s *sparseRows) mask(base, thr uint64, keys []int64, scale float32, g region, y []float32, bits []int32, ldb, mode int) {
	w := g.c1 - g.c0
	for r := g.r0; r < g.r1; r++ {
		k := rowKey(keys, r)
		lo, hi := s.span(r, g.c0, g.c1)
		off := (r-g.r0)*w - g.c0 // y[off+c] is column c of row r
		for e := lo; e < hi; e++ {
			c := int(s.col[e])
			var keep bool
			if mode == 2 {
				keep = uint32(bits[r*ldb+c/32])>>(c%32)&1 != 0
			} else {
				keep = backend.DropoutKeptAt(base, thr, backend.DropoutIndex(k, s.cols, c))
				if mode == 1 {
					word, bit := &bits[r*ldb+c/32], int32(uint32(1)<<(c%32))
					if keep {
						*word |= bit
					} else {
						*word &^= bit
					}
				}
			}
			m := float32(0)
			if keep {
				m = scale
			}
			y[off+c] = s.val[e] * m
		}
	}
}

// unmask zeroes in y what mask wrote there for region g.
func (s *sparseRows) unmask(g region, y []float32) {
	w := g.c1 - g.c0
	for r := g.r0; r < g.r1; r++ {
		lo, hi := s.span(r, g.c0, g.c1)
		off := (r-g.r0)*w - g.c0
		for _, c := range s.col[lo:hi] {
			y[off+int(c)] = 0
		}
	}
}
