package graph

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// Transforms build new CSRs and never modify their input, so they are safe
// on graphs that alias a read-only mapped file. All of them are
// deterministic: the output does not depend on GOMAXPROCS.

// Symmetrize returns the undirected version of g: every entry (i, j) also
// gives (j, i); duplicates and self loops are dropped and the columns of
// each row are sorted. A non-square g is treated as square of size
// max(NumRows, NumCols). Edge values are kept as symmetrizeWeighted
// says (the mean of both directions' weights).
func Symmetrize(g *CSR) *CSR {
	if g.Values != nil {
		return symmetrizeWeighted(g)
	}
	n := max(g.NumRows, g.NumCols)
	if g.Idx64 != nil || n > math.MaxInt32 {
		return symmetrize(g, idx64(g))
	}
	return symmetrize(g, idx32(g))
}

func symmetrize[K Index](g *CSR, idx []K) *CSR {
	n := max(g.NumRows, g.NumCols)
	indptr := padIndptr(g.Indptr[:g.NumRows+1], n)
	sorted := slices.Clone(idx)
	sortRows(indptr, sorted)
	tptr, tidx, _ := transpose(g.NumRows, n, indptr[:g.NumRows+1], idx, false)

	out := make([]int64, n+1)
	runRowParts(indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			out[r+1] = int64(mergeRow(sorted[indptr[r]:indptr[r+1]], tidx[tptr[r]:tptr[r+1]], K(r), nil))
		}
	})
	for r := 0; r < n; r++ {
		out[r+1] += out[r]
	}
	cols := make([]K, out[n])
	runRowParts(out, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			mergeRow(sorted[indptr[r]:indptr[r+1]], tidx[tptr[r]:tptr[r+1]], K(r), cols[out[r]:out[r+1]])
		}
	})
	return MakeCSR(n, n, out, cols)
}

// mergeRow merges two sorted lists into their sorted union without
// duplicates and without skip. It writes into dst when non-nil and returns
// the union's length.
func mergeRow[K Index](a, b []K, skip K, dst []K) int {
	n := 0
	last := K(-1) // ids are >= 0
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var v K
		if j == len(b) || i < len(a) && a[i] <= b[j] {
			v = a[i]
			i++
		} else {
			v = b[j]
			j++
		}
		if v == skip || v == last {
			continue
		}
		if dst != nil {
			dst[n] = v
		}
		n++
		last = v
	}
	return n
}

// AddSelfLoops returns g with exactly one self loop per node: existing
// loops are removed, one (i, i) entry is added to every row i < NumCols,
// and the columns of each row are sorted. Edge values are kept, the
// added loops weigh 1 (addSelfLoopsWeighted).
func AddSelfLoops(g *CSR) *CSR {
	if g.Values != nil {
		return addSelfLoopsWeighted(g)
	}
	if g.Idx64 != nil {
		return addSelfLoops(g, g.Idx64)
	}
	return addSelfLoops(g, idx32(g))
}

func addSelfLoops[K Index](g *CSR, idx []K) *CSR {
	n := g.NumRows
	out := make([]int64, n+1)
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			c := int64(0)
			for _, v := range idx[g.Indptr[r]:g.Indptr[r+1]] {
				if int64(v) != int64(r) {
					c++
				}
			}
			if r < g.NumCols {
				c++
			}
			out[r+1] = c
		}
	})
	for r := 0; r < n; r++ {
		out[r+1] += out[r]
	}
	cols := make([]K, out[n])
	runRowParts(out, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := cols[out[r]:out[r+1]]
			k := 0
			for _, v := range idx[g.Indptr[r]:g.Indptr[r+1]] {
				if int64(v) != int64(r) {
					row[k] = v
					k++
				}
			}
			if r < g.NumCols {
				row[k] = K(r)
			}
			slices.Sort(row)
		}
	})
	return MakeCSR(n, g.NumCols, out, cols)
}

// RemoveSelfLoops returns g without its (i, i) entries. The order of the
// remaining entries and their values are kept.
func RemoveSelfLoops(g *CSR) *CSR {
	if g.Idx64 != nil {
		return removeSelfLoops(g, g.Idx64)
	}
	return removeSelfLoops(g, idx32(g))
}

func removeSelfLoops[K Index](g *CSR, idx []K) *CSR {
	n := g.NumRows
	out := make([]int64, n+1)
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			c := int64(0)
			for _, v := range idx[g.Indptr[r]:g.Indptr[r+1]] {
				if int64(v) != int64(r) {
					c++
				}
			}
			out[r+1] = c
		}
	})
	for r := 0; r < n; r++ {
		out[r+1] += out[r]
	}
	cols := make([]K, out[n])
	var vals []float32
	if g.Values != nil {
		vals = make([]float32, out[n])
	}
	runRowParts(out, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			k := out[r]
			for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
				if int64(idx[e]) != int64(r) {
					cols[k] = idx[e]
					if vals != nil {
						vals[k] = g.Values[e]
					}
					k++
				}
			}
		}
	})
	h := MakeCSR(n, g.NumCols, out, cols)
	h.Values = vals
	return h
}

// Transpose returns the transpose of g (NumCols x NumRows) and perm, which
// maps every entry of the result to the index of the entry of g it came
// from, so edge data can be permuted with out[e] = in[perm[e]]. Values are
// permuted the same way. The columns of each transposed row are ascending.
func Transpose(g *CSR) (*CSR, []int64) {
	var t *CSR
	var perm []int64
	if g.Idx64 != nil || g.NumRows > math.MaxInt32 {
		tptr, tidx, p := transpose(g.NumRows, g.NumCols, g.Indptr, idx64(g), true)
		t, perm = MakeCSR(g.NumCols, g.NumRows, tptr, tidx), p
	} else {
		tptr, tidx, p := transpose(g.NumRows, g.NumCols, g.Indptr, idx32(g), true)
		t, perm = MakeCSR(g.NumCols, g.NumRows, tptr, tidx), p
	}
	if g.Values != nil {
		t.Values = make([]float32, len(perm))
		parallelFor(len(perm), 1<<16, func(lo, hi int) {
			for e := lo; e < hi; e++ {
				t.Values[e] = g.Values[perm[e]]
			}
		})
	}
	return t, perm
}

// TransposeIdx returns the structure of the transpose of a rows x ncols
// CSR (indptr, idx): its row pointers and, for every column, the rows
// that hold it, ascending; neither values nor the entry permutation
// (Transpose). Row ids must fit in K.
func TransposeIdx[K Index](rows, ncols int, indptr []int64, idx []K) ([]int64, []K) {
	tptr, tidx, _ := transpose(rows, ncols, indptr, idx, false)
	return tptr, tidx
}

// transpose is a stable counting sort of the entries of a rows x ... CSR
// by column into ncols rows (ncols >= every column id + 1). Row ids must
// fit in K. With wantPerm it also returns the source entry of every output
// entry.
func transpose[K Index](rows, ncols int, indptr []int64, idx []K, wantPerm bool) ([]int64, []K, []int64) {
	nnz := indptr[rows]
	tptr := make([]int64, ncols+1)
	tidx := make([]K, nnz)
	var perm []int64
	if wantPerm {
		perm = make([]int64, nnz)
	}
	parts := rowParts(indptr, NumWorkers())
	// Each part needs an ncols-entry histogram: only split when that is cheap.
	if np := len(parts) - 1; np > 1 && int64(np)*int64(ncols) > 4*nnz {
		parts = []int{0, rows}
	}
	np := len(parts) - 1
	hist := make([][]int64, np)
	var wg sync.WaitGroup
	for p := 0; p < np; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := make([]int64, ncols)
			for _, c := range idx[indptr[parts[p]]:indptr[parts[p+1]]] {
				h[c]++
			}
			hist[p] = h
		}()
	}
	wg.Wait()
	var off int64
	for c := 0; c < ncols; c++ {
		tptr[c] = off
		for p := 0; p < np; p++ {
			k := hist[p][c]
			hist[p][c] = off
			off += k
		}
	}
	tptr[ncols] = off
	for p := 0; p < np; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hist[p]
			for r := parts[p]; r < parts[p+1]; r++ {
				for e := indptr[r]; e < indptr[r+1]; e++ {
					c := idx[e]
					pos := h[c]
					h[c]++
					tidx[pos] = K(r)
					if perm != nil {
						perm[pos] = e
					}
				}
			}
		}()
	}
	wg.Wait()
	return tptr, tidx, perm
}

// Degrees returns the in-degree (row length) of each of the NumRows nodes
// and the out-degree (number of entries in the column) of each of the
// NumCols nodes. With the dst <- src convention these are the number of
// incoming and outgoing edges.
func Degrees(g *CSR) (in, out []int32) {
	in = make([]int32, g.NumRows)
	parallelFor(g.NumRows, 1<<16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			in[r] = int32(g.Indptr[r+1] - g.Indptr[r])
		}
	})
	out = make([]int32, g.NumCols)
	if g.Idx64 != nil {
		countCols(g.Idx64, out)
	} else {
		countCols(g.Idx32, out)
	}
	return in, out
}

// countCols adds the number of occurrences of every id to out.
func countCols[K Index](idx []K, out []int32) {
	parts := max(1, min(NumWorkers(), len(idx)/(1<<16), 4*len(idx)/max(len(out), 1)))
	if parts == 1 {
		for _, c := range idx {
			out[c]++
		}
		return
	}
	hist := make([][]int32, parts)
	parallelFor(parts, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			h := make([]int32, len(out))
			for _, c := range idx[len(idx)*p/parts : len(idx)*(p+1)/parts] {
				h[c]++
			}
			hist[p] = h
		}
	})
	parallelFor(len(out), 1<<16, func(lo, hi int) {
		for _, h := range hist {
			for i := lo; i < hi; i++ {
				out[i] += h[i]
			}
		}
	})
}

// GCNNorm returns the per-entry weights 1/sqrt(deg(i)·deg(j)) of the
// symmetric GCN normalisation D^-1/2 A D^-1/2, where deg is the row length
// (g is expected to be symmetric with self loops). Entries whose column
// node has no entries get weight 0. With Values, deg is the sum of the
// row's weights and each entry is scaled by its own (gcnNormWeighted).
func GCNNorm(g *CSR) []float32 {
	if g.Values != nil {
		return gcnNormWeighted(g)
	}
	isq := make([]float64, max(g.NumRows, g.NumCols))
	parallelFor(g.NumRows, 1<<16, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if d := g.Indptr[r+1] - g.Indptr[r]; d > 0 {
				isq[r] = 1 / math.Sqrt(float64(d))
			}
		}
	})
	w := make([]float32, g.NNZ())
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
				w[e] = float32(isq[r] * isq[g.Col(e)])
			}
		}
	})
	return w
}

// MeanNorm returns the per-entry weights 1/deg(i) of a mean aggregation,
// where deg(i) is the length of the entry's row; with Values, w/deg(i)
// (meanNormWeighted).
func MeanNorm(g *CSR) []float32 {
	if g.Values != nil {
		return meanNormWeighted(g)
	}
	w := make([]float32, g.NNZ())
	runRowParts(g.Indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			a, b := g.Indptr[r], g.Indptr[r+1]
			if a == b {
				continue
			}
			v := float32(1 / float64(b-a))
			for e := a; e < b; e++ {
				w[e] = v
			}
		}
	})
	return w
}

// ReorderByDegree relabels the nodes of d by descending total degree
// (in + out; ties keep the lower old id first), for cache locality. It
// replaces d.Graph, d.Features, d.Labels and the splits by relabelled
// copies (the old arrays are not modified, so mapped datasets are fine),
// and returns the permutation new id -> old id. The column order within
// each row is kept. It returns nil and leaves d unchanged when d has no
// graph or more than MaxInt32 nodes.
func ReorderByDegree(d *Dataset) []int32 {
	g := d.Graph
	if g == nil || d.NumNodes > math.MaxInt32 || g.NumRows != d.NumNodes || g.NumCols != d.NumNodes {
		return nil
	}
	n := d.NumNodes
	in, out := Degrees(g)
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		da, db := int64(in[a])+int64(out[a]), int64(in[b])+int64(out[b])
		if c := cmp.Compare(db, da); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	inv := make([]int32, n)
	for newID, old := range perm {
		inv[old] = int32(newID)
	}

	indptr := make([]int64, n+1)
	for r, old := range perm {
		indptr[r+1] = indptr[r] + g.rowLen(int(old))
	}
	var vals []float32
	if g.Values != nil {
		vals = make([]float32, len(g.Values))
	}
	var ng *CSR
	if g.Idx64 != nil {
		ng = MakeCSR(n, n, indptr, relabelRows(g, g.Idx64, perm, inv, indptr, vals))
	} else {
		ng = MakeCSR(n, n, indptr, relabelRows(g, idx32(g), perm, inv, indptr, vals))
	}
	ng.Values = vals
	d.Graph = ng

	if d.FeatDim > 0 && len(d.Features) == n*d.FeatDim {
		f, dim := make([]float32, len(d.Features)), d.FeatDim
		parallelFor(n, 1<<10, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				o := int(perm[r])
				copy(f[r*dim:(r+1)*dim], d.Features[o*dim:(o+1)*dim])
			}
		})
		d.Features = f
	}
	RelabelNodeData(d, perm, inv)
	return perm
}

// RelabelNodeData moves d's labels and splits to new node ids: perm[new]
// = old and inv[old] = new (the splits stay sorted).
func RelabelNodeData(d *Dataset, perm, inv []int32) {
	if len(d.Labels) == len(perm) {
		l := make([]int32, len(perm))
		for r, o := range perm {
			l[r] = d.Labels[o]
		}
		d.Labels = l
	}
	relabelTargets(d, perm)
	remap := func(ids []int32) []int32 {
		if ids == nil {
			return nil
		}
		out := make([]int32, len(ids))
		for i, id := range ids {
			out[i] = inv[id]
		}
		slices.Sort(out)
		return out
	}
	d.Train, d.Valid, d.Test = remap(d.Train), remap(d.Valid), remap(d.Test)
}

// relabelRows builds the relabelled column array for ReorderByDegree.
func relabelRows[K Index](g *CSR, idx []K, perm, inv []int32, indptr []int64, vals []float32) []K {
	cols := make([]K, len(idx))
	runRowParts(indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := int(perm[r])
			k := indptr[r]
			for e := g.Indptr[o]; e < g.Indptr[o+1]; e++ {
				cols[k] = K(inv[idx[e]])
				if vals != nil {
					vals[k] = g.Values[e]
				}
				k++
			}
		}
	})
	return cols
}

// SortRows sorts the column ids of every row in place, rows in parallel.
func SortRows[K Index](indptr []int64, idx []K) { sortRows(indptr, idx) }

// sortRows sorts the column ids of every row in place.
func sortRows[K Index](indptr []int64, idx []K) {
	runRowParts(indptr, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if row := idx[indptr[r]:indptr[r+1]]; !slices.IsSorted(row) {
				slices.Sort(row)
			}
		}
	})
}

// padIndptr extends indptr (rows+1 entries) with empty rows up to n rows.
func padIndptr(indptr []int64, n int) []int64 {
	if len(indptr) == n+1 {
		return indptr
	}
	out := make([]int64, n+1)
	copy(out, indptr)
	for i := len(indptr); i <= n; i++ {
		out[i] = indptr[len(indptr)-1]
	}
	return out
}

// idx32 returns the 32-bit ids of g (an empty slice for an empty graph).
func idx32(g *CSR) []int32 {
	if g.Idx32 == nil {
		return []int32{}
	}
	return g.Idx32
}

// idx64 returns the ids of g as int64, converting 32-bit ids.
func idx64(g *CSR) []int64 {
	if g.Idx64 != nil {
		return g.Idx64
	}
	return ConvertIdx[int32, int64](idx32(g))
}
