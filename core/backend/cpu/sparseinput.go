package cpu

import (
	"math"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

// Sparse inputs (backend.SparseInputs). A program's first layer multiplies
// the input features x [N,K] by a weight [K,n] forward and by the output
// gradient (xᵀ·dy) backward. Bag-of-words features are about 1% non-zero
// (CiteSeer 3,327 × 3,703: 0.85%), and there the two SpMMs over x's
// non-zeros (x's CSR, and its transpose for xᵀ·dy, both row-parallel
// without atomics) beat OpenBLAS's SGEMM, which reads every element.
//
// sparseInputMaxDensity is where they stop doing so on this backend:
// BenchmarkSparseInput (docs/decisions.md, "Sparse input features as
// SpMM") times GEMM against the SpMM pair at densities 0.5–20% and
// widths 16–256 on a 3,327 × 3,703 input.
const sparseInputMaxDensity = 0.1

// SparseInputDensity implements backend.SparseInputs: the measured
// crossover, the same for every width (see sparseInputMaxDensity).
func (b *Backend) SparseInputDensity(rows, k, n int) float64 {
	if rows == 0 || k == 0 || n == 0 {
		return 0
	}
	return sparseInputMaxDensity
}

// SparseInput implements backend.SparseInputs: it counts x's non-zero
// elements row by row in parallel and, when there are at most maxNNZ,
// lists them. "Non-zero" is by bits, as the dropout kernels' index
// (sparserows.go): -0, NaN and infinities are entries, so a NaN in the
// features reaches the product as it does through GEMM.
func (b *Backend) SparseInput(x *tensor.Tensor, maxNNZ int64, tier tensor.Tier) (backend.SparseMatrix, bool, error) {
	const op = "SparseInput"
	var none backend.SparseMatrix
	if err := tierErr(op, tier); err != nil {
		return none, false, err
	}
	bf := hostBuf(x)
	if dt := x.DType(); bf == nil || len(x.Shape()) != 2 || dt != tensor.Float32 && dt != tensor.Float64 && !dt.IsHalf() {
		return none, false, errf(op, "x must be a live 2-D float or 16-bit tensor of this backend, got %v %v", x.DType(), x.Shape())
	}
	rows, cols := x.Rows(), x.Cols()
	nonZero, val, dt := entriesOf(bf, x.DType())
	indptr := make([]int64, rows+1)
	bounds := evenBounds(int64(rows), int64(max(1, min(rows, 4*b.threads))))
	_ = b.parallel(nil, bounds, func(lo, hi int64) {
		for r := lo; r < hi; r++ {
			n := int64(0)
			for i := r * int64(cols); i < (r+1)*int64(cols); i++ {
				if nonZero(i) {
					n++
				}
			}
			indptr[r+1] = n
		}
	})
	for r := range rows {
		indptr[r+1] += indptr[r]
	}
	nnz := indptr[rows]
	if nnz > maxNNZ || nnz > math.MaxInt32 {
		return none, false, nil
	}
	g := &graph.CSR{NumRows: rows, NumCols: cols, Indptr: indptr, Idx32: make([]int32, nnz)}
	vals := make([]float64, nnz)
	_ = b.parallel(nil, bounds, func(lo, hi int64) {
		for r := lo; r < hi; r++ {
			e := indptr[r]
			for c := range int64(cols) {
				if i := r*int64(cols) + c; nonZero(i) {
					g.Idx32[e], vals[e] = int32(c), val(i)
					e++
				}
			}
		}
	})
	return b.holdSparse(g, vals, dt)
}

// entriesOf returns, for a buffer of dtype dt, whether element i is an
// entry (non-zero bits), its value, and the dtype of the entries: dt's,
// or float32 for 16-bit rows (widened exactly, as Widen does).
func entriesOf(bf *buffer, dt tensor.DType) (nonZero func(i int64) bool, val func(i int64) float64, vt tensor.DType) {
	switch dt {
	case tensor.Float64:
		return func(i int64) bool { return math.Float64bits(bf.f64[i]) != 0 },
			func(i int64) float64 { return bf.f64[i] }, dt
	case tensor.Float16, tensor.BFloat16:
		widen := tensor.F16ToF32
		if dt == tensor.BFloat16 {
			widen = tensor.BF16ToF32
		}
		return func(i int64) bool { return bf.u16[i] != 0 },
			func(i int64) float64 { return float64(widen(bf.u16[i])) }, tensor.Float32
	}
	return func(i int64) bool { return math.Float32bits(bf.f32[i]) != 0 },
		func(i int64) float64 { return float64(bf.f32[i]) }, tensor.Float32
}

// holdSparse uploads the structure g and its entries vals (of dtype dt)
// as a SparseMatrix.
func (b *Backend) holdSparse(g *graph.CSR, vals []float64, dt tensor.DType) (backend.SparseMatrix, bool, error) {
	var none backend.SparseMatrix
	adj, err := b.UploadGraph(g, tensor.Host)
	if err != nil {
		return none, false, err
	}
	v, err := b.Alloc(dt, []int{len(vals), 1}, tensor.Host)
	if err != nil {
		b.ReleaseGraph(adj)
		return none, false, err
	}
	if dt == tensor.Float64 {
		copy(v.Buffer().(*buffer).f64, vals)
	} else {
		f := v.Buffer().(*buffer).f32
		for i, x := range vals {
			f[i] = float32(x)
		}
	}
	return backend.SparseMatrix{Adj: adj, Host: g, Values: v}, true, nil
}
