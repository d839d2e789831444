// Package graph holds the graph and dataset model: CSR storage (and the
// CSC by Transpose), the Dataset with its checks, transforms, generated
// splits, the R-MAT generator, memory limits and the loader errors; and
// the dataset format contract (Format) with Open, a loop over the
// registered format.* modules. The built-in formats live in
// core/graph/formats and core/graph/numpy.
package graph

import "fmt"

// CSR is a compressed sparse row matrix over nodes. Row i lists the sources
// (in-neighbours) of destination i, so a sum aggregation is Y = A·X.
// Exactly one of Idx32 and Idx64 is set: 32-bit ids are used whenever
// NumCols fits in int32, which halves index traffic in the sparse kernels.
type CSR struct {
	NumRows int
	NumCols int
	Indptr  []int64   // len NumRows+1
	Idx32   []int32   // column ids when NumCols <= math.MaxInt32
	Idx64   []int64   // column ids otherwise
	Values  []float32 // optional per-edge values (nil means all ones)
}

// NNZ returns the number of stored entries.
func (c *CSR) NNZ() int64 { return c.Indptr[c.NumRows] }

// Col returns the column id of entry e.
func (c *CSR) Col(e int64) int64 {
	if c.Idx32 != nil {
		return int64(c.Idx32[e])
	}
	return c.Idx64[e]
}

// Wide reports whether the column ids are 64-bit.
func (c *CSR) Wide() bool { return c.Idx64 != nil }

// Unweighted returns a view of c's structure without its Values (the
// arrays are shared): a sampled block's mean over its rows, whatever
// values its sampler attached.
func (c *CSR) Unweighted() *CSR {
	u := *c
	u.Values = nil
	return &u
}

// Validate checks the structural invariants of the matrix.
func (c *CSR) Validate() error {
	if c.NumRows < 0 || c.NumCols < 0 {
		return fmt.Errorf("csr: negative shape %d x %d", c.NumRows, c.NumCols)
	}
	if len(c.Indptr) != c.NumRows+1 {
		return fmt.Errorf("csr: indptr has %d entries, want %d", len(c.Indptr), c.NumRows+1)
	}
	if c.Indptr[0] != 0 {
		return fmt.Errorf("csr: indptr starts at %d, want 0", c.Indptr[0])
	}
	if (c.Idx32 == nil) == (c.Idx64 == nil) && c.NNZ() > 0 {
		return fmt.Errorf("csr: exactly one of Idx32 and Idx64 must be set")
	}
	n := c.NNZ()
	if c.Idx32 != nil && int64(len(c.Idx32)) != n || c.Idx64 != nil && int64(len(c.Idx64)) != n {
		return fmt.Errorf("csr: %d column ids for %d entries", max(len(c.Idx32), len(c.Idx64)), n)
	}
	if c.Values != nil && int64(len(c.Values)) != n {
		return fmt.Errorf("csr: %d values for %d entries", len(c.Values), n)
	}
	for i := 0; i < c.NumRows; i++ {
		if c.Indptr[i] > c.Indptr[i+1] {
			return fmt.Errorf("csr: indptr decreases at row %d", i)
		}
	}
	for e := int64(0); e < n; e++ {
		if col := c.Col(e); col < 0 || col >= int64(c.NumCols) {
			return fmt.Errorf("csr: entry %d has column %d outside [0,%d)", e, col, c.NumCols)
		}
	}
	return nil
}
