package synth

import (
	"fmt"
	"math"

	"strata/core/graph"
)

// StandIn describes a published graph that a generated stand-in imitates:
// its counts as the paper that used it states them, and the degree shape
// of a real graph of the same kind.
type StandIn struct {
	Name     string
	Nodes    int64
	Edges    int64 // stored edges: each undirected edge once, or each directed edge
	Directed bool  // Edges counts directed edges (citations, links, follows)
	FeatDim  int
	Classes  int
	// Train, Valid and Test are the split's sizes (they sum to at most
	// Nodes; the rest of the nodes is unlabelled for training purposes).
	Train, Valid, Test int64
	Shape              graph.DegreeShape
	// Source cites where the counts and the shape come from.
	Source string
}

// StandInOptions scales a stand-in down, seeds it and optionally plants
// communities in it (community.go).
type StandInOptions struct {
	Divisor int64 // nodes, edges and split sizes divided by it (>= 1)
	Seed    uint64
	// Communities is the number of planted communities (0: none, the
	// Chung-Lu stand-in); Mu the fraction of the edges between two
	// communities, in [0, 1].
	Communities int
	Mu          float64
}

// Scaled returns the stand-in's counts divided by div: the nodes and
// edges rounded to the nearest, the split sizes rounded down (so that
// they still fit the nodes).
func (s StandIn) Scaled(div int64) StandIn {
	if div <= 1 {
		return s
	}
	d := func(v int64) int64 { return (v + div/2) / div }
	s.Nodes = max(d(s.Nodes), 2)
	s.Edges, s.Train, s.Valid, s.Test = max(d(s.Edges), 1), s.Train/div, s.Valid/div, s.Test/div
	return s
}

// check validates the scaled counts before anything is allocated.
func (s StandIn) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("stand-in %s: "+format+": %w", append([]any{s.Name}, append(args, graph.ErrRange)...)...)
	}
	pairs := s.Nodes * (s.Nodes - 1)
	if !s.Directed {
		pairs /= 2
	}
	switch {
	case s.Nodes < 2 || s.Nodes > math.MaxInt32:
		return bad("%d nodes outside [2, 2^31)", s.Nodes)
	case s.Edges < 1 || s.Edges > 1<<36:
		return bad("%d edges outside [1, 2^36]", s.Edges)
	case s.Edges > pairs/2:
		return bad("%d edges on %d nodes is more than half of all %d node pairs: too dense for a sparse stand-in", s.Edges, s.Nodes, pairs)
	case s.FeatDim < 0 || s.FeatDim > 1<<16 || int64(s.FeatDim)*s.Nodes > graph.MaxFeatureValues:
		return bad("%d nodes x %d features is too large", s.Nodes, s.FeatDim)
	case s.Classes < 0 || s.Classes > 1<<16:
		return bad("class count %d outside [0,65536]", s.Classes)
	case s.Train < 0 || s.Valid < 0 || s.Test < 0 || s.Train+s.Valid+s.Test > s.Nodes:
		return bad("split %d/%d/%d does not fit %d nodes", s.Train, s.Valid, s.Test, s.Nodes)
	}
	return nil
}

// StandInBytes is what generating the stand-in allocates at its peak, for
// the memory budget: features and per-node arrays, the edge keys and the
// CSR (twice the edges when they are made undirected by data.symmetrize).
func StandInBytes(s StandIn, o StandInOptions) int64 {
	s = s.Scaled(o.Divisor)
	perNode := int64(s.FeatDim)*4 + graph.BytesPerNode + 16
	if o.Communities > 0 {
		perNode += 4 // each node's community
	}
	return s.Nodes*perNode + s.Edges*32
}

// GenerateStandIn generates the stand-in: exactly s.Nodes nodes and
// s.Edges distinct edges without self loops, whose endpoints are drawn
// from a Chung-Lu expected-degree model fitted to s.Shape (FitDegreeShape),
// node ids randomly permuted, labels and features as RMAT draws them
// (learnable from the neighbourhood), and a random split of exactly the
// stated sizes. With o.Communities, the edges follow a planted partition
// of that many communities with mixing o.Mu (community.go), every node's
// label is its community's class and its features carry that class's
// centroid. The output depends only on s and o, not on GOMAXPROCS.
func GenerateStandIn(s StandIn, o StandInOptions) (*graph.Dataset, error) {
	s = s.Scaled(o.Divisor)
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.checkCommunities(o); err != nil {
		return nil, err
	}
	m, err := FitDegreeShape(s.Shape)
	if err != nil {
		return nil, fmt.Errorf("stand-in %s: %w", s.Name, err)
	}
	n := int(s.Nodes)
	var g *graph.CSR
	if o.Communities > 0 {
		g, err = communityGraph(m, n, s.Edges, s.Directed, o)
	} else {
		g, err = chungLuGraph(m, n, s.Edges, s.Directed, o.Seed)
	}
	if err != nil {
		return nil, fmt.Errorf("stand-in %s: %w", s.Name, err)
	}
	d := &graph.Dataset{NumNodes: n, Graph: g, FeatDim: s.FeatDim}
	lo := RMATOptions{FeatDim: s.FeatDim, NumClasses: s.Classes, Seed: o.Seed}.withDefaults()
	if o.Communities > 0 && s.Classes > 0 {
		d.Labels = communityLabels(StandInCommunities(s, StandInOptions{Communities: o.Communities, Seed: o.Seed}), s.Classes)
		_, d.Features = rmatLabelsFeatures(RMATOptions{FeatDim: s.FeatDim, Seed: o.Seed}, g)
		addCentroids(lo, d.Labels, d.Features)
	} else {
		d.Labels, d.Features = rmatLabelsFeatures(lo, g)
	}
	if s.Classes > 0 {
		d.NumClasses = s.Classes
		d.Train, d.Valid, d.Test = exactSplits(n, s.Train, s.Valid, s.Test, o.Seed)
	}
	return d, nil
}

// exactSplits assigns nodes to train, valid and test by a keyed random
// permutation: exactly the given sizes, each list ascending.
func exactSplits(n int, train, valid, test int64, seed uint64) (tr, va, te []int32) {
	p := newCyclePerm(seed, streamSplits, n)
	tr, va, te = []int32{}, []int32{}, []int32{}
	for i := 0; i < n; i++ {
		switch q := p.apply(uint64(i)); {
		case q < uint64(train):
			tr = append(tr, int32(i))
		case q < uint64(train+valid):
			va = append(va, int32(i))
		case q < uint64(train+valid+test):
			te = append(te, int32(i))
		}
	}
	return tr, va, te
}
