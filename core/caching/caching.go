// Package caching is the contract of feature-cache policies (registry
// namespace "cache"): which nodes' features are kept in fast memory.
// Implementations live in plugins/cache.
package caching

import (
	"context"

	"strata/core/graph"
)

// Policy is a static cache policy. Rank returns the node ids to cache,
// hottest first; its length is the policy's capacity, so a prefix of the
// ranking is what fits a smaller cache. The same dataset and config give
// the same ranking.
type Policy interface {
	Rank(ctx context.Context, d *graph.Dataset) ([]int32, error)
}

// Scorer is implemented by policies that rank by a score per node
// (higher is hotter); their Rank is the scores sorted descending, ties by
// ascending id.
type Scorer interface {
	Scores(ctx context.Context, d *graph.Dataset) ([]float64, error)
}

// Dynamic is an online cache policy, for comparison with the static
// rankings: it decides what to keep as the accesses arrive rather than
// from a ranking computed up front.
//
// Init sizes the cache for d and empties it. Access then presents a
// mini-batch's feature reads in order: each id is a hit when its row is
// cached (and becomes recently used), otherwise a miss that loads the
// row, evicting one when full. Access returns the number of hits; ids
// must be in [0, NumNodes) and may repeat (each occurrence counts). Both
// are deterministic and not safe for concurrent use.
type Dynamic interface {
	Init(d *graph.Dataset) error
	Access(ids []int32) (hits int)
}

// Sized is implemented by policies whose capacity can be set from a
// caller (a sweep over cache sizes): SetFraction caches that fraction of
// the nodes.
type Sized interface {
	SetFraction(f float64)
}

// ByteSized is implemented by policies whose capacity can be set as a
// byte budget (rows of the dataset's feature width).
type ByteSized interface {
	SetBytes(b int64)
}

// Seeded is implemented by randomised policies: SetSeed fixes their draw.
type Seeded interface {
	SetSeed(seed int64)
}

// SamplingAware is implemented by policies that rank from sampled epochs
// (GNNLab's presampling): MatchSampling makes them sample as the measured
// training does.
type SamplingAware interface {
	MatchSampling(fanouts []int, batchSize, epochs int, seed int64)
}

// Holder is implemented by Dynamic policies that report which rows they
// hold now, so a host tier (core/diskrows) can keep exactly those rows in
// memory: Holds(id) is true between the Access that admits id and the one
// that evicts it.
type Holder interface {
	Holds(id int32) bool
}
