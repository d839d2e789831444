package cpu

import (
	"math"
	"testing"

	"strata/core/tensor"
)

// TestSparseInput lists the non-zero elements of small matrices by bits
// (-0 and NaN are entries), in row order with their values in the
// matrix's dtype, and holds nothing past maxNNZ.
func TestSparseInput(t *testing.T) {
	nan := math.NaN()
	x := []float64{0, 2, 0, math.Copysign(0, -1), 0, 0, nan, 0, 0.5, 0, 0, -3}
	wantIndptr, wantCols := []int64{0, 2, 3, 5}, []int32{1, 3, 2, 0, 3}
	wantVals := []float64{2, math.Copysign(0, -1), nan, 0.5, -3}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		be := New(Options{Threads: 2})
		xt := floatTensor(t, be, dt, []int{3, 4}, x)
		if _, ok, err := be.SparseInput(xt, 4, tensor.Host); ok || err != nil {
			t.Fatalf("%v: 5 entries held under maxNNZ 4 (err %v)", dt, err)
		}
		m, ok, err := be.SparseInput(xt, 5, tensor.Host)
		if !ok || err != nil {
			t.Fatalf("%v: not held (err %v)", dt, err)
		}
		h := m.Host
		if h.NumRows != 3 || h.NumCols != 4 || m.Adj.NNZ() != 5 || m.Values.DType() != dt {
			t.Fatalf("%v: %d×%d with %d entries of %v", dt, h.NumRows, h.NumCols, m.Adj.NNZ(), m.Values.DType())
		}
		vals := make([]float64, 5)
		if dt == tensor.Float32 {
			for i, v := range F32(m.Values) {
				vals[i] = float64(v)
			}
		} else {
			copy(vals, F64(m.Values))
		}
		for i := range wantIndptr {
			if h.Indptr[i] != wantIndptr[i] {
				t.Fatalf("%v: indptr %v, want %v", dt, h.Indptr, wantIndptr)
			}
		}
		for e := range wantCols {
			if h.Idx32[e] != wantCols[e] || math.Float64bits(vals[e]) != math.Float64bits(wantVals[e]) && !(math.IsNaN(vals[e]) && math.IsNaN(wantVals[e])) {
				t.Fatalf("%v: entry %d is column %d value %g, want %d, %g", dt, e, h.Idx32[e], vals[e], wantCols[e], wantVals[e])
			}
		}
		be.ReleaseGraph(m.Adj)
		be.Release(m.Values)
		be.Release(xt)
		if used := be.Stats().InUse[tensor.Host]; used != 0 {
			t.Fatalf("%v: %d bytes held after release", dt, used)
		}
	}
}
