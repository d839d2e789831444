package partitioners

import (
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"

	"strata/internal/floattol"
)

// randomBlock returns a rows x cols CSR with m random entries (duplicates
// and, when square, self loops included), with 64-bit ids when wide.
func randomBlock(rows, cols, m int, seed uint64, wide bool) *graph.CSR {
	rng := splitmix64(seed)
	lists := make([][]int64, rows)
	for e := 0; e < m && rows > 0 && cols > 0; e++ {
		r := int(rng.below(uint64(rows)))
		c := int64(rng.below(uint64(cols)))
		lists[r] = append(lists[r], c)
		if rng.below(8) == 0 { // a duplicate now and then
			lists[r] = append(lists[r], c)
		}
	}
	g := &graph.CSR{NumRows: rows, NumCols: cols, Indptr: make([]int64, rows+1)}
	var idx []int64
	for r, l := range lists {
		idx = append(idx, l...)
		g.Indptr[r+1] = int64(len(idx))
	}
	if wide {
		g.Idx64 = append([]int64{}, idx...)
	} else {
		g.Idx32 = make([]int32, len(idx))
		for i, c := range idx {
			g.Idx32[i] = int32(c)
		}
	}
	return g
}

// bruteQuality computes Metrics from the edge list with maps and sets.
func bruteQuality(g *graph.CSR, parts []int32, k int) Metrics {
	m := Metrics{K: k, Nodes: g.NumRows, Edges: g.NNZ(), PartNodes: make([]int64, k), PartEdges: make([]int64, k), PartInputs: make([]int64, k)}
	sets := make([]map[int64]bool, k)
	for p := range sets {
		sets[p] = map[int64]bool{}
	}
	all := map[int64]bool{}
	for r := 0; r < g.NumRows; r++ {
		p := parts[r]
		m.PartNodes[p]++
		for e := g.Indptr[r]; e < g.Indptr[r+1]; e++ {
			c := g.Col(e)
			m.PartEdges[p]++
			sets[p][c] = true
			all[c] = true
			if g.NumRows == g.NumCols && parts[c] != p {
				m.EdgeCut++
			}
		}
	}
	if g.NumRows != g.NumCols {
		m.EdgeCut, m.CutFraction = -1, -1
	} else if m.Edges > 0 {
		m.CutFraction = float64(m.EdgeCut) / float64(m.Edges)
	}
	var sum int64
	for p := 0; p < k; p++ {
		m.PartInputs[p] = int64(len(sets[p]))
		sum += m.PartInputs[p]
		if m.PartNodes[p] == 0 {
			m.EmptyParts++
		}
	}
	m.Inputs = int64(len(all))
	bal := func(s []int64) float64 {
		var t int64
		for _, x := range s {
			t += x
		}
		if t == 0 {
			return 1
		}
		return float64(slices.Max(s)) / (float64(t) / float64(k))
	}
	m.NodeBalance, m.EdgeBalance = bal(m.PartNodes), bal(m.PartEdges)
	if g.NumCols > 0 {
		m.ReplicationFactor = float64(sum) / float64(g.NumCols)
	}
	if len(all) > 0 {
		m.Redundancy = float64(sum) / float64(len(all))
	}
	return m
}

func metricsEqual(a, b Metrics) bool {
	// Ratios of integer counts (exact below 2^53): at most two divisions
	// and a product on each side.
	near := func(x, y float64) bool { return math.Abs(x-y) <= floattol.Gamma(6, floattol.UFloat64)*math.Abs(x) }
	return a.K == b.K && a.Nodes == b.Nodes && a.Edges == b.Edges && a.EdgeCut == b.EdgeCut &&
		near(a.CutFraction, b.CutFraction) && slices.Equal(a.PartNodes, b.PartNodes) &&
		slices.Equal(a.PartEdges, b.PartEdges) && a.EmptyParts == b.EmptyParts &&
		near(a.NodeBalance, b.NodeBalance) && near(a.EdgeBalance, b.EdgeBalance) &&
		slices.Equal(a.PartInputs, b.PartInputs) && a.Inputs == b.Inputs &&
		near(a.ReplicationFactor, b.ReplicationFactor) && near(a.Redundancy, b.Redundancy)
}

func TestQualityExample(t *testing.T) {
	// 0->1, 0->2, 1->2, 2->3, 3->3; parts {0,1} {2,3}.
	g := graph.FromEdges(4, [][2]int64{{0, 1}, {0, 2}, {1, 2}, {2, 3}, {3, 3}})
	got := Quality(g, []int32{0, 0, 1, 1}, 2)
	want := Metrics{
		K: 2, Nodes: 4, Edges: 5, EdgeCut: 2, CutFraction: 0.4,
		PartNodes: []int64{2, 2}, PartEdges: []int64{1, 4}, NodeBalance: 1, EdgeBalance: 1.6,
		PartInputs: []int64{1, 4}, Inputs: 4, ReplicationFactor: 1.25, Redundancy: 1.25,
	}
	if !metricsEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if s := got.String(); !strings.Contains(s, "cut=2") || !strings.Contains(s, "alpha=1.250") {
		t.Fatalf("String() = %q", s)
	}
}

func TestQualityBruteForce(t *testing.T) {
	tests := []struct {
		name       string
		rows, cols int
		m, k       int
		wide       bool
	}{
		{"square sparse", 50, 50, 80, 4, false},
		{"square dense", 30, 30, 600, 3, false},
		{"square k=1", 20, 20, 50, 1, false},
		{"square k=n", 12, 12, 40, 12, false},
		{"square empty parts", 10, 10, 30, 16, false},
		{"square wide ids", 40, 40, 120, 5, true},
		{"edgeless", 10, 10, 0, 3, false},
		{"block", 30, 200, 300, 4, false},
		{"block tall", 200, 30, 500, 7, false},
		{"block wide ids", 25, 90, 150, 3, true},
		{"block edgeless", 5, 9, 0, 2, false},
		{"no rows", 0, 5, 0, 2, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for rep := 0; rep < 5; rep++ {
				seed := uint64(100*i + rep)
				g := randomBlock(tt.rows, tt.cols, tt.m, seed, tt.wide)
				rng := splitmix64(seed ^ 0xabc)
				parts := make([]int32, tt.rows)
				for r := range parts {
					parts[r] = int32(rng.below(uint64(tt.k)))
				}
				got, want := Quality(g, parts, tt.k), bruteQuality(g, parts, tt.k)
				if !metricsEqual(got, want) {
					t.Fatalf("seed %d:\ngot  %+v\nwant %+v", seed, got, want)
				}
			}
		})
	}
}

func TestQualityPanics(t *testing.T) {
	g := graph.FromEdges(3, [][2]int64{{0, 1}})
	for _, tt := range []struct {
		parts []int32
		k     int
		want  string
	}{
		{[]int32{0, 0}, 2, "2 parts for 3 rows"},
		{[]int32{0, 0, 0}, 0, "k = 0"},
		{[]int32{0, 2, 0}, 2, "row 1 is in part 2"},
		{[]int32{0, -1, 0}, 2, "row 1 is in part -1"},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tt.want) {
					t.Errorf("panic %v, want %q", r, tt.want)
				}
			}()
			Quality(g, tt.parts, tt.k)
		}()
	}
}

func TestMetricsStringOmitsMeaninglessCut(t *testing.T) {
	for _, tc := range []struct {
		m    Metrics
		want string
		not  string
	}{
		{Metrics{K: 2, EdgeCut: 3, CutFraction: 0.5}, "cut=3 (0.5000)", ""},
		{Metrics{K: 2, EdgeCut: -1, CutFraction: -1}, "k=2 balance", "cut="},
	} {
		s := tc.m.String()
		if !strings.Contains(s, tc.want) || tc.not != "" && strings.Contains(s, tc.not) {
			t.Errorf("String() = %q, want %q without %q", s, tc.want, tc.not)
		}
	}
}
