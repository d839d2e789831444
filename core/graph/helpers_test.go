package graph

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// wantErr checks that err wraps kind and mentions every fragment.
func wantErr(t *testing.T, err error, kind error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// csrEqual reports whether two CSRs hold the same structure and values.
func csrEqual(a, b *CSR) bool {
	if a.NumRows != b.NumRows || a.NumCols != b.NumCols || a.NNZ() != b.NNZ() {
		return false
	}
	for i := range a.Indptr {
		if a.Indptr[i] != b.Indptr[i] {
			return false
		}
	}
	for e := int64(0); e < a.NNZ(); e++ {
		if a.Col(e) != b.Col(e) {
			return false
		}
	}
	if (a.Values == nil) != (b.Values == nil) {
		return false
	}
	for e := range a.Values {
		if a.Values[e] != b.Values[e] {
			return false
		}
	}
	return true
}

// rowsOf returns the rows of g as slices of int64 column ids.
func rowsOf(g *CSR) [][]int64 {
	out := make([][]int64, g.NumRows)
	for r := range out {
		out[r] = []int64{}
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			out[r] = append(out[r], g.Col(e))
		}
	}
	return out
}

// randEdges returns m random (src, dst) pairs over ids [0, n-isolated): the
// last isolated ids are never used. About a tenth of the pairs are self
// loops and about a tenth repeat an earlier pair.
func randEdges(seed uint64, n, isolated, m int) [][2]int64 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	k := n - isolated
	if k <= 0 {
		return nil
	}
	edges := make([][2]int64, 0, m)
	for len(edges) < m {
		switch x := r.IntN(10); {
		case x == 0:
			v := int64(r.IntN(k))
			edges = append(edges, [2]int64{v, v})
		case x == 1 && len(edges) > 0:
			edges = append(edges, edges[r.IntN(len(edges))])
		default:
			edges = append(edges, [2]int64{int64(r.IntN(k)), int64(r.IntN(k))})
		}
	}
	return edges
}

// randValues returns n random edge values.
func randValues(seed uint64, n int64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x7a1))
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()
	}
	return v
}

// widen returns a copy of g that stores its column ids in 64 bits.
func widen(g *CSR) *CSR {
	w := &CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr),
		Idx64: make([]int64, g.NNZ()), Values: slices.Clone(g.Values)}
	for e := range w.Idx64 {
		w.Idx64[e] = g.Col(int64(e))
	}
	return w
}

// cloneCSR returns a deep copy of g.
func cloneCSR(g *CSR) *CSR {
	return &CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr),
		Idx32: slices.Clone(g.Idx32), Idx64: slices.Clone(g.Idx64), Values: slices.Clone(g.Values)}
}

// dense returns the multiplicity matrix of g: m[r][c] counts the entries
// (r, c).
func dense(g *CSR) [][]int {
	m := make([][]int, g.NumRows)
	for r := range m {
		m[r] = make([]int, g.NumCols)
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			m[r][g.Col(e)]++
		}
	}
	return m
}

// sameDataset reports the first difference between two datasets' content
// (the source excepted), or "".
func sameDataset(a, b *Dataset) string {
	switch {
	case a.Name != b.Name:
		return "name"
	case a.Citation != b.Citation:
		return "citation"
	case a.NumNodes != b.NumNodes || a.FeatDim != b.FeatDim || a.NumClasses != b.NumClasses:
		return "sizes"
	case (a.Graph == nil) != (b.Graph == nil):
		return "graph presence"
	case a.Graph != nil && (!csrEqual(a.Graph, b.Graph) || a.Graph.Wide() != b.Graph.Wide()):
		return "graph"
	case !slices.Equal(a.Features, b.Features):
		return "features"
	case (a.Labels == nil) != (b.Labels == nil) || !slices.Equal(a.Labels, b.Labels):
		return "labels"
	case !slices.Equal(a.Train, b.Train) || !slices.Equal(a.Valid, b.Valid) || !slices.Equal(a.Test, b.Test):
		return "splits"
	}
	return ""
}
