package backendtest

import (
	"context"
	"fmt"
	"math"
	"testing"

	"strata/core/backend"
	"strata/core/backend/backendtest/ref"
)

// testSparseInput covers the optional backend.SparseInputs (skipped for a
// candidate without it): the entries of x [m,k] at densities 0, 10% and
// 100% (listed by bits, in row order, with x's values; nothing held past
// maxNNZ), and the two products a first layer runs over them, x·b and
// xᵀ·dy, as the candidate's SpMM over the entries against the
// reference's GEMM.
func testSparseInput(s *suite, t *testing.T) {
	si, ok := s.got.(backend.SparseInputs)
	if !ok {
		t.Skipf("%s has no SparseInput", s.got.Name())
	}
	const m, n, k = 37, 5, 29
	for _, dt := range floats {
		for _, density := range []float64{0, 0.1, 1} {
			s.each(t, "SparseInput", fmt.Sprintf("%s/density=%g", dt.Short(), density), func(c *tc) {
				xv := c.uniform(m*k, -1, 1)
				for i := range xv {
					if c.rng.Float64() >= density {
						xv[i] = 0
					}
				}
				x, b, dy := c.put(dt, xv, m, k), c.rand(dt, -1, 1, k, n), c.rand(dt, -1, 1, m, n)
				nnz := 0
				for _, v := range x.h {
					if v != 0 {
						nnz++
					}
				}
				if _, held, err := si.SparseInput(x.g, int64(nnz)-1, c.s.opts.Tier); held || err != nil {
					c.Fatalf("%d entries held under maxNNZ %d (err %v)", nnz, nnz-1, err)
				}
				sm, held, err := si.SparseInput(x.g, int64(nnz), c.s.opts.Tier)
				if !held || err != nil {
					c.Fatalf("%d entries not held (err %v)", nnz, err)
				}
				defer func() { s.got.ReleaseGraph(sm.Adj); s.got.Release(sm.Values) }()
				if sm.Values.DType() != dt {
					c.Fatalf("entries of dtype %v", sm.Values.DType())
				}
				c.checkEntries(sm, x.h, k)
				y, dw := c.out(dt, m, n), c.out(dt, k, n)
				c.call("SpMM over the entries", func(be backend.Backend, sd side) error {
					if !sd.got {
						return be.GEMM(false, false, 1, sd.T(x), sd.T(b), 0, sd.T(y))
					}
					return be.SpMM(context.Background(), sm.Adj, false, sm.Values, sd.T(b), 0, sd.T(y))
				})
				c.agree("x·b", y, valErrors(ref.GEMM(arithOf(dt), false, false, m, n, k, 1, x.h, b.h, 0, nil)))
				c.call("transposed SpMM over the entries", func(be backend.Backend, sd side) error {
					if !sd.got {
						return be.GEMM(true, false, 1, sd.T(x), sd.T(dy), 0, sd.T(dw))
					}
					return be.SpMM(context.Background(), sm.Adj, true, sm.Values, sd.T(dy), 0, sd.T(dw))
				})
				c.agree("xᵀ·dy", dw, valErrors(ref.GEMM(arithOf(dt), true, false, k, n, m, 1, x.h, dy.h, 0, nil)))
			})
		}
	}
}

// checkEntries checks that sm lists the non-zero elements of x (cols
// columns) in row order, with their values.
func (c *tc) checkEntries(sm backend.SparseMatrix, x []float64, cols int) {
	c.Helper()
	vals, err := fetch(c.s.got, sm.Values)
	if err != nil {
		c.Fatal(err)
	}
	v, h := toFloat64s(vals), sm.Host
	e := 0
	for r := range len(x) / cols {
		if h.Indptr[r] != int64(e) {
			c.Fatalf("row %d starts at entry %d, want %d", r, h.Indptr[r], e)
		}
		for col := range cols {
			if x[r*cols+col] == 0 && !math.Signbit(x[r*cols+col]) {
				continue
			}
			if e >= len(v) || h.Col(int64(e)) != int64(col) || v[e] != x[r*cols+col] {
				c.Fatalf("entry %d: want row %d, column %d, value %v", e, r, col, x[r*cols+col])
			}
			e++
		}
	}
	if e != len(v) || sm.Adj.NNZ() != int64(e) {
		c.Fatalf("%d entries (%d in the adjacency), want %d", len(v), sm.Adj.NNZ(), e)
	}
}

// valErrors returns the error bounds of vs.
func valErrors(vs []ref.Val) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v.E
	}
	return out
}
