package minibatch

import (
	"maps"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/sampling"
	"strata/plugins/strategy/internal/linkrun"
)

// TestExcludeHeld takes a batch's positives out of a block in both
// directions and keeps every other entry, with its value, in order.
func TestExcludeHeld(t *testing.T) {
	// Destinations 7 and 3 (global), sources 7, 3, 9, 1 (local 0..3).
	b := sampling.Block{Dst: []int32{7, 3}, Src: []int32{7, 3, 9, 1}}
	b.Adj = graph.MakeCSR(2, 4, []int64{0, 3, 6}, []int32{1, 2, 3, 0, 2, 3})
	b.Adj.Values = []float32{1, 2, 3, 4, 5, 6}
	// The graph (rows list in-neighbours): 7 <- 1, 3, 9; 3 <- 1, 7, 9;
	// 9 <- 3, 7; 1 <- 3, 7.
	g := graph.MakeCSR(10, 10, []int64{0, 0, 2, 2, 5, 5, 5, 5, 8, 8, 10}, []int32{3, 7, 1, 7, 9, 1, 3, 9, 3, 7})
	l := &miniLink{nodes: 10, graph: g}
	// Positives 3->7 and 3->9: entries 3->7 (row 7) and its reverse 7->3
	// (row 3) go, and 9->3 (row 3), the reverse of a positive, too.
	held := map[uint64]bool{linkrun.UndirectedKey(3, 7, 10): true, linkrun.UndirectedKey(3, 9, 10): true}
	out := l.excludeHeld([]sampling.Block{b}, held)[0]
	if !slices.Equal(out.Adj.Indptr, []int64{0, 2, 3}) || !slices.Equal(out.Adj.Idx32, []int32{2, 3, 3}) || !slices.Equal(out.Adj.Values, []float32{2, 3, 6}) {
		t.Fatalf("indptr %v cols %v values %v; want [0 2 3] [2 3 3] [2 3 6]", out.Adj.Indptr, out.Adj.Idx32, out.Adj.Values)
	}
	// Without 3-7 and 3-9, node 3 has two in-edges fewer, 7 and 9 one.
	if want := map[int32]float64{3: 2, 7: 1, 9: 1}; !maps.Equal(out.Excluded, want) {
		t.Fatalf("lost degrees %v, want %v", out.Excluded, want)
	}
	if b.Adj.NNZ() != 6 {
		t.Fatal("the input block changed")
	}
}

// TestLocalBatch maps a batch's pairs to the sorted ids of its endpoints.
func TestLocalBatch(t *testing.T) {
	l := &miniLink{nodes: 10}
	lb := l.localBatch(graph.Pairs{Src: []int32{5, 2}, Dst: []int32{2, 8}}, graph.Pairs{Src: []int32{5, 9}, Dst: []int32{0, 2}})
	if !slices.Equal(lb.nodes, []int32{0, 2, 5, 8, 9}) {
		t.Fatalf("nodes %v", lb.nodes)
	}
	if !slices.Equal(lb.pos.Src, []int32{2, 1}) || !slices.Equal(lb.pos.Dst, []int32{1, 3}) || !slices.Equal(lb.neg.Src, []int32{2, 4}) || !slices.Equal(lb.neg.Dst, []int32{0, 1}) {
		t.Fatalf("pos %v neg %v", lb.pos, lb.neg)
	}
	if !lb.held[linkrun.UndirectedKey(2, 5, 10)] || !lb.held[linkrun.UndirectedKey(8, 2, 10)] || len(lb.held) != 2 {
		t.Fatalf("held %v", lb.held)
	}
}
