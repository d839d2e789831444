// Package cache holds feature-cache policies: modules of the "cache"
// registry namespace that decide which nodes' features are kept in fast
// memory (GPU, or the hot tier of the data-tiering paper).
//
// Registered modules:
//
//	cache.none                cache nothing
//	cache.degree              the nodes of highest out-degree
//	cache.random              a seeded random sample of nodes
//	cache.rpagerank           reverse PageRank (Bar-Yossef & Mashiach)
//	cache.weighted-rpagerank  data tiering's Alg. 1: reverse PageRank
//	                          seeded on the training nodes, 5 iterations
//	cache.presample           GNNLab: access counts of presampled epochs
//	cache.lru, cache.clock    dynamic caches (the Dynamic interface), for
//	                          comparison with the static rankings
//	cache.sieve               dynamic SIEVE (Zhang et al., NSDI '24)
//	cache.s3fifo              dynamic S3-FIFO (Yang et al., SOSP '23)
//
// The static policies implement Policy; rpagerank, weighted-rpagerank and
// presample also implement Scorer (one score per node, higher is hotter),
// and their Rank is the scores sorted descending, ties by ascending id.
// Every policy is deterministic: the same dataset and config give the same
// ranking whatever GOMAXPROCS.
//
// A capacity is a fraction of the nodes (capacity) or, when capacity_bytes
// is > 0, a byte budget per device: capacity_bytes / (FeatDim × 4) rows of
// float32 features.
package cache

import (
	"fmt"
	"math"

	"strata/core/caching"
	"strata/core/graph"
	"strata/core/registry"
)

// The contract's types (core/caching), under their package-local names.
type (
	// Policy is caching.Policy.
	Policy = caching.Policy
	// Scorer is caching.Scorer.
	Scorer = caching.Scorer
	// Dynamic is caching.Dynamic.
	Dynamic = caching.Dynamic
)

// Capacity is the option shared by the policies that cache something.
type Capacity struct {
	Capacity      float64 `toml:"capacity" range:"[0,1]" doc:"fraction of the nodes to cache, in [0,1]"`
	CapacityBytes int64   `toml:"capacity_bytes" range:"[0,1125899906842624]" doc:"feature bytes to cache per device; when > 0 it wins over capacity"`
}

// Validate checks that the capacity is a fraction and the byte budget is
// not negative.
func (c *Capacity) Validate() error {
	if !(c.Capacity >= 0 && c.Capacity <= 1) { // also rejects NaN
		return fmt.Errorf("capacity = %v: must be in [0, 1]", c.Capacity)
	}
	if c.CapacityBytes < 0 {
		return fmt.Errorf("capacity_bytes = %d: must be >= 0", c.CapacityBytes)
	}
	return nil
}

// Rows returns how many of d's nodes the capacity holds: with
// capacity_bytes > 0, capacity_bytes / (FeatDim × 4) (float32 rows; an
// error when d has no features), else floor(capacity × NumNodes). The
// result is at most NumNodes.
func (c *Capacity) Rows(d *graph.Dataset) (int, error) {
	if c.CapacityBytes > 0 {
		if d.FeatDim <= 0 {
			return 0, fmt.Errorf("capacity_bytes = %d: the dataset has no features to size rows by; use capacity (a fraction) instead", c.CapacityBytes)
		}
		return int(min(int64(d.NumNodes), c.CapacityBytes/(int64(d.FeatDim)*4))), nil
	}
	return c.Count(d.NumNodes), nil
}

// SetFraction implements caching.Sized: cache fraction f of the nodes
// (and no byte budget).
func (c *Capacity) SetFraction(f float64) { c.Capacity, c.CapacityBytes = f, 0 }

// SetBytes implements caching.ByteSized: a budget of b feature bytes
// (b = 0: nothing).
func (c *Capacity) SetBytes(b int64) { c.Capacity, c.CapacityBytes = 0, b }

// Current returns the capacity as set: the fraction and the byte budget.
func (c *Capacity) Current() (fraction float64, bytes int64) { return c.Capacity, c.CapacityBytes }

// Count returns how many of n nodes the capacity holds: floor(capacity*n).
func (c *Capacity) Count(n int) int {
	return max(0, min(n, int(math.Floor(c.Capacity*float64(n)))))
}

// defaultCapacity is the capacity of a freshly made policy.
const defaultCapacity = 0.1

// checkDataset validates the dataset argument.
func checkDataset(id string, d *graph.Dataset) error {
	if d == nil || d.Graph == nil {
		return fmt.Errorf("%s: no graph", id)
	}
	if d.NumNodes > math.MaxInt32 {
		return fmt.Errorf("%s: %d nodes do not fit in int32 ids", id, d.NumNodes)
	}
	return nil
}

func init() {
	registry.Register(new(None))
	registry.Register(new(Degree))
	registry.Register(new(Random))
	registry.Register(new(RPageRank))
	registry.Register(new(WeightedRPageRank))
	registry.Register(new(Presample))
	registry.Register(new(LRU))
	registry.Register(new(Clock))
	registry.Register(new(Sieve))
	registry.Register(new(S3FIFO))
}
