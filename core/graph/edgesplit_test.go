package graph

import (
	"errors"
	"slices"
	"testing"
)

// ringWithChords is a symmetric graph of n nodes: a ring, chords i→i+3,
// a self loop on node 0, and weights that name each entry.
func ringWithChords(n int) *CSR {
	var edges [][2]int64
	for i := range n {
		for _, d := range []int{1, 3} {
			j := (i + d) % n
			edges = append(edges, [2]int64{int64(i), int64(j)}, [2]int64{int64(j), int64(i)})
		}
	}
	edges = append(edges, [2]int64{0, 0})
	g := FromEdges(n, edges)
	g.Values = make([]float32, g.NNZ())
	for e := range g.Values {
		g.Values[e] = float32(e + 1)
	}
	return g
}

func TestParseEdgeSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want EdgeSplitSpec
		bad  bool
	}{
		{in: "random-85-5-10", want: EdgeSplitSpec{Train: 85, Valid: 5, Test: 10}},
		{in: "random-80-10-10-seed7", want: EdgeSplitSpec{Train: 80, Valid: 10, Test: 10, Seed: 7, SeedSet: true}},
		{in: "random-50-0-0", want: EdgeSplitSpec{Train: 50}},
		{in: "random-85-10-10", bad: true}, // sums to 105
		{in: "random-0-50-50", bad: true},  // no training edges
		{in: "random-101-0-0", bad: true},
		{in: "random-85-5", bad: true},
		{in: "85-5-10", bad: true},
		{in: "random-85-5-10-seed", bad: true},
	} {
		got, err := ParseEdgeSplit(tc.in)
		if tc.bad {
			if err == nil || !errors.Is(err, ErrSplit) {
				t.Errorf("%q: err = %v, want an ErrSplit", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestSplitEdgesUndirected(t *testing.T) {
	const n = 40
	g := ringWithChords(n)
	spec := EdgeSplitSpec{Train: 70, Valid: 10, Test: 15, Seed: 3}
	s, err := SplitEdges(g, spec, false) // g is symmetric: undirected
	if err != nil {
		t.Fatal(err)
	}
	if !s.Undirected || s.Edges != 2*n {
		t.Fatalf("undirected %v, %d edges; want true, %d", s.Undirected, s.Edges, 2*n)
	}
	if s.Train.Len() != 56 || s.Valid.Len() != 8 || s.Test.Len() != 12 {
		t.Fatalf("split %d/%d/%d, want 56/8/12", s.Train.Len(), s.Valid.Len(), s.Test.Len())
	}
	seen := map[[2]int32]string{}
	for name, p := range map[string]Pairs{"train": s.Train, "valid": s.Valid, "test": s.Test} {
		for i := range p.Src {
			k := [2]int32{p.Src[i], p.Dst[i]}
			if k[0] >= k[1] {
				t.Fatalf("%s pair %v is not (smaller, larger)", name, k)
			}
			if prev, dup := seen[k]; dup {
				t.Fatalf("pair %v in %s and %s", k, prev, name)
			}
			seen[k] = name
		}
	}
	// The message graph holds the training pairs in both directions, the
	// self loop, and nothing held out in either direction, with values.
	inGraph := map[[2]int32]float32{}
	for dst := range n {
		for e := s.Graph.Indptr[dst]; e < s.Graph.Indptr[dst+1]; e++ {
			inGraph[[2]int32{int32(s.Graph.Col(e)), int32(dst)}] = s.Graph.Values[e]
		}
	}
	if s.Graph.NNZ() != int64(2*s.Train.Len()+1) {
		t.Fatalf("message graph has %d entries, want %d", s.Graph.NNZ(), 2*s.Train.Len()+1)
	}
	for _, held := range []Pairs{s.Valid, s.Test} {
		for i := range held.Src {
			u, v := held.Src[i], held.Dst[i]
			if _, ok := inGraph[[2]int32{u, v}]; ok {
				t.Fatalf("held-out edge %d→%d is in the message graph", u, v)
			}
			if _, ok := inGraph[[2]int32{v, u}]; ok {
				t.Fatalf("the reverse %d→%d of a held-out edge is in the message graph", v, u)
			}
		}
	}
	if w, ok := inGraph[[2]int32{0, 0}]; !ok || w != g.Values[g.Indptr[0]+int64(slices.Index(g.Idx32[g.Indptr[0]:g.Indptr[1]], 0))] {
		t.Fatalf("self loop lost or its value changed: %v %v", ok, w)
	}
	checkNegatives(t, g, s)
	again, _ := SplitEdges(g, spec, false)
	if !slices.Equal(again.Test.Src, s.Test.Src) || !slices.Equal(again.TestNeg.Dst, s.TestNeg.Dst) {
		t.Fatal("the same spec gave another split")
	}
	other, _ := SplitEdges(g, EdgeSplitSpec{Train: 70, Valid: 10, Test: 15, Seed: 4}, false)
	if slices.Equal(other.Test.Src, s.Test.Src) && slices.Equal(other.Test.Dst, s.Test.Dst) {
		t.Fatal("another seed gave the same test edges")
	}
}

// checkNegatives checks the held-out negatives: as many as positives,
// distinct, never an edge of g in either direction nor a self loop.
func checkNegatives(t *testing.T, g *CSR, s *EdgeSplit) {
	t.Helper()
	edge := map[[2]int32]bool{}
	for dst := range g.NumRows {
		for e := g.Indptr[dst]; e < g.Indptr[dst+1]; e++ {
			edge[[2]int32{int32(g.Col(e)), int32(dst)}] = true
		}
	}
	seen := map[[2]int32]bool{}
	for _, c := range []struct{ pos, neg Pairs }{{s.Valid, s.ValidNeg}, {s.Test, s.TestNeg}} {
		if c.neg.Len() != c.pos.Len() {
			t.Fatalf("%d negatives for %d positives", c.neg.Len(), c.pos.Len())
		}
		for i := range c.neg.Src {
			u, v := c.neg.Src[i], c.neg.Dst[i]
			if u == v || edge[[2]int32{u, v}] || edge[[2]int32{v, u}] || seen[[2]int32{u, v}] || (s.Undirected && u > v) {
				t.Fatalf("negative %d→%d is a self loop, an edge, a repeat or unordered", u, v)
			}
			seen[[2]int32{u, v}] = true
		}
	}
}

func TestSplitEdgesDirected(t *testing.T) {
	// A directed cycle with one reciprocated edge: directed pairs.
	g := FromEdges(6, [][2]int64{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}, {1, 0}})
	s, err := SplitEdges(g, EdgeSplitSpec{Train: 58, Valid: 14, Test: 28}, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Undirected || s.Edges != 7 || s.Train.Len() != 4 || s.Valid.Len() != 1 || s.Test.Len() != 2 {
		t.Fatalf("undirected %v, %d edges, %d/%d/%d", s.Undirected, s.Edges, s.Train.Len(), s.Valid.Len(), s.Test.Len())
	}
	if s.Graph.NNZ() != 4 {
		t.Fatalf("message graph %d entries, want the 4 training edges", s.Graph.NNZ())
	}
	sym, err := SplitEdges(g, EdgeSplitSpec{Train: 58, Valid: 14, Test: 28}, true)
	if err != nil || !sym.Undirected || sym.Edges != 6 {
		t.Fatalf("symmetrised split: %v, %+v", err, sym)
	}
}

func TestSplitEdgesErrors(t *testing.T) {
	loops := FromEdges(3, [][2]int64{{0, 0}, {1, 1}})
	if _, err := SplitEdges(loops, EdgeSplitSpec{Train: 85, Valid: 5, Test: 10}, true); !errors.Is(err, ErrSplit) {
		t.Fatalf("a graph of self loops: err = %v, want ErrSplit (no edges for training)", err)
	}
	// K4 has 6 pairs, all edges: no negatives can be drawn.
	var k4 [][2]int64
	for i := range 4 {
		for j := range 4 {
			if i != j {
				k4 = append(k4, [2]int64{int64(i), int64(j)})
			}
		}
	}
	if _, err := SplitEdges(FromEdges(4, k4), EdgeSplitSpec{Train: 50, Valid: 25, Test: 25}, true); !errors.Is(err, ErrSplit) {
		t.Fatalf("a complete graph: err = %v, want ErrSplit (too dense for negatives)", err)
	}
}
