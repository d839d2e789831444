package backendtest

import (
	"slices"

	"strata/core/graph"
)

// graphSpec describes a random adjacency.
type graphSpec struct {
	name       string
	rows, cols int
	maxDeg     int  // degrees of non-empty rows are uniform in [1, maxDeg]
	values     bool // with CSR Values (else the adjacency's values are ones)
	sorted     bool // sources ascending within a row (else in random order)
}

// graphSpecs are the graphs of the graph ops: a square graph with edge
// values and unsorted rows, a rectangular (bipartite) one without values,
// and one with no edges at all. Both non-empty ones have rows without
// edges, duplicate edges, self loops (where row < cols) and, in "rect",
// a source column no edge uses.
var graphSpecs = []graphSpec{
	{name: "sq", rows: 240, cols: 240, maxDeg: 16, values: true},
	{name: "rect", rows: 150, cols: 260, maxDeg: 14, sorted: true},
	{name: "edgeless", rows: 6, cols: 4},
}

// lstmSpecs are smaller graphs for the LSTM, with degrees ≤ 8.
var lstmSpecs = []graphSpec{
	{name: "sq", rows: 120, cols: 120, maxDeg: 8, values: true},
	{name: "rect", rows: 60, cols: 100, maxDeg: 8, sorted: true},
	{name: "edgeless", rows: 5, cols: 3},
}

// randCSR draws a graph for sp. Row 0 and about one row in eight have no
// edges; about one row in five gets a self loop and one in five repeats an
// edge. The last source column is never used in a rectangular graph.
func (c *tc) randCSR(sp graphSpec) *graph.CSR {
	g := &graph.CSR{NumRows: sp.rows, NumCols: sp.cols, Indptr: make([]int64, sp.rows+1), Idx32: []int32{}}
	srcs := sp.cols
	if sp.rows != sp.cols {
		srcs-- // leave the last column without edges
	}
	for i := range sp.rows {
		var row []int32
		if sp.maxDeg > 0 && i > 0 && c.rng.IntN(8) != 0 {
			deg := 1 + c.rng.IntN(sp.maxDeg)
			for range deg {
				row = append(row, int32(c.rng.IntN(srcs)))
			}
			if i < sp.cols && c.rng.IntN(5) == 0 {
				row[c.rng.IntN(deg)] = int32(i) // self loop
			}
			if deg >= 2 && c.rng.IntN(5) == 0 {
				row[0] = row[1+c.rng.IntN(deg-1)] // duplicate edge
			}
			if sp.sorted {
				slices.Sort(row)
			}
		}
		g.Idx32 = append(g.Idx32, row...)
		g.Indptr[i+1] = int64(len(g.Idx32))
	}
	if sp.values {
		g.Values = make([]float32, len(g.Idx32))
		for e := range g.Values {
			g.Values[e] = float32(2*c.rng.Float64() - 1)
		}
	}
	return g
}
