package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// EdgeSplitSpec is a generated link-prediction split of a graph's edges
// (data.edge_split): the percentages of the edges that train, validate
// and test, and the seed of the shuffle and of the held-out negatives.
type EdgeSplitSpec struct {
	Train, Valid, Test int
	Seed               uint64
	// SeedSet: the name gave the seed (-seed<k>); otherwise the caller
	// supplies it (the run's train.seed).
	SeedSet bool
	// Source, when set, is the directory or .npz file of a split the
	// dataset ships (SplitShipped); the shares are then 0.
	Source string
}

// edgeSplitRE matches "random-<train>-<valid>-<test>[-seed<k>]".
var edgeSplitRE = regexp.MustCompile(`^random-([0-9]+)-([0-9]+)-([0-9]+)(?:-seed([0-9]+))?$`)

// EdgeSplitForm is how an edge split is written, for messages.
const EdgeSplitForm = "random-<train>-<valid>-<test>[-seed<k>] with percentages that sum to at most 100 and train >= 1, e.g. \"random-85-5-10\""

// IsRandomEdgeSplit reports whether name is a generated split's
// (random-..., read by ParseEdgeSplit); any other data.edge_split names
// a split the dataset ships (SplitShipped).
func IsRandomEdgeSplit(name string) bool { return strings.HasPrefix(name, "random-") }

// ParseEdgeSplit parses an edge split name such as "random-85-5-10" or
// "random-85-5-10-seed3".
func ParseEdgeSplit(name string) (EdgeSplitSpec, error) {
	m := edgeSplitRE.FindStringSubmatch(name)
	if m == nil {
		return EdgeSplitSpec{}, fmt.Errorf("edge split %q: want %s: %w", name, EdgeSplitForm, ErrSplit)
	}
	var pct [3]int
	for i := range pct {
		v, err := strconv.Atoi(m[i+1])
		if err != nil || v > 100 {
			return EdgeSplitSpec{}, fmt.Errorf("edge split %q: share %q is not a percentage; want %s: %w", name, m[i+1], EdgeSplitForm, ErrSplit)
		}
		pct[i] = v
	}
	if pct[0] < 1 || pct[0]+pct[1]+pct[2] > 100 {
		return EdgeSplitSpec{}, fmt.Errorf("edge split %q: the shares %d+%d+%d must sum to at most 100 with train >= 1; want %s: %w", name, pct[0], pct[1], pct[2], EdgeSplitForm, ErrSplit)
	}
	s := EdgeSplitSpec{Train: pct[0], Valid: pct[1], Test: pct[2]}
	if m[4] != "" {
		seed, err := strconv.ParseUint(m[4], 10, 64)
		if err != nil {
			return EdgeSplitSpec{}, fmt.Errorf("edge split %q: seed %q: %w", name, m[4], ErrSplit)
		}
		s.Seed, s.SeedSet = seed, true
	}
	return s, nil
}

// String returns the split's name, with its seed, or a shipped split's
// Source.
func (s EdgeSplitSpec) String() string {
	if s.Source != "" {
		return s.Source
	}
	return fmt.Sprintf("random-%d-%d-%d-seed%d", s.Train, s.Valid, s.Test, s.Seed)
}

// Pairs are node pairs (Src[i], Dst[i]): edges, or the negatives of a
// link-prediction split.
type Pairs struct{ Src, Dst []int32 }

// Len is the number of pairs.
func (p Pairs) Len() int { return len(p.Src) }

// Append returns p followed by q, in a new Pairs.
func (p Pairs) Append(q Pairs) Pairs {
	return Pairs{Src: slices.Concat(p.Src, q.Src), Dst: slices.Concat(p.Dst, q.Dst)}
}

// EdgeSplit is a link-prediction split of a graph's edges: positives for
// training, validation and test, the fixed negatives of validation and
// test, and the graph that message passing sees.
type EdgeSplit struct {
	Spec EdgeSplitSpec
	// Undirected: the graph is symmetric (or symmetrised for training),
	// so an edge and its reverse are one pair, listed once with Src < Dst,
	// and held out together.
	Undirected bool
	// Train, Valid and Test are the positive pairs; self loops are never
	// positives.
	Train, Valid, Test Pairs
	// ValidNeg and TestNeg are as many pairs as Valid and Test, drawn
	// once from the seed: distinct, not self loops, not edges of the whole
	// graph (either direction when Undirected), TestNeg disjoint from
	// ValidNeg.
	ValidNeg, TestNeg Pairs
	// TrainEval is a sample of the training positives (the first
	// min(|Train|, max(|Valid|, 1000)) in shuffled order) and
	// TrainEvalNeg as many negatives drawn as ValidNeg are (disjoint
	// from ValidNeg and TestNeg), which score the training fit.
	TrainEval, TrainEvalNeg Pairs
	// Graph is the message-passing graph: the input graph's entries
	// (with their values) whose pair is not held out (validation, test,
	// and the edges left out when the shares sum below 100). Self loops
	// of the input stay.
	Graph *CSR
	// Edges is the number of distinct pairs the shares cut.
	Edges int
}

// SplitEdges splits g's edges (row i lists the sources of node i's
// in-edges) as spec says, shuffled with spec.Seed. symmetrize says that
// training adds every reverse edge, which makes the split undirected;
// a symmetric g is undirected too, so an edge and its reverse are never
// split apart. The result depends only on g and spec.
func SplitEdges(g *CSR, spec EdgeSplitSpec, symmetrize bool) (*EdgeSplit, error) {
	if err := checkLinkGraph(g, spec); err != nil {
		return nil, err
	}
	n := g.NumRows
	undirected := symmetrize || IsSymmetric(g)
	all := pairKeys(g, undirected)
	keys := slices.Clone(all)
	rng := splitRand(spec.Seed)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	m := len(keys)
	a := share(m, spec.Train)
	b := min(m, a+share(m, spec.Valid))
	c := min(m, b+share(m, spec.Test))
	s := &EdgeSplit{Spec: spec, Undirected: undirected, Edges: m,
		Train: keyPairs(keys[:a], n), Valid: keyPairs(keys[a:b], n), Test: keyPairs(keys[b:c], n)}
	if s.Train.Len() == 0 {
		return nil, fmt.Errorf("edge split %s: the graph has %d edges that are not self loops, which leaves none for training; link prediction needs a graph with edges (or a larger train share): %w", spec, m, ErrSplit)
	}
	held := slices.Clone(keys[a:])
	slices.Sort(held)
	s.TrainEval = keyPairs(keys[:trainEvalLen(a, b-a)], n)
	if err := s.complete(g, all, held, rng); err != nil {
		return nil, err
	}
	return s, nil
}

// splitRand is the random source of a split's shuffle and negatives.
func splitRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x11d5_e1a7)) }

// trainEvalLen is the size of the training sample that scores the fit:
// min(|Train|, max(|Valid|, 1000)).
func trainEvalLen(train, valid int) int { return min(train, max(valid, 1000)) }

// checkLinkGraph checks that g can be split for link prediction: square,
// of at least 2 and at most 2^32 nodes.
func checkLinkGraph(g *CSR, spec EdgeSplitSpec) error {
	n := g.NumRows
	if g.NumCols != n || n < 2 {
		return fmt.Errorf("edge split %s: the graph has %d nodes (%d columns); link prediction needs a square graph of at least 2 nodes: %w", spec, n, g.NumCols, ErrSplit)
	}
	if uint64(n) > math.MaxUint32 {
		return fmt.Errorf("edge split %s: %d nodes are more than 2^32: %w", spec, n, ErrSplit)
	}
	return nil
}

// complete finishes a split whose Spec, Undirected, positives and
// TrainEval are set: its message-passing graph is g without the pairs
// whose keys are in held (sorted), and each of ValidNeg, TestNeg and
// TrainEvalNeg that is nil is drawn from rng, in that order, as many as
// its positives, none a key of all (sorted: g's edges and the split's
// positives), each disjoint from the negatives before it.
func (s *EdgeSplit) complete(g *CSR, all, held []uint64, rng *rand.Rand) error {
	s.Graph = dropPairs(g, held, s.Undirected)
	draw := func(neg *Pairs, count int, avoid Pairs, what string) error {
		if neg.Src != nil {
			return nil // given
		}
		p, err := drawNonEdges(rng, g.NumRows, count, all, avoid, s.Undirected)
		if err != nil {
			return fmt.Errorf("edge split %s, %s: %w", s.Spec, what, err)
		}
		*neg = p
		return nil
	}
	if err := draw(&s.ValidNeg, s.Valid.Len(), Pairs{}, "validation negatives"); err != nil {
		return err
	}
	if err := draw(&s.TestNeg, s.Test.Len(), s.ValidNeg, "test negatives"); err != nil {
		return err
	}
	return draw(&s.TrainEvalNeg, s.TrainEval.Len(), s.ValidNeg.Append(s.TestNeg), "negatives of the training sample")
}

// share is round(m * pct / 100), as the peer's split rounds.
func share(m, pct int) int { return int(math.Round(float64(m) * float64(pct) / 100)) }

// pairKey keys the pair (u, v) of an n-node graph; undirected pairs are
// keyed by their smaller endpoint first.
func pairKey(u, v int64, n int, undirected bool) uint64 {
	if undirected && v < u {
		u, v = v, u
	}
	return uint64(u)*uint64(n) + uint64(v)
}

// pairKeys returns the sorted distinct keys of g's edges (source, then
// destination) that are not self loops.
func pairKeys(g *CSR, undirected bool) []uint64 {
	n := g.NumRows
	keys := make([]uint64, 0, g.NNZ())
	for dst := range n {
		for e := g.Indptr[dst]; e < g.Indptr[dst+1]; e++ {
			if src := g.Col(e); src != int64(dst) {
				keys = append(keys, pairKey(src, int64(dst), n, undirected))
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// keyPairs turns keys back into pairs.
func keyPairs(keys []uint64, n int) Pairs {
	p := Pairs{Src: make([]int32, len(keys)), Dst: make([]int32, len(keys))}
	for i, k := range keys {
		p.Src[i], p.Dst[i] = int32(k/uint64(n)), int32(k%uint64(n))
	}
	return p
}

// dropPairs returns g without the entries whose key is in held (sorted).
func dropPairs(g *CSR, held []uint64, undirected bool) *CSR {
	n := g.NumRows
	indptr := make([]int64, n+1)
	cols := make([]int64, 0, g.NNZ())
	var vals []float32
	for dst := range n {
		for e := g.Indptr[dst]; e < g.Indptr[dst+1]; e++ {
			src := g.Col(e)
			if _, out := slices.BinarySearch(held, pairKey(src, int64(dst), n, undirected)); out && src != int64(dst) {
				continue
			}
			cols = append(cols, src)
			if g.Values != nil {
				vals = append(vals, g.Values[e])
			}
		}
		indptr[dst+1] = int64(len(cols))
	}
	out := MakeCSR(n, n, indptr, cols)
	out.Values = vals
	return out
}

// drawNonEdges draws count distinct pairs that are not self loops, not
// edges (keys in edges, sorted) and not in avoid, uniform over such
// pairs; undirected pairs have Src < Dst.
func drawNonEdges(rng *rand.Rand, n, count int, edges []uint64, avoid Pairs, undirected bool) (Pairs, error) {
	seen := make(map[uint64]bool, count+avoid.Len())
	for i := range avoid.Src {
		seen[pairKey(int64(avoid.Src[i]), int64(avoid.Dst[i]), n, undirected)] = true
	}
	out := Pairs{Src: make([]int32, 0, count), Dst: make([]int32, 0, count)}
	for tries := 0; out.Len() < count; tries++ {
		if tries > 100*count+1000 {
			return Pairs{}, fmt.Errorf("drew %d of %d pairs that are not edges after %d tries: the graph is too dense for as many negatives as positives; hold out fewer edges: %w", out.Len(), count, tries, ErrSplit)
		}
		u, v := rng.Int64N(int64(n)), rng.Int64N(int64(n))
		if u == v {
			continue
		}
		k := pairKey(u, v, n, undirected)
		if _, isEdge := slices.BinarySearch(edges, k); isEdge || seen[k] {
			continue
		}
		seen[k] = true
		if undirected && v < u {
			u, v = v, u
		}
		out.Src, out.Dst = append(out.Src, int32(u)), append(out.Dst, int32(v))
	}
	return out, nil
}

// IsSymmetric reports whether every edge u→v of g has its reverse v→u
// (self loops are their own reverse).
func IsSymmetric(g *CSR) bool {
	if g.NumRows != g.NumCols {
		return false
	}
	fwd := pairKeys(g, false)
	n := g.NumRows
	for _, k := range fwd {
		u, v := k/uint64(n), k%uint64(n)
		if _, ok := slices.BinarySearch(fwd, v*uint64(n)+u); !ok {
			return false
		}
	}
	return true
}
