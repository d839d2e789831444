package graph_test

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/internal/floattol"
)

// graphCase is a small random graph for the transform tests.
type graphCase struct {
	name string
	g    *graph.CSR
}

// smallGraphs returns small random graphs (self loops, duplicates,
// isolated nodes, empty graphs) in 32- and 64-bit id variants, with and
// without edge values.
func smallGraphs() []graphCase {
	var cases []graphCase
	shapes := []struct{ n, iso, m int }{{0, 0, 0}, {1, 0, 0}, {1, 0, 3}, {5, 2, 0}, {7, 2, 15}, {12, 3, 40}, {20, 4, 90}, {33, 0, 300}}
	for _, s := range shapes {
		for seed := uint64(1); seed <= 3; seed++ {
			g := graph.FromEdges(s.n, graphtest.RandEdges(seed, s.n, s.iso, s.m))
			base := fmt.Sprintf("n%d_m%d_seed%d", s.n, s.m, seed)
			cases = append(cases, graphCase{base + "_i32", g}, graphCase{base + "_i64", graphtest.Widen(g)})
			gv := graphtest.Clone(g)
			gv.Values = graphtest.RandValues(seed, g.NNZ())
			cases = append(cases, graphCase{base + "_i32_values", gv}, graphCase{base + "_i64_values", graphtest.Widen(gv)})
		}
	}
	return cases
}

// checkCSR checks the structural invariants of a transform's output.
func checkCSR(t *testing.T, g *graph.CSR, rows, cols int) {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.NumRows != rows || g.NumCols != cols {
		t.Fatalf("shape %d x %d, want %d x %d", g.NumRows, g.NumCols, rows, cols)
	}
	if g.Indptr[0] != 0 {
		t.Fatalf("indptr starts at %d", g.Indptr[0])
	}
}

func denseEqual(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// transformsKeepInput runs fn and fails if it modified g.
func transformsKeepInput(t *testing.T, g *graph.CSR, fn func()) {
	t.Helper()
	before := graphtest.Clone(g)
	fn()
	if !graphtest.SameCSR(before, g) || before.Wide() != g.Wide() {
		t.Fatal("transform modified its input")
	}
}

func TestSymmetrizeDense(t *testing.T) {
	for _, c := range smallGraphs() {
		t.Run(c.name, func(t *testing.T) {
			var s *graph.CSR
			if c.g.Values != nil {
				return // weighted: TestSymmetrizeWeighted
			}
			transformsKeepInput(t, c.g, func() { s = graph.Symmetrize(c.g) })
			n := c.g.NumRows
			checkCSR(t, s, n, n)
			if s.Values != nil {
				t.Error("values made up")
			}
			if !graphtest.SortedRows(s, true) {
				t.Error("rows not strictly ascending")
			}
			a := graphtest.Dense(c.g)
			want := make([][]int, n)
			for i := range want {
				want[i] = make([]int, n)
				for j := range want[i] {
					if i != j && (a[i][j] > 0 || a[j][i] > 0) {
						want[i][j] = 1
					}
				}
			}
			if got := graphtest.Dense(s); !denseEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			// Idempotent.
			if !graphtest.SameCSR(graph.Symmetrize(s), s) {
				t.Error("Symmetrize(Symmetrize(g)) != Symmetrize(g)")
			}
		})
	}
}

// rectCSR returns a 3 x 5 CSR with a column beyond the rows.
func rectCSR(wide bool) *graph.CSR {
	g := &graph.CSR{NumRows: 3, NumCols: 5, Indptr: []int64{0, 2, 2, 5}, Idx32: []int32{4, 0, 1, 2, 2}}
	if wide {
		return graphtest.Widen(g)
	}
	return g
}

func TestSymmetrizeNonSquare(t *testing.T) {
	for _, wide := range []bool{false, true} {
		s := graph.Symmetrize(rectCSR(wide))
		checkCSR(t, s, 5, 5)
		// Entries (0,4) (0,0) (2,1) (2,2) (2,2): loops dropped, union with
		// the transpose.
		want := "[[4] [2] [1] [] [0]]"
		if got := fmt.Sprint(graphtest.RowsOf(s)); got != want {
			t.Errorf("wide=%v: rows %s, want %s", wide, got, want)
		}
	}
}

func TestAddSelfLoopsDense(t *testing.T) {
	for _, c := range smallGraphs() {
		t.Run(c.name, func(t *testing.T) {
			var s *graph.CSR
			if c.g.Values != nil {
				return // weighted: TestAddSelfLoopsWeighted
			}
			transformsKeepInput(t, c.g, func() { s = graph.AddSelfLoops(c.g) })
			checkCSR(t, s, c.g.NumRows, c.g.NumCols)
			if s.Values != nil {
				t.Error("values made up")
			}
			if !graphtest.SortedRows(s, false) {
				t.Error("rows not ascending")
			}
			want := graphtest.Dense(c.g)
			for i := range want {
				want[i][i] = 1
			}
			if got := graphtest.Dense(s); !denseEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if !graphtest.SameCSR(graph.AddSelfLoops(s), s) {
				t.Error("AddSelfLoops is not idempotent")
			}
		})
	}
	for _, wide := range []bool{false, true} {
		// A 5 x 3 matrix gets loops in rows 0..2 only; old loops go.
		g := Transposed(rectCSR(wide)) // rows [0] [2] [2 2] [] [0]
		s := graph.AddSelfLoops(g)
		checkCSR(t, s, 5, 3)
		if got, want := fmt.Sprint(graphtest.RowsOf(s)), "[[0] [1 2] [2] [] [0]]"; got != want {
			t.Errorf("wide=%v: rows %s, want %s", wide, got, want)
		}
	}
}

// Transposed returns the transpose of g (dropping the permutation).
func Transposed(g *graph.CSR) *graph.CSR {
	t, _ := graph.Transpose(g)
	return t
}

func TestRemoveSelfLoops(t *testing.T) {
	for _, c := range smallGraphs() {
		t.Run(c.name, func(t *testing.T) {
			var s *graph.CSR
			transformsKeepInput(t, c.g, func() { s = graph.RemoveSelfLoops(c.g) })
			checkCSR(t, s, c.g.NumRows, c.g.NumCols)
			if (s.Values == nil) != (c.g.Values == nil) {
				t.Fatal("values not kept")
			}
			// Reference: every row filtered in order, values alongside.
			for r := 0; r < c.g.NumRows; r++ {
				var wantCols []int64
				var wantVals []float32
				for e := c.g.Indptr[r]; e < c.g.Indptr[r+1]; e++ {
					if c.g.Col(e) != int64(r) {
						wantCols = append(wantCols, c.g.Col(e))
						if c.g.Values != nil {
							wantVals = append(wantVals, c.g.Values[e])
						}
					}
				}
				var gotCols []int64
				var gotVals []float32
				for e := s.Indptr[r]; e < s.Indptr[r+1]; e++ {
					gotCols = append(gotCols, s.Col(e))
					if s.Values != nil {
						gotVals = append(gotVals, s.Values[e])
					}
				}
				if !slices.Equal(gotCols, wantCols) || !slices.Equal(gotVals, wantVals) {
					t.Fatalf("row %d: %v %v, want %v %v", r, gotCols, gotVals, wantCols, wantVals)
				}
			}
			// AddSelfLoops(RemoveSelfLoops(g)) == AddSelfLoops(g).
			if !graphtest.SameCSR(graph.AddSelfLoops(s), graph.AddSelfLoops(c.g)) {
				t.Error("AddSelfLoops(RemoveSelfLoops(g)) != AddSelfLoops(g)")
			}
		})
	}
}

func TestTransposeDense(t *testing.T) {
	cases := smallGraphs()
	for _, wide := range []bool{false, true} {
		g := rectCSR(wide)
		g.Values = []float32{1, 2, 3, 4, 5}
		cases = append(cases, graphCase{fmt.Sprintf("rect_wide%v", wide), g})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.g
			var tr *graph.CSR
			var perm []int64
			transformsKeepInput(t, g, func() { tr, perm = graph.Transpose(g) })
			checkCSR(t, tr, g.NumCols, g.NumRows)
			if !graphtest.SortedRows(tr, false) {
				t.Error("transposed rows not ascending")
			}
			// TransposeIdx gives the same structure without values or perm.
			wide := g.Idx64
			if wide == nil {
				wide = graph.ConvertIdx[int32, int64](g.Idx32)
			}
			ptr, idx := graph.TransposeIdx(g.NumRows, g.NumCols, g.Indptr, wide)
			cols := make([]int64, tr.NNZ())
			for e := range cols {
				cols[e] = tr.Col(int64(e))
			}
			if !slices.Equal(ptr, tr.Indptr) || !slices.Equal(idx, cols) {
				t.Errorf("TransposeIdx = %v %v, want %v %v", ptr, idx, tr.Indptr, cols)
			}
			a, b := graphtest.Dense(g), graphtest.Dense(tr)
			for i := range a {
				for j := range a[i] {
					if a[i][j] != b[j][i] {
						t.Fatalf("T[%d][%d] = %d, A[%d][%d] = %d", j, i, b[j][i], i, j, a[i][j])
					}
				}
			}
			// perm is a permutation of the entries, and entry e of the
			// transpose is entry perm[e] of g with row and column swapped.
			if int64(len(perm)) != g.NNZ() {
				t.Fatalf("perm has %d entries, want %d", len(perm), g.NNZ())
			}
			rowOf := make([]int64, g.NNZ())
			for r := 0; r < g.NumRows; r++ {
				for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
					rowOf[e] = int64(r)
				}
			}
			seen := make([]bool, g.NNZ())
			for r := 0; r < tr.NumRows; r++ {
				for e := tr.Indptr[r]; e < tr.Indptr[r+1]; e++ {
					p := perm[e]
					if p < 0 || p >= g.NNZ() || seen[p] {
						t.Fatalf("perm[%d] = %d is not a permutation entry", e, p)
					}
					seen[p] = true
					if g.Col(p) != int64(r) || rowOf[p] != tr.Col(e) {
						t.Fatalf("entry %d (%d,%d) does not match source entry %d (%d,%d)", e, r, tr.Col(e), p, rowOf[p], g.Col(p))
					}
					if g.Values != nil && tr.Values[e] != g.Values[p] {
						t.Fatalf("value %d = %g, want in[perm[e]] = %g", e, tr.Values[e], g.Values[p])
					}
					// Stable: equal columns keep the source order.
					if e > tr.Indptr[r] && tr.Col(e) == tr.Col(e-1) && perm[e] < perm[e-1] {
						t.Fatalf("entries %d and %d out of source order", e-1, e)
					}
				}
			}
			if g.Values == nil && tr.Values != nil {
				t.Error("values invented")
			}
			// Transposing twice gives g with every row sorted (stably).
			back := Transposed(tr)
			if got, want := graphtest.Dense(back), graphtest.Dense(g); !denseEqual(got, want) {
				t.Error("T(T(g)) != g")
			}
		})
	}
}

func TestDegrees(t *testing.T) {
	cases := smallGraphs()
	cases = append(cases, graphCase{"rect", rectCSR(false)}, graphCase{"rect_wide", rectCSR(true)})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, out := graph.Degrees(c.g)
			a := graphtest.Dense(c.g)
			wantIn, wantOut := make([]int32, c.g.NumRows), make([]int32, c.g.NumCols)
			for i := range a {
				for j, k := range a[i] {
					wantIn[i] += int32(k)
					wantOut[j] += int32(k)
				}
			}
			if !slices.Equal(in, wantIn) || !slices.Equal(out, wantOut) {
				t.Errorf("degrees %v %v, want %v %v", in, out, wantIn, wantOut)
			}
		})
	}
}

// refSummary computes a degree summary by brute force.
func refSummary(deg []int32) graph.DegreeSummary {
	if len(deg) == 0 {
		return graph.DegreeSummary{}
	}
	s := slices.Clone(deg)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	n := len(s)
	var sum int64
	for _, v := range s {
		sum += int64(v)
	}
	med := float64(s[n/2])
	if n%2 == 0 {
		med = (float64(s[n/2-1]) + float64(s[n/2])) / 2
	}
	// Nearest rank: the smallest value with at least 99% of the values
	// at or below it.
	var p99 float64
	for _, v := range s {
		atOrBelow := 0
		for _, w := range s {
			if w <= v {
				atOrBelow++
			}
		}
		if 100*atOrBelow >= 99*n {
			p99 = float64(v)
			break
		}
	}
	hist := make([]int64, 1)
	for _, v := range s {
		b := 0
		if v > 0 {
			b = 1
			for int64(1)<<b <= int64(v) {
				b++
			}
		}
		for len(hist) <= b {
			hist = append(hist, 0)
		}
		hist[b]++
	}
	return graph.DegreeSummary{Min: int64(s[0]), Max: int64(s[n-1]), Mean: float64(sum) / float64(n), Median: med, P99: p99, Hist: hist}
}

func summaryEqual(a, b graph.DegreeSummary) bool {
	// The mean of the same degrees summed in two orders (float64, exact
	// below 2^53: the degrees are integers) and divided once: equal.
	return a.Min == b.Min && a.Max == b.Max && a.Mean == b.Mean &&
		a.Median == b.Median && a.P99 == b.P99 && slices.Equal(a.Hist, b.Hist)
}

func TestDegreeStats(t *testing.T) {
	// Hand-checked: 1->0, 2->0, 3->0, 0->0; node 4 isolated.
	g := graph.FromEdges(5, [][2]int64{{1, 0}, {2, 0}, {3, 0}, {0, 0}})
	st := g.DegreeStats()
	wantIn := graph.DegreeSummary{Min: 0, Max: 4, Mean: 0.8, Median: 0, P99: 4, Hist: []int64{4, 0, 0, 1}}
	wantOut := graph.DegreeSummary{Min: 0, Max: 1, Mean: 0.8, Median: 1, P99: 1, Hist: []int64{1, 4}}
	if st.Nodes != 5 || st.Edges != 4 || st.Isolated != 1 || !summaryEqual(st.In, wantIn) || !summaryEqual(st.Out, wantOut) {
		t.Errorf("got %+v, want in %+v out %+v isolated 1", st, wantIn, wantOut)
	}

	cases := smallGraphs()
	// A larger graph, so P99 differs from the maximum.
	cases = append(cases, graphCase{"n500", graph.FromEdges(500, graphtest.RandEdges(9, 500, 50, 3000))})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.g.DegreeStats()
			// Count degrees straight from the dense matrix.
			a := graphtest.Dense(c.g)
			in, out := make([]int32, c.g.NumRows), make([]int32, c.g.NumCols)
			isolated := 0
			for i := range a {
				for j, k := range a[i] {
					in[i] += int32(k)
					out[j] += int32(k)
				}
			}
			for i := range in {
				if in[i] == 0 && out[i] == 0 {
					isolated++
				}
			}
			if st.Nodes != c.g.NumRows || st.Edges != c.g.NNZ() || st.Isolated != isolated {
				t.Errorf("nodes %d edges %d isolated %d, want %d %d %d", st.Nodes, st.Edges, st.Isolated, c.g.NumRows, c.g.NNZ(), isolated)
			}
			if w := refSummary(in); !summaryEqual(st.In, w) {
				t.Errorf("in %+v, want %+v", st.In, w)
			}
			if w := refSummary(out); !summaryEqual(st.Out, w) {
				t.Errorf("out %+v, want %+v", st.Out, w)
			}
			var total int64
			for _, h := range st.In.Hist {
				total += h
			}
			if total != int64(c.g.NumRows) {
				t.Errorf("histogram counts %d nodes, want %d", total, c.g.NumRows)
			}
			if n := c.g.NumRows; n > 0 && len(st.In.Hist) != bits.Len64(uint64(st.In.Max))+1 {
				t.Errorf("histogram has %d buckets for max %d", len(st.In.Hist), st.In.Max)
			}
		})
	}
	if st := (&graph.Dataset{NumNodes: 3}).DegreeStats(); st.Nodes != 3 || st.Edges != 0 {
		t.Errorf("no graph: %+v", st)
	}
}

func TestGCNNorm(t *testing.T) {
	for _, c := range smallGraphs() {
		t.Run(c.name, func(t *testing.T) {
			if c.g.Values != nil {
				return // weighted: TestNormsWeighted
			}
			for _, prep := range []struct {
				name string
				g    *graph.CSR
			}{{"raw", c.g}, {"sym+loops", graph.AddSelfLoops(graph.Symmetrize(c.g))}} {
				g := prep.g
				var w []float32
				transformsKeepInput(t, g, func() { w = graph.GCNNorm(g) })
				if int64(len(w)) != g.NNZ() {
					t.Fatalf("%s: %d weights for %d entries", prep.name, len(w), g.NNZ())
				}
				deg := make([]float64, g.NumRows)
				for i, row := range graphtest.Dense(g) {
					for _, k := range row {
						deg[i] += float64(k)
					}
				}
				a := make([][]float64, g.NumRows) // the normalised matrix
				for i := range a {
					a[i] = make([]float64, g.NumCols)
				}
				for r := 0; r < g.NumRows; r++ {
					for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
						col := g.Col(e)
						want := 0.0
						if deg[r] > 0 && deg[col] > 0 {
							want = 1 / math.Sqrt(deg[r]*deg[col])
						}
						// float32 of a float64 1/√(d·d'): two roundings of
						// each (the product, the root and quotient within
						// float64's), within u32 + 3·u64 of want.
						if math.Abs(float64(w[e])-want) > (floattol.UFloat32+floattol.Gamma(3, floattol.UFloat64))*want {
							t.Fatalf("%s: entry %d (%d,%d): %g, want %g", prep.name, e, r, col, w[e], want)
						}
						a[r][col] += float64(w[e])
					}
				}
				if prep.name == "sym+loops" {
					// D^-1/2 (A+I) D^-1/2 is symmetric with diagonal 1/deg.
					for i := range a {
						// One float32 weight per diagonal entry, 1/√(d·d) =
						// 1/d within its rounding.
						if math.Abs(a[i][i]-1/deg[i]) > (floattol.UFloat32+floattol.Gamma(3, floattol.UFloat64))/deg[i] {
							t.Fatalf("diagonal %d: %g, want %g", i, a[i][i], 1/deg[i])
						}
						for j := range a[i] {
							// The same weight both ways: exact.
							if a[i][j] != a[j][i] {
								t.Fatalf("not symmetric at (%d,%d)", i, j)
							}
						}
					}
				}
			}
		})
	}
	// A column whose row is empty gets weight 0.
	g := graph.FromEdges(3, [][2]int64{{2, 0}, {0, 1}})
	if w := graph.GCNNorm(g); !slices.Equal(w, []float32{0, 1}) {
		t.Errorf("weights %v, want [0 1]", w)
	}
	// Non-square: columns past the rows have no entries of their own.
	for _, wide := range []bool{false, true} {
		w := graph.GCNNorm(rectCSR(wide)) // entries (0,4) (0,0) (2,1) (2,2) (2,2)
		want := []float32{0, 0.5, 0, 1.0 / 3, 1.0 / 3}
		for e := range want {
			if math.Abs(float64(w[e]-want[e])) > floattol.UFloat32*float64(want[e]) {
				t.Errorf("wide=%v: weights %v, want %v", wide, w, want)
				break
			}
		}
	}
}

func TestMeanNorm(t *testing.T) {
	for _, c := range smallGraphs() {
		t.Run(c.name, func(t *testing.T) {
			if c.g.Values != nil {
				return // weighted: TestNormsWeighted
			}
			var w []float32
			transformsKeepInput(t, c.g, func() { w = graph.MeanNorm(c.g) })
			if int64(len(w)) != c.g.NNZ() {
				t.Fatalf("%d weights for %d entries", len(w), c.g.NNZ())
			}
			for r := 0; r < c.g.NumRows; r++ {
				deg := c.g.Indptr[r+1] - c.g.Indptr[r]
				var sum float64
				for e := c.g.Indptr[r]; e < c.g.Indptr[r+1]; e++ {
					if want := float32(1 / float64(deg)); w[e] != want {
						t.Fatalf("entry %d: %g, want %g", e, w[e], want)
					}
					sum += float64(w[e])
				}
				// deg float32 weights, each within u32 of 1/deg, summed
				// in float64.
				if deg > 0 && math.Abs(sum-1) > floattol.UFloat32+floattol.Gamma(int(deg), floattol.UFloat64) {
					t.Fatalf("row %d sums to %g", r, sum)
				}
			}
		})
	}
}

func TestReorderByDegree(t *testing.T) {
	for _, c := range smallGraphs() {
		t.Run(c.name, func(t *testing.T) {
			d := graphtest.ReorderDataset(c.g)
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			orig := *d
			origG := graphtest.Clone(c.g)
			origFeat, origLab := slices.Clone(d.Features), slices.Clone(d.Labels)
			origSplits := [3][]int32{slices.Clone(d.Train), slices.Clone(d.Valid), slices.Clone(d.Test)}
			perm := graph.ReorderByDegree(d)
			n := d.NumNodes

			// The old arrays are untouched.
			if !graphtest.SameCSR(origG, c.g) || !slices.Equal(origFeat, orig.Features) || !slices.Equal(origLab, orig.Labels) ||
				!slices.Equal(origSplits[0], orig.Train) || !slices.Equal(origSplits[1], orig.Valid) || !slices.Equal(origSplits[2], orig.Test) {
				t.Fatal("ReorderByDegree modified the old arrays")
			}
			// perm is a permutation, sorted by descending total degree, ties by old id.
			if len(perm) != n {
				t.Fatalf("perm has %d entries for %d nodes", len(perm), n)
			}
			inv := make([]int32, n)
			seen := make([]bool, n)
			for newID, old := range perm {
				if old < 0 || int(old) >= n || seen[old] {
					t.Fatalf("perm %v is not a permutation", perm)
				}
				seen[old] = true
				inv[old] = int32(newID)
			}
			a := graphtest.Dense(origG)
			total := make([]int, n)
			for i := range a {
				for j, k := range a[i] {
					total[i] += k
					total[j] += k
				}
			}
			for k := 1; k < n; k++ {
				p, q := perm[k-1], perm[k]
				if total[p] < total[q] || total[p] == total[q] && p > q {
					t.Fatalf("perm %v not ordered by degree %v", perm, total)
				}
			}
			// The relabelled graph is isomorphic under perm, with each row
			// in the old column order and values alongside.
			checkCSR(t, d.Graph, n, n)
			b := graphtest.Dense(d.Graph)
			for r := 0; r < n; r++ {
				for j := 0; j < n; j++ {
					if b[r][j] != a[perm[r]][perm[j]] {
						t.Fatalf("new (%d,%d) = %d, old (%d,%d) = %d", r, j, b[r][j], perm[r], perm[j], a[perm[r]][perm[j]])
					}
				}
				o := int(perm[r])
				if rowLen(d.Graph, r) != rowLen(origG, o) {
					t.Fatalf("row %d length changed", r)
				}
				for k := int64(0); k < rowLen(origG, o); k++ {
					ne, oe := d.Graph.Indptr[r]+k, origG.Indptr[o]+k
					if d.Graph.Col(ne) != int64(inv[origG.Col(oe)]) {
						t.Fatalf("row %d: column order not kept", r)
					}
					if origG.Values != nil && d.Graph.Values[ne] != origG.Values[oe] {
						t.Fatalf("row %d: value not carried", r)
					}
				}
			}
			if (d.Graph.Values == nil) != (origG.Values == nil) {
				t.Error("values presence changed")
			}
			for r := 0; r < n; r++ {
				o := perm[r]
				if d.Features[2*r] != origFeat[2*o] || d.Features[2*r+1] != origFeat[2*o+1] || d.Labels[r] != origLab[o] {
					t.Fatalf("node %d: features/labels not permuted with the graph", r)
				}
			}
			for i, s := range [][]int32{d.Train, d.Valid, d.Test} {
				want := make([]int32, 0, len(origSplits[i]))
				for _, id := range origSplits[i] {
					want = append(want, inv[id])
				}
				slices.Sort(want)
				if !slices.Equal(s, want) {
					t.Fatalf("%s split %v, want %v", graph.SplitName(i), s, want)
				}
			}
			if err := d.Validate(); err != nil {
				t.Errorf("reordered dataset invalid: %v", err)
			}
		})
	}
}

func TestReorderByDegreeNoOp(t *testing.T) {
	if p := graph.ReorderByDegree(&graph.Dataset{NumNodes: 3}); p != nil {
		t.Errorf("no graph: perm %v", p)
	}
	g := rectCSR(false)
	d := &graph.Dataset{NumNodes: 3, Graph: g}
	if p := graph.ReorderByDegree(d); p != nil || d.Graph != g {
		t.Errorf("non-square graph: perm %v", p)
	}
	// Structure-only dataset: no features, labels or splits appear.
	d = &graph.Dataset{NumNodes: 4, Graph: graph.FromEdges(4, [][2]int64{{0, 3}, {1, 3}, {2, 3}})}
	perm := graph.ReorderByDegree(d)
	if !slices.Equal(perm, []int32{3, 0, 1, 2}) {
		t.Errorf("perm %v, want [3 0 1 2]", perm)
	}
	if d.Features != nil || d.Labels != nil || d.Train != nil || d.Valid != nil || d.Test != nil {
		t.Error("arrays invented for a structure-only dataset")
	}
	if got := fmt.Sprint(graphtest.RowsOf(d.Graph)); got != "[[1 2 3] [] [] []]" {
		t.Errorf("rows %s", got)
	}
}

// TestTransformsLargeDeterministic runs the transforms on a graph large
// enough for their parallel paths and checks that the result does not
// depend on GOMAXPROCS, and Symmetrize against a set-based reference.
func TestTransformsLargeDeterministic(t *testing.T) {
	const n = 2000 // 140000 edges: enough for every parallel path
	g := graph.FromEdges(n, graphtest.RandEdges(42, n, 100, 140000))
	g.Values = graphtest.RandValues(42, g.NNZ())
	type result struct {
		sym, loops, noLoops, tr *graph.CSR
		perm                    []int64
		gcn, mean               []float32
		in, out                 []int32
		stats                   graph.DegreeStats
		reorder                 []int32
		rg                      *graph.CSR
	}
	run := func(procs int, g *graph.CSR) result {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var r result
		r.sym = graph.Symmetrize(g)
		r.loops = graph.AddSelfLoops(g)
		r.noLoops = graph.RemoveSelfLoops(g)
		r.tr, r.perm = graph.Transpose(g)
		r.gcn = graph.GCNNorm(r.loops)
		r.mean = graph.MeanNorm(g)
		r.in, r.out = graph.Degrees(g)
		r.stats = g.DegreeStats()
		d := graphtest.ReorderDataset(g)
		r.reorder = graph.ReorderByDegree(d)
		r.rg = d.Graph
		return r
	}
	for _, gg := range []*graph.CSR{g, graphtest.Widen(g)} {
		a, b := run(1, gg), run(4, gg)
		if !graphtest.SameCSR(a.sym, b.sym) || !graphtest.SameCSR(a.loops, b.loops) || !graphtest.SameCSR(a.noLoops, b.noLoops) || !graphtest.SameCSR(a.tr, b.tr) ||
			!slices.Equal(a.perm, b.perm) || !slices.Equal(a.gcn, b.gcn) || !slices.Equal(a.mean, b.mean) ||
			!slices.Equal(a.in, b.in) || !slices.Equal(a.out, b.out) || fmt.Sprint(a.stats) != fmt.Sprint(b.stats) ||
			!slices.Equal(a.reorder, b.reorder) || !graphtest.SameCSR(a.rg, b.rg) {
			t.Fatalf("wide=%v: results depend on GOMAXPROCS", gg.Wide())
		}
		// Set-based reference for Symmetrize.
		sets := make([]map[int64]bool, n)
		for i := range sets {
			sets[i] = map[int64]bool{}
		}
		var inDeg, outDeg [n]int32
		for r := 0; r < n; r++ {
			for e := gg.Indptr[r]; e < gg.Indptr[r+1]; e++ {
				c := gg.Col(e)
				inDeg[r]++
				outDeg[c]++
				if c != int64(r) {
					sets[r][c], sets[c][int64(r)] = true, true
				}
			}
		}
		symRows := graphtest.RowsOf(a.sym)
		for r := 0; r < n; r++ {
			want := make([]int64, 0, len(sets[r]))
			for c := range sets[r] {
				want = append(want, c)
			}
			slices.Sort(want)
			if got := symRows[r]; !slices.Equal(got, want) {
				t.Fatalf("Symmetrize row %d: %v, want %v", r, got, want)
			}
		}
		if !slices.Equal(a.in, inDeg[:]) || !slices.Equal(a.out, outDeg[:]) {
			t.Fatal("Degrees differ from the reference count")
		}
		// Transpose perm and values on the parallel path.
		for e := range a.perm {
			if a.tr.Values[e] != gg.Values[a.perm[e]] || a.tr.Idx32 == nil && a.tr.Idx64 == nil {
				t.Fatalf("transpose value %d not in[perm[e]]", e)
			}
		}
	}
}

// rowLen is the length of row r of g.
func rowLen(g *graph.CSR, r int) int64 { return g.Indptr[r+1] - g.Indptr[r] }
