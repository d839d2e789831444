package linkrun

import (
	"slices"
	"testing"

	"strata/core/graph"
)

// TestEdgeBatchPart keeps the chosen positives, in order, each with its
// own k negatives, and maps a part's pairs to the sorted ids of its
// endpoints, keying its positives in either direction.
func TestEdgeBatchPart(t *testing.T) {
	b := EdgeBatch{
		Pos: graph.Pairs{Src: []int32{5, 2, 7}, Dst: []int32{2, 8, 1}},
		Neg: graph.Pairs{Src: []int32{5, 5, 9, 2, 7, 7}, Dst: []int32{0, 3, 2, 4, 6, 5}}, // k = 2
	}
	p := b.Part(func(i int) bool { return i != 1 })
	if !slices.Equal(p.Pos.Src, []int32{5, 7}) || !slices.Equal(p.Pos.Dst, []int32{2, 1}) ||
		!slices.Equal(p.Neg.Src, []int32{5, 5, 7, 7}) || !slices.Equal(p.Neg.Dst, []int32{0, 3, 6, 5}) {
		t.Fatalf("part: pos %v neg %v", p.Pos, p.Neg)
	}
	nodes, pos, neg := p.Local()
	if !slices.Equal(nodes, []int32{0, 1, 2, 3, 5, 6, 7}) {
		t.Fatalf("nodes %v", nodes)
	}
	if !slices.Equal(pos.Src, []int32{4, 6}) || !slices.Equal(pos.Dst, []int32{2, 1}) || !slices.Equal(neg.Src, []int32{4, 4, 6, 6}) || !slices.Equal(neg.Dst, []int32{0, 3, 5, 4}) {
		t.Fatalf("local pos %v neg %v", pos, neg)
	}
	held := p.Held(10)
	if !held[UndirectedKey(2, 5, 10)] || !held[UndirectedKey(7, 1, 10)] || held[UndirectedKey(2, 8, 10)] || len(held) != 2 {
		t.Fatalf("held %v", held)
	}
	if e := b.Part(func(int) bool { return false }); e.Pos.Len() != 0 || e.Neg.Len() != 0 {
		t.Fatalf("empty part: pos %v neg %v", e.Pos, e.Neg)
	}
	if nodes, _, _ := (EdgeBatch{}).Local(); len(nodes) != 0 {
		t.Fatalf("an empty batch has nodes %v", nodes)
	}
}
