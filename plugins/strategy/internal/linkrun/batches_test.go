package linkrun

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/core/graph"
	"strata/core/sampling"
	"strata/internal/floattol"
	"strata/plugins/strategy/internal/steprun"
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

// TestExcludedDegrees checks that a batch's blocks with its edges taken
// out weigh GCN's edges as the graph without those edges does: every
// node's 1/sqrt(degree), with self loops and without, on a graph with
// repeated edges and a self loop, unweighted and weighted.
func TestExcludedDegrees(t *testing.T) {
	const n = 30
	rng := rand.New(rand.NewPCG(9, 10))
	var edges [][2]int64
	for range 90 {
		u, v := rng.Int64N(n), rng.Int64N(n)
		edges = append(edges, [2]int64{u, v}, [2]int64{v, u})
	}
	edges = append(edges, [2]int64{4, 9}, [2]int64{9, 4}, [2]int64{6, 6}) // a repeat, a self loop
	held := map[uint64]bool{UndirectedKey(4, 9, n): true, UndirectedKey(6, 6, n): true}
	for _, e := range edges[:20] {
		held[UndirectedKey(int32(e[0]), int32(e[1]), n)] = true
	}
	var kept [][2]int64
	for _, e := range edges {
		if !held[UndirectedKey(int32(e[0]), int32(e[1]), n)] {
			kept = append(kept, e)
		}
	}
	for _, weighted := range []bool{false, true} {
		g, without := graph.FromEdges(n, edges), graph.FromEdges(n, kept)
		if weighted { // a weight per entry, the same in both graphs
			weigh := func(c *graph.CSR) {
				c.Values = make([]float32, c.NNZ())
				for r := range c.NumRows {
					for e := c.Indptr[r]; e < c.Indptr[r+1]; e++ {
						c.Values[e] = float32(1 + (int64(r)*7+c.Col(e)*3)%5)
					}
				}
			}
			weigh(g)
			weigh(without)
		}
		r := &steprun.Runner{IsqBase: make([]float64, n), IsqSelf: make([]float64, n), Degree: graph.RowWeightSums(g)}
		for v, d := range r.Degree {
			r.IsqBase[v], r.IsqSelf[v] = 1/math.Sqrt(d), 1/math.Sqrt(d+1)
		}
		full, err := sampling.Full{Hops: 1}.Sample(context.Background(), g, steprun.Iota32(n), 0)
		if err != nil {
			t.Fatal(err)
		}
		b := ExcludeHeld(full, held, g)[0]
		want := graph.RowWeightSums(without)
		for _, self := range []bool{false, true} {
			scale, loop := r.GCNScale(b, self), 0.0
			if self {
				loop = 1
			}
			for v := range int32(n) {
				w := 0.0
				if want[v]+loop > 0 {
					w = 1 / math.Sqrt(want[v]+loop)
				}
				if got := scale(v); math.Abs(got-w) > 4*floattol.Gamma(2, floattol.UFloat64)*w {
					t.Fatalf("weighted %v, self loops %v: node %d scales by %v, the graph without the batch's edges by %v", weighted, self, v, got, w)
				}
			}
		}
	}
}
