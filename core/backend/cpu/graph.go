package cpu

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"strata/core/backend"
	"strata/core/backend/argcheck"
	"strata/core/graph"
	"strata/core/tensor"
)

// csr is one orientation of an uploaded adjacency.
type csr struct {
	rows   int
	indptr []int64
	idx32  []int32
	idx64  []int64
	perm   []int64 // transposed orientation: original edge id of each entry
	bounds []int64 // row chunks of about equal entries + rows
}

func (c *csr) itCode() int {
	if c.idx64 != nil {
		return 1
	}
	return 0
}

func (c *csr) idxPtr() unsafe.Pointer {
	switch {
	case len(c.idx32) > 0:
		return unsafe.Pointer(&c.idx32[0])
	case len(c.idx64) > 0:
		return unsafe.Pointer(&c.idx64[0])
	}
	return nil
}

func (c *csr) permPtr() *int64 {
	if len(c.perm) == 0 {
		return nil
	}
	return &c.perm[0]
}

// chunks returns the row chunks for a call touching f values per entry and
// per row: one chunk when the whole call is small.
func (c *csr) chunks(f int) []int64 {
	if (c.indptr[c.rows]+int64(c.rows))*int64(max(f, 1)) < grain {
		return []int64{0, int64(c.rows)}
	}
	return c.bounds
}

// Graph is an adjacency resident on the cpu backend: the CSR as uploaded
// (rows = destinations) and its transpose with the edge permutation, so that
// Aᵀ products and reductions into sources run row-parallel without atomics.
type Graph struct {
	owner      *Backend
	rows, cols int
	nnz        int64
	fwd, bwd   csr       // bwd: built on first use (transposed)
	bwdOnce    sync.Once // builds bwd and tvals32
	vals32     []float32 // nil when the CSR has no values
	tvals32    []float32 // vals32 in transposed order (with bwd)
	vals64     []float64 // float64 copies, made on first use
	tvals64    []float64
	schedMu    sync.Mutex
	sched      *lstmSchedule // made on the first LSTMAggregate
	bytes      int64
	released   bool
	scatterT   bool // Aᵀ·x products scatter A's entries (ScatterTranspose)
}

var _ backend.Adj = (*Graph)(nil)

// ScatterTranspose makes the graph's Aᵀ·x products (SpMM with trans, no
// beta) scatter A's entries (k_spmmt) instead of building the transpose:
// for a graph uploaded for one backward pass (chunked training uploads
// every chunk's graph each pass), where building the transpose costs more
// than one product. The sums run in the transpose's order (each output's
// terms by row, one fused multiply-add each), so the bits are the same;
// each goroutine reads all of A's entries for its range of outputs.
func (g *Graph) ScatterTranspose() { g.scatterT = true }

// Rows returns the number of destinations.
func (g *Graph) Rows() int { return g.rows }

// Cols returns the number of sources.
func (g *Graph) Cols() int { return g.cols }

// NNZ returns the number of edges.
func (g *Graph) NNZ() int64 { return g.nnz }

// Tier returns tensor.Host.
func (g *Graph) Tier() tensor.Tier { return tensor.Host }

// UploadGraph copies g into host memory. Its transpose is built on first
// use (transposed), in parallel: a graph that only runs forward products
// (an inference pass, a layer's forward) never builds it. Its memory is
// reserved here, as if built, so Stats and the budget do not depend on
// which kernels ran.
func (b *Backend) UploadGraph(g *graph.CSR, tier tensor.Tier) (backend.Adj, error) {
	const op = "UploadGraph"
	if err := tierErr(op, tier); err != nil {
		return nil, err
	}
	if err := argcheck.CSR(g); err != nil {
		return nil, chk.Wrap(err)
	}
	a := &Graph{owner: b, rows: g.NumRows, cols: g.NumCols, nnz: g.NNZ()}
	a.fwd = csr{rows: g.NumRows, indptr: append([]int64(nil), g.Indptr...)}
	if g.Idx64 != nil {
		a.fwd.idx64 = append([]int64(nil), g.Idx64...)
	} else {
		a.fwd.idx32 = append(make([]int32, 0, a.nnz), g.Idx32...)
	}
	a.fwd.bounds = nnzBounds(a.fwd.indptr, 8*b.threads)
	if g.Values != nil {
		a.vals32 = append([]float32(nil), g.Values...)
	}
	// The transpose's size: cols+1 offsets, an index and a permutation
	// entry per edge, and the values in its order.
	idxBytes := int64(4)
	if g.NumCols > math.MaxInt32 {
		idxBytes = 8
	}
	bwdBytes := 8*int64(g.NumCols+1) + (idxBytes+8)*a.nnz
	a.bytes = csrBytes(&a.fwd) + bwdBytes + 8*int64(len(a.vals32))
	if err := b.reserve(a.bytes, fmt.Sprintf("a %d×%d graph with %d edges", g.NumRows, g.NumCols, a.nnz)); err != nil {
		return nil, err
	}
	return a, nil
}

// transposed returns the CSR of Aᵀ, building it (and the values in its
// order) on the first call.
func (g *Graph) transposed() *csr {
	g.bwdOnce.Do(func() {
		g.bwd = g.owner.transpose(&g.fwd, g.cols)
		if g.vals32 != nil {
			g.tvals32 = make([]float32, g.nnz)
			for k, e := range g.bwd.perm {
				g.tvals32[k] = g.vals32[e]
			}
		}
	})
	return &g.bwd
}

func csrBytes(c *csr) int64 {
	return int64(8*len(c.indptr) + 4*len(c.idx32) + 8*len(c.idx64) + 8*len(c.perm))
}

// ReleaseGraph frees an adjacency uploaded by this backend and returns its
// memory to Stats. The backend.Adj interface has no release of its own.
func (b *Backend) ReleaseGraph(a backend.Adj) {
	g, ok := a.(*Graph)
	if !ok || g == nil || g.released {
		return
	}
	g.released = true
	g.fwd, g.bwd = csr{}, csr{}
	g.vals32, g.tvals32, g.vals64, g.tvals64 = nil, nil, nil, nil
	g.sched = nil
	g.owner.account(-g.bytes)
}

// graphArg returns a as a live cpu adjacency.
func graphArg(op string, a backend.Adj) (*Graph, error) {
	g, ok := a.(*Graph)
	if !ok || g == nil {
		return nil, errf(op, "adjacency %T is not a cpu graph", a)
	}
	if g.released {
		return nil, errf(op, "adjacency was released")
	}
	return g, nil
}

// values returns the adjacency's own edge values for dtype dt in the
// orientation asked for, or nil when the graph has none.
func (g *Graph) values(dt tensor.DType, trans bool) unsafe.Pointer {
	if g.vals32 == nil || g.nnz == 0 {
		return nil
	}
	if trans {
		g.transposed()
	}
	if dt == tensor.Float32 {
		if trans {
			return unsafe.Pointer(&g.tvals32[0])
		}
		return unsafe.Pointer(&g.vals32[0])
	}
	if g.vals64 == nil {
		g.transposed()
		g.vals64 = make([]float64, g.nnz)
		g.tvals64 = make([]float64, g.nnz)
		for k := range g.vals32 {
			g.vals64[k] = float64(g.vals32[k])
			g.tvals64[k] = float64(g.tvals32[k])
		}
		g.bytes += 16 * g.nnz
		g.owner.account(16 * g.nnz)
	}
	if trans {
		return unsafe.Pointer(&g.tvals64[0])
	}
	return unsafe.Pointer(&g.vals64[0])
}

// transpose builds the CSR of Aᵀ (cols rows) with the permutation from its
// entries to the original edge ids, by a parallel counting sort: each worker
// counts the columns of its rows, the counts become per-worker offsets, and
// each worker places its entries. Entries of a transposed row stay in
// original edge order, so the result does not depend on the worker count.
func (b *Backend) transpose(f *csr, cols int) csr {
	nnz := f.indptr[f.rows]
	t := csr{rows: cols, indptr: make([]int64, cols+1), perm: make([]int64, nnz)}
	if cols <= math.MaxInt32 {
		t.idx32 = make([]int32, nnz)
	} else {
		t.idx64 = make([]int64, nnz)
	}
	workers := b.threads
	for workers > 1 && int64(workers)*int64(cols) > 4*nnz+1<<20 {
		workers--
	}
	wb := nnzBounds(f.indptr, workers)
	workers = len(wb) - 1
	counts := make([][]int64, workers)
	col := func(k int64) int64 {
		if f.idx64 != nil {
			return f.idx64[k]
		}
		return int64(f.idx32[k])
	}
	each := func(fn func(w int)) {
		var wg sync.WaitGroup
		wg.Add(workers)
		for w := range workers {
			go func() { defer wg.Done(); fn(w) }()
		}
		wg.Wait()
	}
	each(func(w int) {
		cnt := make([]int64, cols)
		for k := f.indptr[wb[w]]; k < f.indptr[wb[w+1]]; k++ {
			cnt[col(k)]++
		}
		counts[w] = cnt
	})
	pos := int64(0)
	for c := range cols {
		t.indptr[c] = pos
		for w := range workers {
			n := counts[w][c]
			counts[w][c] = pos
			pos += n
		}
	}
	t.indptr[cols] = pos
	each(func(w int) {
		next := counts[w]
		for i := wb[w]; i < wb[w+1]; i++ {
			for k := f.indptr[i]; k < f.indptr[i+1]; k++ {
				c := col(k)
				p := next[c]
				next[c]++
				if t.idx32 != nil {
					t.idx32[p] = int32(i)
				} else {
					t.idx64[p] = i
				}
				t.perm[p] = k
			}
		}
	})
	t.bounds = nnzBounds(t.indptr, 8*b.threads)
	return t
}
