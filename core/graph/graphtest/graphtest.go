// Package graphtest builds the small graphs and datasets that the
// conformance suites (partitionertest, samplertest, cachetest) run their
// modules on: a path, a star, random simple graphs and multigraphs, a graph
// with isolated nodes, an edgeless graph, a power-law R-MAT graph and a
// bipartite (non-square) block. Every graph is deterministic.
package graphtest

import (
	"math/rand/v2"
	"slices"

	"strata/core/graph"
	"strata/core/graph/synth"
)

// Named is a graph with a name for subtests.
type Named struct {
	Name string
	G    *graph.CSR
}

// Path returns the undirected path 0 - 1 - ... - n-1 (both directions).
func Path(n int) *graph.CSR {
	var e [][2]int64
	for i := 0; i+1 < n; i++ {
		e = append(e, [2]int64{int64(i), int64(i + 1)}, [2]int64{int64(i + 1), int64(i)})
	}
	return graph.FromEdges(n, e)
}

// Star returns the undirected star with centre 0 and n-1 leaves.
func Star(n int) *graph.CSR {
	var e [][2]int64
	for i := 1; i < n; i++ {
		e = append(e, [2]int64{0, int64(i)}, [2]int64{int64(i), 0})
	}
	return graph.FromEdges(n, e)
}

// Random returns a directed graph with n nodes and m edges drawn
// uniformly. With multi, duplicate edges and self loops are kept;
// otherwise they are dropped (so the graph has at most m edges).
func Random(n, m int, seed uint64, multi bool) *graph.CSR {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	seen := map[[2]int64]bool{}
	var e [][2]int64
	for range m {
		s, d := int64(r.IntN(n)), int64(r.IntN(n))
		if !multi {
			if s == d || seen[[2]int64{s, d}] {
				continue
			}
			seen[[2]int64{s, d}] = true
		}
		e = append(e, [2]int64{s, d})
	}
	return graph.FromEdges(n, e)
}

// WithIsolated returns an undirected random graph on the first half of n
// nodes; the other half has no edges at all.
func WithIsolated(n int, seed uint64) *graph.CSR {
	r := rand.New(rand.NewPCG(seed, 0x150))
	half := max(1, n/2)
	var e [][2]int64
	for range 3 * half {
		s, d := int64(r.IntN(half)), int64(r.IntN(half))
		if s != d {
			e = append(e, [2]int64{s, d}, [2]int64{d, s})
		}
	}
	return graph.FromEdges(n, e)
}

// RMAT returns a symmetrised R-MAT graph with 2^scale nodes and average
// degree about 2·edgeFactor (power-law degrees).
func RMAT(scale, edgeFactor int, seed uint64) *graph.CSR {
	d, err := synth.RMAT(synth.RMATOptions{Scale: scale, EdgeFactor: edgeFactor, Seed: seed, CentroidScale: -1})
	if err != nil {
		panic(err)
	}
	return graph.Symmetrize(d.Graph)
}

// Bipartite returns a rows x cols block with m random edges (row i lists
// sources in [0, cols)), as a mini-batch's output rows over its inputs.
func Bipartite(rows, cols, m int, seed uint64) *graph.CSR {
	r := rand.New(rand.NewPCG(seed, 0xb1))
	lists := make([][]int32, rows)
	for range m {
		i := r.IntN(rows)
		lists[i] = append(lists[i], int32(r.IntN(cols)))
	}
	g := &graph.CSR{NumRows: rows, NumCols: cols, Indptr: make([]int64, rows+1), Idx32: []int32{}}
	for i, l := range lists {
		slices.Sort(l)
		g.Idx32 = append(g.Idx32, l...)
		g.Indptr[i+1] = int64(len(g.Idx32))
	}
	return g
}

// Wide returns g with 64-bit column ids (the same graph).
func Wide(g *graph.CSR) *graph.CSR {
	w := &graph.CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr), Idx64: make([]int64, g.NNZ()), Values: slices.Clone(g.Values)}
	for e := range g.NNZ() {
		w.Idx64[e] = g.Col(e)
	}
	return w
}

// Clone returns a deep copy of g.
func Clone(g *graph.CSR) *graph.CSR {
	return &graph.CSR{NumRows: g.NumRows, NumCols: g.NumCols, Indptr: slices.Clone(g.Indptr),
		Idx32: slices.Clone(g.Idx32), Idx64: slices.Clone(g.Idx64), Values: slices.Clone(g.Values)}
}

// Equal reports whether a and b hold the same matrix in the same form.
func Equal(a, b *graph.CSR) bool {
	return a.NumRows == b.NumRows && a.NumCols == b.NumCols && slices.Equal(a.Indptr, b.Indptr) &&
		slices.Equal(a.Idx32, b.Idx32) && slices.Equal(a.Idx64, b.Idx64) && slices.Equal(a.Values, b.Values)
}

// Square returns the square graphs of the suites: a path, a star, a
// random simple graph, a random multigraph (duplicates, self loops), a
// graph whose second half is isolated, an edgeless graph and an R-MAT
// graph (256 nodes).
func Square() []Named {
	return []Named{
		{"path", Path(40)},
		{"star", Star(30)},
		{"random", Random(120, 700, 1, false)},
		{"multigraph", Random(60, 400, 2, true)},
		{"isolated", WithIsolated(50, 3)},
		{"edgeless", graph.FromEdges(12, nil)},
		{"rmat", RMAT(8, 8, 4)},
	}
}

// Dataset wraps g in a structure-only dataset (no features, labels or
// splits), or with train nodes when train is non-nil.
func Dataset(name string, g *graph.CSR, train []int32) *graph.Dataset {
	d := &graph.Dataset{Name: name, NumNodes: g.NumRows, Graph: g, Source: "graphtest:" + name}
	if train != nil {
		d.Labels = make([]int32, g.NumRows)
		d.NumClasses = 1
		d.Train = slices.Sorted(slices.Values(train))
	}
	return d
}

// Datasets returns small datasets for cache policies: the graphs of
// Square as structure-only datasets, and an R-MAT dataset with features,
// labels and splits.
func Datasets() []*graph.Dataset {
	var out []*graph.Dataset
	for _, g := range Square() {
		out = append(out, Dataset(g.Name, g.G, nil))
	}
	d, err := synth.RMAT(synth.RMATOptions{Scale: 8, EdgeFactor: 8, Seed: 5, FeatDim: 4, NumClasses: 3})
	if err != nil {
		panic(err)
	}
	d.Name = "rmat-dataset"
	return append(out, d)
}
