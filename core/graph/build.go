package graph

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
)

// Index is the type of a column id slice element.
type Index interface{ ~int32 | ~int64 }

// NewCSR builds a square n x n CSR from indptr and 64-bit column ids,
// storing the ids in 32 bits when n fits in int32. indptr is kept; cols is
// kept when 64-bit ids are needed and copied otherwise.
func NewCSR(n int, indptr []int64, cols []int64) *CSR {
	return MakeCSR(n, n, indptr, cols)
}

// FromEdges builds an n x n CSR from (src, dst) pairs: row dst lists src,
// in input order. Duplicates and self loops are kept. It panics if an id
// lies outside [0, n): it is meant for graphs built by code; loaders
// report bad ids as errors instead.
func FromEdges(n int, edges [][2]int64) *CSR {
	dst := make([]int64, len(edges))
	src := make([]int64, len(edges))
	for i, e := range edges {
		if e[0] < 0 || e[0] >= int64(n) || e[1] < 0 || e[1] >= int64(n) {
			panic(fmt.Sprintf("graph.FromEdges: edge %d (%d -> %d) has an id outside [0,%d)", i, e[0], e[1], n))
		}
		src[i], dst[i] = e[0], e[1]
	}
	indptr, cols := GroupEdges(n, dst, src)
	return MakeCSR(n, n, indptr, cols)
}

// MakeCSR wraps indptr and column ids in a CSR, converting the ids to the
// width that numCols calls for.
func MakeCSR[K Index](numRows, numCols int, indptr []int64, idx []K) *CSR {
	g := &CSR{NumRows: numRows, NumCols: numCols, Indptr: indptr}
	narrow := numCols <= math.MaxInt32
	switch v := any(idx).(type) {
	case []int32:
		if narrow {
			g.Idx32 = v
		} else {
			g.Idx64 = ConvertIdx[int32, int64](v)
		}
	case []int64:
		if narrow {
			g.Idx32 = ConvertIdx[int64, int32](v)
		} else {
			g.Idx64 = v
		}
	}
	if g.Idx32 == nil && g.Idx64 == nil {
		if narrow {
			g.Idx32 = []int32{}
		} else {
			g.Idx64 = []int64{}
		}
	}
	return g
}

// ConvertIdx converts an id slice to another width, in parallel.
func ConvertIdx[A, B Index](in []A) []B {
	out := make([]B, len(in))
	parallelFor(len(in), 1<<16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = B(in[i])
		}
	})
	return out
}

// parallelFor splits [0,n) into at most GOMAXPROCS ranges of at least grain
// elements and runs fn on them concurrently.
// ParallelFor runs fn over [0,n) in contiguous chunks of at least grain
// items on up to GOMAXPROCS goroutines and waits for them. fn must write
// only its own chunk's outputs.
func ParallelFor(n, grain int, fn func(lo, hi int)) { parallelFor(n, grain, fn) }

func parallelFor(n, grain int, fn func(lo, hi int)) {
	parts := NumWorkers()
	if grain < 1 {
		grain = 1
	}
	parts = min(parts, (n+grain-1)/grain)
	if parts <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := n*p/parts, n*(p+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// rowParts splits the rows of indptr into up to parts ranges of about equal
// work (entries plus rows) and returns the part boundaries.
func rowParts(indptr []int64, parts int) []int {
	rows := len(indptr) - 1
	if rows <= 0 {
		return []int{0, 0}
	}
	total := indptr[rows] + int64(rows)
	parts = max(1, min(parts, int(total/(1<<14))+1, rows))
	bounds := make([]int, parts+1)
	for p := 1; p < parts; p++ {
		target := total * int64(p) / int64(parts)
		r := sort.Search(rows, func(r int) bool { return indptr[r]+int64(r) >= target })
		bounds[p] = max(r, bounds[p-1])
	}
	bounds[parts] = rows
	return bounds
}

// RunRowParts runs fn concurrently over ranges of the rows of indptr of
// about equal work (entries plus rows) and waits for them. fn must write
// only its own rows' outputs.
func RunRowParts(indptr []int64, fn func(lo, hi int)) { runRowParts(indptr, fn) }

// runRowParts runs fn concurrently over the row ranges of rowParts.
func runRowParts(indptr []int64, fn func(lo, hi int)) {
	b := rowParts(indptr, NumWorkers())
	if len(b) == 2 {
		fn(b[0], b[1])
		return
	}
	var wg sync.WaitGroup
	for p := 0; p+1 < len(b); p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(b[p], b[p+1])
		}()
	}
	wg.Wait()
}

// GroupEdges is a stable counting sort of the entries (dst[e], src[e]) by
// dst: it returns indptr over n rows and the src ids of each row in input
// order. The result does not depend on the number of goroutines.
func GroupEdges[K Index](n int, dst, src []K) ([]int64, []K) {
	m := len(dst)
	parts := NumWorkers()
	// Each part needs an n-entry histogram: only split when that is cheap.
	parts = max(1, min(parts, m/(1<<16), max(1, 4*m/max(n, 1))))
	indptr := make([]int64, n+1)
	cols := make([]K, m)
	if parts == 1 {
		for _, d := range dst {
			indptr[d+1]++
		}
		for i := 0; i < n; i++ {
			indptr[i+1] += indptr[i]
		}
		next := make([]int64, n)
		copy(next, indptr[:n])
		for e, d := range dst {
			cols[next[d]] = src[e]
			next[d]++
		}
		return indptr, cols
	}
	hist := make([][]int64, parts)
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := make([]int64, n)
			for _, d := range dst[m*p/parts : m*(p+1)/parts] {
				h[d]++
			}
			hist[p] = h
		}()
	}
	wg.Wait()
	var off int64
	for r := 0; r < n; r++ {
		indptr[r] = off
		for p := 0; p < parts; p++ {
			c := hist[p][r]
			hist[p][r] = off
			off += c
		}
	}
	indptr[n] = off
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hist[p]
			lo, hi := m*p/parts, m*(p+1)/parts
			for e := lo; e < hi; e++ {
				d := dst[e]
				cols[h[d]] = src[e]
				h[d]++
			}
		}()
	}
	wg.Wait()
	return indptr, cols
}

// rowLen returns the number of entries in row r.
func (c *CSR) rowLen(r int) int64 { return c.Indptr[r+1] - c.Indptr[r] }

// NumWorkers returns the number of parser goroutines to use.
func NumWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }
