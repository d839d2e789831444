package graph

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// shipped returns a ShippedEdges of the given parts (nil: not given),
// each part's file named after it.
func shipped(parts map[int]Pairs) *ShippedEdges {
	sh := &ShippedEdges{Source: "split"}
	for i, p := range parts {
		sh.Pairs[i], sh.Files[i] = p, EdgeSplitParts[i]+".npy"
	}
	return sh
}

// pairs builds Pairs from (src, dst) tuples.
func pairs(ps ...[2]int32) Pairs {
	var p Pairs
	for _, x := range ps {
		p.Src, p.Dst = append(p.Src, x[0]), append(p.Dst, x[1])
	}
	return p
}

// TestSplitShippedGenerated ships a generated split's every part: the
// split built from them is the generated one (same pairs, same
// message-passing graph, with values), and Edges is the same.
func TestSplitShippedGenerated(t *testing.T) {
	g := ringWithChords(40)
	want, err := SplitEdges(g, EdgeSplitSpec{Train: 70, Valid: 10, Test: 20, Seed: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	sh := &ShippedEdges{Source: "split", Pairs: want.Parts()}
	for i := range sh.Files {
		sh.Files[i] = EdgeSplitParts[i]
	}
	got, err := SplitShipped(g, sh, 99, false) // every part given: the seed draws nothing
	if err != nil {
		t.Fatal(err)
	}
	if gp, wp := got.Parts(), want.Parts(); !slices.EqualFunc(gp[:], wp[:], pairsEqual) {
		t.Fatal("the shipped parts differ from the generated split's")
	}
	if !slices.Equal(got.Graph.Indptr, want.Graph.Indptr) || !slices.Equal(got.Graph.Values, want.Graph.Values) || got.Edges != want.Edges || !got.Undirected {
		t.Fatalf("message graph or edges differ: %d vs %d entries, %d vs %d edges", got.Graph.NNZ(), want.Graph.NNZ(), got.Edges, want.Edges)
	}
	for e := range got.Graph.NNZ() {
		if got.Graph.Col(e) != want.Graph.Col(e) {
			t.Fatalf("entry %d: column %d, want %d", e, got.Graph.Col(e), want.Graph.Col(e))
		}
	}
}

func pairsEqual(a, b Pairs) bool { return slices.Equal(a.Src, b.Src) && slices.Equal(a.Dst, b.Dst) }

// TestSplitShippedDraws ships positives only, one of them no edge of the
// graph: the held-out pairs leave the message-passing graph in both
// directions, the negatives are drawn from the seed (as many as the
// positives, no edges), the training sample is a seeded sample of train.
func TestSplitShippedDraws(t *testing.T) {
	const n = 40
	g := ringWithChords(n)
	train := pairs([2]int32{0, 1}, [2]int32{1, 2}, [2]int32{2, 3}, [2]int32{3, 4}, [2]int32{4, 7})
	valid := pairs([2]int32{5, 6}, [2]int32{9, 6}) // 9→6 is a chord's reverse
	test := pairs([2]int32{7, 8}, [2]int32{0, 20}) // (0, 20) is no edge of g: accepted
	s, err := SplitShipped(g, shipped(map[int]Pairs{PartTrain: train, PartValid: valid, PartTest: test}), 5, false)
	if err != nil {
		t.Fatal(err)
	}
	checkNegatives(t, g, s)
	if s.Edges != 9 || s.TrainEval.Len() != train.Len() || s.TrainEvalNeg.Len() != train.Len() {
		t.Fatalf("edges %d, training sample %d with %d negatives; want 9, 5, 5", s.Edges, s.TrainEval.Len(), s.TrainEvalNeg.Len())
	}
	if want := g.NNZ() - 2*3; s.Graph.NNZ() != want { // 3 held-out edges of g, both directions
		t.Fatalf("message graph %d entries, want %d", s.Graph.NNZ(), want)
	}
	for dst := range n {
		for e := s.Graph.Indptr[dst]; e < s.Graph.Indptr[dst+1]; e++ {
			u, v := int32(s.Graph.Col(e)), int32(dst)
			for _, h := range []Pairs{valid, test} {
				for i := range h.Src {
					if u == h.Src[i] && v == h.Dst[i] || u == h.Dst[i] && v == h.Src[i] {
						t.Fatalf("held-out pair (%d, %d) is in the message graph as %d→%d", h.Src[i], h.Dst[i], u, v)
					}
				}
			}
		}
	}
	again, _ := SplitShipped(g, shipped(map[int]Pairs{PartTrain: train, PartValid: valid, PartTest: test}), 5, false)
	if !pairsEqual(again.TestNeg, s.TestNeg) || !pairsEqual(again.TrainEval, s.TrainEval) {
		t.Fatal("the same seed drew other negatives or another training sample")
	}
}

// TestSplitShippedNegativesAvoidPositives: on the path 0-1-2-3-4, test
// positives that are no edges leave exactly three pairs that are neither
// edges nor positives, which the three drawn test negatives must be.
func TestSplitShippedNegativesAvoidPositives(t *testing.T) {
	g := FromEdges(5, [][2]int64{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {3, 4}, {4, 3}})
	sh := shipped(map[int]Pairs{PartTrain: pairs([2]int32{0, 1}, [2]int32{1, 2}), PartTest: pairs([2]int32{0, 2}, [2]int32{3, 0}, [2]int32{0, 4}),
		PartTrainEval: {}, PartTrainEvalNeg: {}})
	for seed := range uint64(20) {
		s, err := SplitShipped(g, sh, seed, false)
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]int32]bool{}
		for i := range s.TestNeg.Src {
			got[[2]int32{s.TestNeg.Src[i], s.TestNeg.Dst[i]}] = true
		}
		if len(got) != 3 || !got[[2]int32{1, 3}] || !got[[2]int32{1, 4}] || !got[[2]int32{2, 4}] {
			t.Fatalf("seed %d: test negatives %v, want (1, 3), (1, 4), (2, 4)", seed, s.TestNeg)
		}
	}
}

// TestSplitShippedErrors: each mistake of a shipped split is an ErrSplit
// naming the file at fault.
func TestSplitShippedErrors(t *testing.T) {
	g := ringWithChords(40) // edges (i, i+1) and (i, i+3) both ways
	train := pairs([2]int32{0, 1}, [2]int32{1, 2})
	cases := []struct {
		name  string
		parts map[int]Pairs
		file  string
		want  string
	}{
		{"no train", map[int]Pairs{PartValid: pairs([2]int32{2, 3})}, "split", "no training pairs"},
		{"id out of range", map[int]Pairs{PartTrain: train, PartTest: pairs([2]int32{3, 40})}, "test.npy", "outside [0,40)"},
		{"self loop", map[int]Pairs{PartTrain: pairs([2]int32{0, 1}, [2]int32{5, 5})}, "train.npy", "self loop"},
		{"pair in two splits", map[int]Pairs{PartTrain: train, PartValid: pairs([2]int32{2, 1})}, "valid.npy", "also in train.npy"},
		{"valid and test overlap", map[int]Pairs{PartTrain: train, PartValid: pairs([2]int32{5, 6}), PartTest: pairs([2]int32{5, 6})}, "test.npy", "also in valid.npy"},
		{"negative is a positive", map[int]Pairs{PartTrain: train, PartValid: pairs([2]int32{5, 6}), PartValidNeg: pairs([2]int32{1, 0})}, "valid_neg.npy", "is a positive in train.npy"},
		{"negative is an edge", map[int]Pairs{PartTrain: train, PartTestNeg: pairs([2]int32{10, 13})}, "test_neg.npy", "is an edge of the graph"},
		{"sample outside train", map[int]Pairs{PartTrain: train, PartTrainEval: pairs([2]int32{2, 3}), PartTrainEvalNeg: pairs([2]int32{0, 20})}, "train_eval.npy", "not in train.npy"},
		{"sample without negatives", map[int]Pairs{PartTrain: train, PartTrainEval: train}, "split", "give both or neither"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SplitShipped(g, shipped(c.parts), 0, false)
			if !errors.Is(err, ErrSplit) || !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want an ErrSplit naming %s and saying %q", err, c.file, c.want)
			}
		})
	}
}
