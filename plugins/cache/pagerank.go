package cache

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
)

// ReversePageRank computes reverse PageRank on g (row v of g lists the
// in-neighbours of v, the nodes a sampler may pick when it expands v).
//
// Reverse PageRank (Bar-Yossef & Mashiach 2008; data tiering §3.2) is
// PageRank on the reversed graph. With in(v) the in-degree of v in g, one
// iteration is
//
//	x[v]     = score[v] / in(v)        (0 when in(v) = 0)
//	score[u] = (1-d)/N + d · Σ_{v : u ∈ in-neighbours(v)} x[v]
//
// so a node is hot when the nodes that sample it (its out-neighbours) are
// hot and have few alternatives: x[v] is the chance that expanding v picks
// one given in-neighbour. The score of a node with no in-neighbours is not
// passed on (it has nothing to sample), as in Alg. 1 of the tiering paper.
//
// init is the initial score (nil: 1/N for every node); it is not modified.
// The rank is pulled row by row over the transpose in a fixed order, in
// float64, so the result does not depend on GOMAXPROCS.
func ReversePageRank(ctx context.Context, g *graph.CSR, init []float64, iters int, damping float64) ([]float64, error) {
	n := g.NumRows
	if g.NumCols != n {
		return nil, fmt.Errorf("reverse pagerank: graph is %d x %d, want square", g.NumRows, g.NumCols)
	}
	if init != nil && len(init) != n {
		return nil, fmt.Errorf("reverse pagerank: %d initial scores for %d nodes", len(init), n)
	}
	score := make([]float64, n)
	if init != nil {
		copy(score, init)
	} else {
		for i := range score {
			score[i] = 1 / float64(n)
		}
	}
	if n == 0 || iters == 0 {
		return score, ctx.Err()
	}
	t, _ := graph.Transpose(g) // row u of t: the v with u in in-neighbours(v)
	x := make([]float64, n)
	base := (1 - damping) / float64(n)
	for range iters {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		graph.ParallelFor(n, 4096, func(lo, hi int) {
			for v := lo; v < hi; v++ {
				if deg := g.Indptr[v+1] - g.Indptr[v]; deg > 0 {
					x[v] = score[v] / float64(deg)
				} else {
					x[v] = 0
				}
			}
		})
		graph.ParallelFor(n, 4096, func(lo, hi int) {
			for u := lo; u < hi; u++ {
				var s float64
				for e := t.Indptr[u]; e < t.Indptr[u+1]; e++ {
					s += x[t.Col(e)]
				}
				score[u] = base + damping*s
			}
		})
	}
	return score, nil
}

// RankByScore returns the k node ids of highest score, highest first, ties
// by ascending id.
func RankByScore[T cmp.Ordered](score []T, k int) []int32 {
	ids := make([]int32, len(score))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return slices.Clip(ids[:min(k, len(ids))])
}

// rankScorer is Rank for a Scorer with a Capacity.
func rankScorer(ctx context.Context, id string, d *graph.Dataset, c *Capacity, s Scorer) ([]int32, error) {
	if err := checkDataset(id, d); err != nil {
		return nil, err
	}
	k, err := c.Rows(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	score, err := s.Scores(ctx, d)
	if err != nil {
		return nil, err
	}
	return RankByScore(score, k), ctx.Err()
}

// PageRankOptions are the options of the reverse PageRank policies.
type PageRankOptions struct {
	Iterations int     `toml:"iterations" range:"[1,1000]" doc:"power iterations"`
	Damping    float64 `toml:"damping" range:"[0,1]" doc:"damping factor d: score = (1-d)/N + d·(pulled score)"`
}

// Validate checks the options.
func (o *PageRankOptions) Validate() error {
	if o.Iterations < 1 {
		return fmt.Errorf("iterations = %d: must be >= 1", o.Iterations)
	}
	if !(o.Damping >= 0 && o.Damping <= 1) {
		return fmt.Errorf("damping = %v: must be in [0, 1]", o.Damping)
	}
	return nil
}

// RPageRank ranks nodes by reverse PageRank (see ReversePageRank), started
// from the uniform 1/N. The default 20 iterations are close to convergence
// on the graphs we use (the tiering paper iterates to convergence).
type RPageRank struct {
	Capacity
	PageRankOptions
}

// StrataModule registers cache.rpagerank.
func (*RPageRank) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "cache.rpagerank",
		New: func() registry.Module {
			return &RPageRank{Capacity{Capacity: defaultCapacity}, PageRankOptions{Iterations: 20, Damping: 0.85}}
		},
		Doc: "cache the nodes of highest reverse PageRank",
	}
}

// Validate checks the options.
func (p *RPageRank) Validate() error {
	if err := p.Capacity.Validate(); err != nil {
		return err
	}
	return p.PageRankOptions.Validate()
}

// Scores implements Scorer.
func (p *RPageRank) Scores(ctx context.Context, d *graph.Dataset) ([]float64, error) {
	const id = "cache.rpagerank"
	if err := checkDataset(id, d); err != nil {
		return nil, err
	}
	s, err := ReversePageRank(ctx, d.Graph, nil, p.Iterations, p.Damping)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return s, nil
}

// Rank implements Policy.
func (p *RPageRank) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	return rankScorer(ctx, "cache.rpagerank", d, &p.Capacity, p)
}

// WeightedRPageRank is Alg. 1 of the data-tiering paper: reverse PageRank
// whose initial score is 1/N, multiplied by weight = N/|train| on the
// training nodes, run for only 5 iterations (so the bias toward the
// training nodes, where sampling starts, does not wear off), damping 0.85.
// Without a training split every node is a seed and the weight is 1.
type WeightedRPageRank struct {
	Capacity
	PageRankOptions
}

// StrataModule registers cache.weighted-rpagerank.
func (*WeightedRPageRank) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "cache.weighted-rpagerank",
		New: func() registry.Module {
			return &WeightedRPageRank{Capacity{Capacity: defaultCapacity}, PageRankOptions{Iterations: 5, Damping: 0.85}}
		},
		Doc: "cache by training-weighted reverse PageRank (tiering Alg. 1)",
	}
}

// Validate checks the options.
func (p *WeightedRPageRank) Validate() error {
	if err := p.Capacity.Validate(); err != nil {
		return err
	}
	return p.PageRankOptions.Validate()
}

// Scores implements Scorer.
func (p *WeightedRPageRank) Scores(ctx context.Context, d *graph.Dataset) ([]float64, error) {
	const id = "cache.weighted-rpagerank"
	if err := checkDataset(id, d); err != nil {
		return nil, err
	}
	n := d.NumNodes
	init := make([]float64, n)
	for i := range init {
		init[i] = 1 / float64(n)
	}
	if len(d.Train) > 0 {
		w := float64(n) / float64(len(d.Train))
		for _, v := range d.Train {
			if v < 0 || int(v) >= n {
				return nil, fmt.Errorf("%s: training node %d outside [0,%d)", id, v, n)
			}
			init[v] *= w
		}
	}
	s, err := ReversePageRank(ctx, d.Graph, init, p.Iterations, p.Damping)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return s, nil
}

// Rank implements Policy.
func (p *WeightedRPageRank) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	return rankScorer(ctx, "cache.weighted-rpagerank", d, &p.Capacity, p)
}
