package microsplit

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/sampling"
)

// pairBlocks are the 2-hop full blocks of every node of a random graph.
func pairBlocks(t *testing.T, n int) []sampling.Block {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	var edges [][2]int64
	for range 3 * n {
		edges = append(edges, [2]int64{rng.Int64N(int64(n)), rng.Int64N(int64(n))})
	}
	blocks, err := sampling.Full{Hops: 2}.Sample(context.Background(), graph.FromEdges(n, edges), seq(n), 0)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

func seq(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

// TestSplitPairs checks the micro-batches of a link step: every positive
// lands once, with its own negatives, in its source's part; each
// micro-batch's outputs are exactly its pairs' endpoints and its blocks
// SplitBlocks' of them; parts without positives are left out.
func TestSplitPairs(t *testing.T) {
	const n, k, parts = 40, 2, 4
	blocks := pairBlocks(t, n)
	rng := rand.New(rand.NewPCG(7, 8))
	part := make([]int32, n)
	for i := range part {
		part[i] = int32(rng.IntN(parts - 1)) // part 3 stays empty
	}
	var pos, neg graph.Pairs
	for range 25 {
		pos.Src, pos.Dst = append(pos.Src, rng.Int32N(n)), append(pos.Dst, rng.Int32N(n))
		for range k {
			neg.Src, neg.Dst = append(neg.Src, rng.Int32N(n)), append(neg.Dst, rng.Int32N(n))
		}
	}
	pbs, err := SplitPairs(blocks, part, parts, pos, neg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pbs) != parts-1 {
		t.Fatalf("%d micro-batches, want %d (one part has no positive)", len(pbs), parts-1)
	}
	type pair struct{ s, d int32 }
	var got, want []pair
	total := 0
	for _, pb := range pbs {
		total += pb.Positives
		if pb.Pos.Len() != pb.Positives || pb.Neg.Len() != k*pb.Positives {
			t.Fatalf("%d positives, %d negatives, Positives %d", pb.Pos.Len(), pb.Neg.Len(), pb.Positives)
		}
		ends := slices.Concat(pb.Pos.Src, pb.Pos.Dst, pb.Neg.Src, pb.Neg.Dst)
		for _, r := range ends {
			if int(r) >= len(pb.Nodes) {
				t.Fatalf("local id %d of %d outputs", r, len(pb.Nodes))
			}
		}
		used := make([]bool, len(pb.Nodes))
		for _, r := range ends {
			used[r] = true
		}
		if i := slices.Index(used, false); i >= 0 {
			t.Fatalf("output %d (node %d) is no pair's endpoint", i, pb.Nodes[i])
		}
		if !slices.Equal(pb.Blocks[1].Adj.Indptr, SplitBlocks(blocks, pb.Nodes)[1].Adj.Indptr) {
			t.Fatal("the micro-batch's blocks are not SplitBlocks' of its outputs")
		}
		src := pb.Nodes[pb.Pos.Src[0]]
		for i := range pb.Pos.Src {
			s, d := pb.Nodes[pb.Pos.Src[i]], pb.Nodes[pb.Pos.Dst[i]]
			if part[s] != part[src] {
				t.Fatalf("positive (%d, %d) of part %d in the micro-batch of part %d", s, d, part[s], part[src])
			}
			got = append(got, pair{s, d})
			for j := i * k; j < (i+1)*k; j++ {
				got = append(got, pair{pb.Nodes[pb.Neg.Src[j]], pb.Nodes[pb.Neg.Dst[j]]})
			}
		}
	}
	for i := range pos.Src {
		want = append(want, pair{pos.Src[i], pos.Dst[i]})
		for j := i * k; j < (i+1)*k; j++ {
			want = append(want, pair{neg.Src[j], neg.Dst[j]})
		}
	}
	cmp := func(a, b pair) int { return int(a.s-b.s)*1000 + int(a.d-b.d) }
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	if total != pos.Len() || !slices.Equal(got, want) {
		t.Fatalf("%d positives over the micro-batches, pairs differ: the split lost or invented pairs", total)
	}
}

// TestSplitPairsErrors checks that malformed steps are refused.
func TestSplitPairsErrors(t *testing.T) {
	blocks := pairBlocks(t, 10)
	part := make([]int32, 10)
	one := graph.Pairs{Src: []int32{1}, Dst: []int32{2}}
	cases := []struct {
		name     string
		part     []int32
		pos, neg graph.Pairs
		want     string
	}{
		{"parts per row", part[:9], one, one, "parts for 10"},
		{"no positives", part, graph.Pairs{}, one, "no whole number"},
		{"ragged negatives", part, graph.Pairs{Src: []int32{1, 2}, Dst: []int32{2, 3}}, graph.Pairs{Src: []int32{1, 2, 3}, Dst: []int32{2, 3, 4}}, "no whole number"},
		{"positive outside", part, graph.Pairs{Src: []int32{10}, Dst: []int32{2}}, one, "positive 0"},
		{"negative outside", part, one, graph.Pairs{Src: []int32{1}, Dst: []int32{-1}}, "negative 0"},
		{"part outside", append([]int32{}, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0), one, one, "in part 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SplitPairs(blocks, c.part, 2, c.pos, c.neg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}
