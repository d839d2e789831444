// Package cache holds feature-cache policies: modules of the "cache"
// registry namespace that decide which nodes' features are kept in fast
// memory (GPU, or the hot tier of the data-tiering paper).
//
// Registered modules:
//
//	cache.none    cache nothing
//	cache.degree  the nodes of highest out-degree
//	cache.random  a seeded random sample of nodes
package cache

import (
	"context"
	"fmt"
	"math"

	"strata/core/graph"
	"strata/plugins/registry"
)

// Policy is a static cache policy. Rank returns the node ids to cache,
// hottest first; its length is the policy's capacity (a fraction of the
// nodes, rounded down), so a prefix of the ranking is what fits a smaller
// cache. The same dataset and config give the same ranking.
type Policy interface {
	Rank(ctx context.Context, d *graph.Dataset) ([]int32, error)
}

// Capacity is the option shared by the policies that cache something.
type Capacity struct {
	Capacity float64 `toml:"capacity" range:"[0,1]" doc:"fraction of the nodes to cache, in [0,1]"`
}

// Validate checks that the capacity is a fraction.
func (c *Capacity) Validate() error {
	if !(c.Capacity >= 0 && c.Capacity <= 1) { // also rejects NaN
		return fmt.Errorf("capacity = %v: must be in [0, 1]", c.Capacity)
	}
	return nil
}

// Count returns how many of n nodes the capacity holds: floor(capacity*n).
func (c *Capacity) Count(n int) int {
	return min(n, int(math.Floor(c.Capacity*float64(n))))
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
}
