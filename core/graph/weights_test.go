package graph_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/internal/floattol"
)

// denseWeights returns the summed weight and the number of entries of
// every (row, column) of g.
func denseWeights(g *graph.CSR) (w [][]float64, n [][]int) {
	w, n = make([][]float64, g.NumRows), graphtest.Dense(g)
	for r := range w {
		w[r] = make([]float64, g.NumCols)
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			w[r][g.Col(e)] += float64(g.Values[e])
		}
	}
	return w, n
}

// near reports whether got is want within k float64 roundings and one
// float32 rounding (weights are >= 0, so relative to want).
func near(got float32, want float64, k int) bool {
	return math.Abs(float64(got)-want) <= (floattol.UFloat32+floattol.Gamma(k, floattol.UFloat64))*want
}

// weightedCases are smallGraphs' graphs with values.
func weightedCases() []graphCase {
	var out []graphCase
	for _, c := range smallGraphs() {
		if c.g.Values != nil {
			out = append(out, c)
		}
	}
	return out
}

// eachWeighted runs transform on every weighted case, checks that it
// keeps its input, that the result has a value per entry and rows in
// ascending order, then runs check.
func eachWeighted(t *testing.T, transform func(*graph.CSR) *graph.CSR, check func(t *testing.T, g, s *graph.CSR)) {
	for _, c := range weightedCases() {
		t.Run(c.name, func(t *testing.T) {
			var s *graph.CSR
			transformsKeepInput(t, c.g, func() { s = transform(c.g) })
			if !graphtest.SortedRows(s, false) || int64(len(s.Values)) != s.NNZ() {
				t.Fatalf("rows not ascending, or %d values for %d entries", len(s.Values), s.NNZ())
			}
			check(t, c.g, s)
		})
	}
}

func TestSymmetrizeWeighted(t *testing.T) {
	eachWeighted(t, graph.Symmetrize, func(t *testing.T, g, s *graph.CSR) {
		n := g.NumRows
		checkCSR(t, s, n, n)
		if !graphtest.SortedRows(s, true) {
			t.Fatal("rows not strictly ascending")
		}
		w, cnt := denseWeights(g)
		for r := range n {
			for e := s.Indptr[r]; e < s.Indptr[r+1]; e++ {
				col := s.Col(e)
				k := cnt[r][col] + cnt[col][r] // the contributions to (r, col)
				if want := (w[r][col] + w[col][r]) / float64(k); !near(s.Values[e], want, k+1) {
					t.Fatalf("(%d,%d): weight %g, want the mean %g of %d contributions", r, col, s.Values[e], want, k)
				}
			}
		}
		if got, want := graphtest.Dense(s), graphtest.Dense(graph.Symmetrize(&graph.CSR{NumRows: n, NumCols: n, Indptr: g.Indptr, Idx32: g.Idx32, Idx64: g.Idx64})); !denseEqual(got, want) {
			t.Errorf("entries %v, want the unweighted Symmetrize's %v", got, want)
		}
	})
	// The rule on hand cases (rows are destinations: row 1 holding column
	// 0 is the edge 0 -> 1).
	for _, c := range []struct {
		name   string
		indptr []int64
		idx    []int32
		vals   []float32
		want   string
	}{
		{"one direction", []int64{0, 0, 1, 1}, []int32{0}, []float32{2}, "[[1] [0] []] [2 2]"},
		{"both, one weight", []int64{0, 1, 2, 2}, []int32{1, 0}, []float32{2, 2}, "[[1] [0] []] [2 2]"},
		{"both, two weights", []int64{0, 1, 2, 2}, []int32{1, 0}, []float32{1, 3}, "[[1] [0] []] [2 2]"},
		{"duplicate", []int64{0, 0, 2, 2}, []int32{0, 0}, []float32{1, 3}, "[[1] [0] []] [2 2]"},
		{"self loop dropped", []int64{0, 1, 2, 3}, []int32{0, 0, 1}, []float32{5, 4, 6}, "[[1] [0 2] [1]] [4 4 6 6]"},
	} {
		g := &graph.CSR{NumRows: 3, NumCols: 3, Indptr: c.indptr, Idx32: c.idx, Values: c.vals}
		s := graph.Symmetrize(g)
		if got := fmt.Sprint(graphtest.RowsOf(s), s.Values); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestAddSelfLoopsWeighted(t *testing.T) {
	eachWeighted(t, graph.AddSelfLoops, func(t *testing.T, g, s *graph.CSR) {
		checkCSR(t, s, g.NumRows, g.NumCols)
		want, wantN := denseWeights(g)
		for i := range want {
			if i < g.NumCols {
				want[i][i], wantN[i][i] = 1, 1 // PyG's fill_value
			}
		}
		got, gotN := denseWeights(s)
		if !denseEqual(gotN, wantN) {
			t.Fatalf("entries %v, want %v", gotN, wantN)
		}
		for i := range want {
			for j := range want[i] {
				// The kept entries' float32 weights, summed in the same
				// order: exact.
				if got[i][j] != want[i][j] {
					t.Fatalf("(%d,%d): weight %g, want %g", i, j, got[i][j], want[i][j])
				}
			}
		}
	})
}

func TestNormsWeighted(t *testing.T) {
	for _, c := range weightedCases() {
		t.Run(c.name, func(t *testing.T) {
			g := graph.AddSelfLoops(graph.Symmetrize(c.g))
			var gcn, mean []float32
			transformsKeepInput(t, g, func() { gcn, mean = graph.GCNNorm(g), graph.MeanNorm(g) })
			w, _ := denseWeights(g)
			deg := make([]float64, max(g.NumRows, g.NumCols))
			for i, row := range w {
				for _, x := range row {
					deg[i] += x
				}
			}
			for r := range g.NumRows {
				for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
					col, v := g.Col(e), float64(g.Values[e])
					// gcn_norm: w/sqrt(deg_r deg_col), deg summed over the row
					// (self loop 1 included).
					if want := v / math.Sqrt(deg[r]*deg[col]); !near(gcn[e], want, int(g.NNZ())+4) {
						t.Fatalf("gcn (%d,%d): %g, want %g", r, col, gcn[e], want)
					}
					if want := v / float64(g.Indptr[r+1]-g.Indptr[r]); !near(mean[e], want, 1) {
						t.Fatalf("mean (%d,%d): %g, want %g", r, col, mean[e], want)
					}
				}
			}
			// Unit weights are the unweighted graph, to the bit.
			unit := graphtest.Clone(g)
			for e := range unit.Values {
				unit.Values[e] = 1
			}
			bare := graphtest.Clone(g)
			bare.Values = nil
			if !slices.Equal(graph.GCNNorm(unit), graph.GCNNorm(bare)) || !slices.Equal(graph.MeanNorm(unit), graph.MeanNorm(bare)) {
				t.Error("unit weights normalise otherwise than no weights")
			}
		})
	}
}

func TestCheckEdgeWeights(t *testing.T) {
	for _, c := range []struct {
		w    []float32
		want string // "" accepted
	}{
		{[]float32{0, 1, 2.5}, ""},
		{nil, ""},
		{[]float32{1, float32(math.NaN())}, "edge 1 has weight NaN"},
		{[]float32{float32(math.Inf(1))}, "edge 0 has weight +Inf"},
		{[]float32{1, 2, -0.5}, "edge 2 has weight -0.5"},
	} {
		err := graph.CheckEdgeWeights(c.w)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.w, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want one naming %q", c.w, err, c.want)
		}
	}
}

func TestSumDuplicatesAndEdgeWeight(t *testing.T) {
	// Row 0 holds 2, 1, 2 (weights 1, 4, 0.5); row 1 nothing; row 2 holds 0.
	g := &graph.CSR{NumRows: 3, NumCols: 3, Indptr: []int64{0, 3, 3, 4}, Idx32: []int32{2, 1, 2, 0}, Values: []float32{1, 4, 0.5, 6}}
	s := graph.SumDuplicates(g)
	if got, want := fmt.Sprint(graphtest.RowsOf(s), s.Values), "[[1 2] [] [0]] [4 1.5 6]"; got != want {
		t.Errorf("SumDuplicates: %s, want %s", got, want)
	}
	for _, c := range []struct {
		row int
		col int64
		w   float32
		ok  bool
	}{{0, 1, 4, true}, {0, 2, 1.5, true}, {0, 0, 0, false}, {1, 0, 0, false}, {2, 0, 6, true}} {
		if w, ok := graph.EdgeWeight(s, c.row, c.col); w != c.w || ok != c.ok {
			t.Errorf("EdgeWeight(%d, %d) = %v, %v; want %v, %v", c.row, c.col, w, ok, c.w, c.ok)
		}
	}
	if u := g.Unweighted(); graph.SumDuplicates(u) != u || g.Values == nil {
		t.Error("SumDuplicates changed an unweighted graph, or Unweighted changed its source")
	}
	if deg := graph.RowWeightSums(s); !slices.Equal(deg, []float64{5.5, 0, 6}) {
		t.Errorf("RowWeightSums %v", deg)
	}
}
