package graph_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// refRows lists, for every destination, the sources of its edges in input
// order.
func refRows(n int, edges [][2]int64) [][]int64 {
	rows := make([][]int64, n)
	for r := range rows {
		rows[r] = []int64{}
	}
	for _, e := range edges {
		rows[e[1]] = append(rows[e[1]], e[0])
	}
	return rows
}

func TestFromEdges(t *testing.T) {
	cases := []struct {
		name string
		n    int
		m    int
	}{
		{"empty", 0, 0},
		{"no edges", 4, 0},
		{"small", 30, 100},
		{"sparse", 100000, 140000}, // few edges per node
		{"dense parallel", 2000, 300000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edges := graphtest.RandEdges(uint64(c.n+c.m), c.n, min(c.n, 3), c.m)
			want := refRows(c.n, edges)
			var first *graph.CSR
			for _, procs := range []int{1, 3} {
				old := runtime.GOMAXPROCS(procs)
				g := graph.FromEdges(c.n, edges)
				runtime.GOMAXPROCS(old)
				checkCSR(t, g, c.n, c.n)
				if g.Wide() || g.Values != nil {
					t.Error("small graph stored with 64-bit ids or values")
				}
				got := graphtest.RowsOf(g)
				for r := range want {
					if !slices.Equal(got[r], want[r]) {
						t.Fatalf("GOMAXPROCS %d: row %d = %v, want %v", procs, r, got[r], want[r])
					}
				}
				if first == nil {
					first = g
				} else if !graphtest.SameCSR(first, g) {
					t.Fatal("result depends on GOMAXPROCS")
				}
			}
			// NewCSR from the same indptr and ids gives the same matrix.
			cols := make([]int64, first.NNZ())
			for e := range cols {
				cols[e] = first.Col(int64(e))
			}
			if h := graph.NewCSR(c.n, slices.Clone(first.Indptr), cols); !graphtest.SameCSR(h, first) || h.Wide() {
				t.Error("NewCSR differs")
			}
		})
	}
}

func TestFromEdgesPanicsOnBadID(t *testing.T) {
	for _, e := range [][2]int64{{0, 3}, {-1, 0}, {3, 0}, {0, -2}} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "outside [0,3)") {
					t.Errorf("edge %v: recover() = %v", e, r)
				}
			}()
			graph.FromEdges(3, [][2]int64{{0, 1}, e})
		}()
	}
}

func TestCSRValidate(t *testing.T) {
	good := graph.FromEdges(3, [][2]int64{{0, 1}, {2, 1}, {1, 2}})
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		g    *graph.CSR
		want string
	}{
		{"negative rows", &graph.CSR{NumRows: -1, NumCols: 3}, "negative"},
		{"negative cols", &graph.CSR{NumRows: 1, NumCols: -1, Indptr: []int64{0, 0}, Idx32: []int32{}}, "negative"},
		{"indptr not from 0", &graph.CSR{NumRows: 2, NumCols: 2, Indptr: []int64{1, 1, 2}, Idx32: []int32{0, 1}}, "indptr starts at 1"},
		{"short indptr", &graph.CSR{NumRows: 2, NumCols: 2, Indptr: []int64{0, 0}, Idx32: []int32{}}, "indptr has 2 entries, want 3"},
		{"column too large", &graph.CSR{NumRows: 1, NumCols: 2, Indptr: []int64{0, 1}, Idx64: []int64{2}}, "column 2 outside [0,2)"},
	}
	for _, c := range bad {
		err := c.g.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
