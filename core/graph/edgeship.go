package graph

import (
	"fmt"
	"slices"
)

// EdgeSplitParts are the arrays of a split a dataset ships
// (data.edge_split names it), in ShippedEdges order: the positives of
// training, validation and test, the negatives of validation and test,
// and the training sample that scores the fit with its negatives.
var EdgeSplitParts = [...]string{"train", "valid", "test", "valid_neg", "test_neg", "train_eval", "train_eval_neg"}

// The indices of EdgeSplitParts.
const (
	PartTrain = iota
	PartValid
	PartTest
	PartValidNeg
	PartTestNeg
	PartTrainEval
	PartTrainEvalNeg
)

// ShippedEdges is an edge split as a dataset ships it: the pairs of each
// part of EdgeSplitParts and the file (or array) each was read from, ""
// for a part that is not given.
type ShippedEdges struct {
	// Source is the split's directory or .npz file.
	Source string
	Pairs  [len(EdgeSplitParts)]Pairs
	Files  [len(EdgeSplitParts)]string
}

// has reports whether part i is given.
func (sh *ShippedEdges) has(i int) bool { return sh.Files[i] != "" }

// SplitShipped builds the split sh ships on g. Train is required; the
// negatives not given are drawn from seed as SplitEdges draws them, and
// without train_eval, min(|train|, max(|valid|, 1000)) training pairs
// drawn from seed (with train_eval_neg drawn too) score the fit. The
// message-passing graph is g without every validation and test pair (and
// its reverse when undirected, as SplitEdges): a held-out positive that is
// no edge of g is accepted (it has nothing to hide), a training positive
// that is no edge of g too. Pairs may repeat within a part (a weighted
// positive); the checks, each an ErrSplit naming the file: ids in
// [0, n), no self loops, no positive in two of train, valid and test,
// train_eval within train (given with train_eval_neg), and no negative
// that is a positive of the split or an edge of g.
func SplitShipped(g *CSR, sh *ShippedEdges, seed uint64, symmetrize bool) (*EdgeSplit, error) {
	spec := EdgeSplitSpec{Seed: seed, SeedSet: true, Source: sh.Source}
	if err := checkLinkGraph(g, spec); err != nil {
		return nil, err
	}
	n := g.NumRows
	if !sh.has(PartTrain) || sh.Pairs[PartTrain].Len() == 0 {
		return nil, fmt.Errorf("edge split %s: no training pairs; a shipped split needs train ((E, 2) pairs, E >= 1): %w", sh.Source, ErrSplit)
	}
	if sh.has(PartTrainEval) != sh.has(PartTrainEvalNeg) {
		return nil, fmt.Errorf("edge split %s: train_eval and train_eval_neg come together (the training sample and its negatives); give both or neither: %w", sh.Source, ErrSplit)
	}
	undirected := symmetrize || IsSymmetric(g)
	keys, err := sh.partKeys(n, undirected)
	if err != nil {
		return nil, err
	}
	all := pairKeys(g, undirected)
	if err := sh.checkDisjoint(keys, all, n); err != nil {
		return nil, err
	}
	s := &EdgeSplit{Spec: spec, Undirected: undirected, Train: sh.Pairs[PartTrain], Valid: sh.Pairs[PartValid], Test: sh.Pairs[PartTest]}
	held := slices.Concat(keys[PartValid], keys[PartTest])
	slices.Sort(held)
	positives := slices.Concat(keys[PartTrain], held)
	slices.Sort(positives)
	positives = slices.Compact(positives)
	s.Edges = len(positives)
	for _, i := range []int{PartValidNeg, PartTestNeg, PartTrainEval, PartTrainEvalNeg} {
		if sh.has(i) {
			p := sh.Pairs[i]
			p.Src, p.Dst = slices.Clip(p.Src), slices.Clip(p.Dst)
			if p.Src == nil { // given but empty: not drawn
				p = Pairs{Src: []int32{}, Dst: []int32{}}
			}
			*s.part(i) = p
		}
	}
	rng := splitRand(seed)
	if !sh.has(PartTrainEval) {
		te := trainEvalLen(s.Train.Len(), s.Valid.Len())
		idx := rng.Perm(s.Train.Len())[:te]
		s.TrainEval = Pairs{Src: make([]int32, te), Dst: make([]int32, te)}
		for i, j := range idx {
			s.TrainEval.Src[i], s.TrainEval.Dst[i] = s.Train.Src[j], s.Train.Dst[j]
		}
	}
	// Drawn negatives avoid the positives that are no edges of g too.
	notNeg := slices.Concat(all, positives)
	slices.Sort(notNeg)
	if err := s.complete(g, slices.Compact(notNeg), slices.Compact(held), rng); err != nil {
		return nil, err
	}
	return s, nil
}

// part returns the field of s that holds part i of EdgeSplitParts.
func (s *EdgeSplit) part(i int) *Pairs {
	return [...]*Pairs{&s.Train, &s.Valid, &s.Test, &s.ValidNeg, &s.TestNeg, &s.TrainEval, &s.TrainEvalNeg}[i]
}

// Parts returns the pairs of s in EdgeSplitParts order.
func (s *EdgeSplit) Parts() [len(EdgeSplitParts)]Pairs {
	var out [len(EdgeSplitParts)]Pairs
	for i := range out {
		out[i] = *s.part(i)
	}
	return out
}

// partKeys checks every pair of sh (ids in [0, n), no self loops) and
// returns each part's keys, sorted.
func (sh *ShippedEdges) partKeys(n int, undirected bool) ([len(EdgeSplitParts)][]uint64, error) {
	var keys [len(EdgeSplitParts)][]uint64
	for i, p := range sh.Pairs {
		if p.Len() != len(p.Dst) {
			return keys, fmt.Errorf("%s: %d sources and %d destinations: %w", sh.Files[i], p.Len(), len(p.Dst), ErrSplit)
		}
		k := make([]uint64, p.Len())
		for j := range p.Src {
			u, v := p.Src[j], p.Dst[j]
			switch {
			case u < 0 || v < 0 || int(u) >= n || int(v) >= n:
				return keys, fmt.Errorf("%s: pair %d (%d, %d): node id outside [0,%d), the graph's %d nodes; the split belongs to another graph, or its ids are not 0-based: %w", sh.Files[i], j, u, v, n, n, ErrSplit)
			case u == v:
				return keys, fmt.Errorf("%s: pair %d (%d, %d) is a self loop, which is never a positive or a negative of link prediction; remove it: %w", sh.Files[i], j, u, v, ErrSplit)
			}
			k[j] = pairKey(int64(u), int64(v), n, undirected)
		}
		slices.Sort(k)
		keys[i] = k
	}
	return keys, nil
}

// checkDisjoint checks that no positive is in two of train, valid and
// test, that train_eval lies within train, and that no negative is a
// positive or an edge of the graph (all: its keys).
func (sh *ShippedEdges) checkDisjoint(keys [len(EdgeSplitParts)][]uint64, all []uint64, nodes int) error {
	n := func(k uint64) string { return fmt.Sprintf("(%d, %d)", k/uint64(nodes), k%uint64(nodes)) }
	for _, c := range [][2]int{{PartTrain, PartValid}, {PartTrain, PartTest}, {PartValid, PartTest}} {
		if k, ok := common(keys[c[0]], keys[c[1]]); ok {
			return fmt.Errorf("%s: the pair %s is also in %s; a pair is in one of train, valid and test (remove it from one): %w", sh.Files[c[1]], n(k), sh.Files[c[0]], ErrSplit)
		}
	}
	for _, k := range keys[PartTrainEval] {
		if _, ok := slices.BinarySearch(keys[PartTrain], k); !ok {
			return fmt.Errorf("%s: the pair %s is not in %s; the training sample is made of training pairs: %w", sh.Files[PartTrainEval], n(k), sh.Files[PartTrain], ErrSplit)
		}
	}
	for _, neg := range []int{PartValidNeg, PartTestNeg, PartTrainEvalNeg} {
		for _, pos := range []int{PartTrain, PartValid, PartTest} {
			if k, ok := common(keys[neg], keys[pos]); ok {
				return fmt.Errorf("%s: the negative %s is a positive in %s; remove it: %w", sh.Files[neg], n(k), sh.Files[pos], ErrSplit)
			}
		}
		if k, ok := common(keys[neg], all); ok {
			return fmt.Errorf("%s: the negative %s is an edge of the graph; remove it: %w", sh.Files[neg], n(k), ErrSplit)
		}
	}
	return nil
}

// common returns a key in both sorted slices.
func common(a, b []uint64) (uint64, bool) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			return a[i], true
		}
	}
	return 0, false
}
