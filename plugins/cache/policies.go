package cache

import (
	"context"
	"fmt"
	"slices"

	"strata/core/graph"
	"strata/core/registry"
)

// None caches nothing: its ranking is empty.
type None struct{}

// StrataModule registers cache.none.
func (*None) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "cache.none",
		New: func() registry.Module { return &None{} },
		Doc: "cache nothing (every feature read goes to the slow tier)",
	}
}

// Rank implements Policy.
func (*None) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	if err := checkDataset("cache.none", d); err != nil {
		return nil, err
	}
	return []int32{}, ctx.Err()
}

// Degree ranks nodes by out-degree, highest first, ties by ascending id
// (out-degree counts the rows a node's features are read for when
// aggregating, per the core/graph dst <- src convention).
type Degree struct {
	Capacity
}

// StrataModule registers cache.degree.
func (*Degree) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "cache.degree",
		New: func() registry.Module { return &Degree{Capacity{Capacity: defaultCapacity}} },
		Doc: "cache the nodes of highest out-degree (ties by id)",
	}
}

// Rank implements Policy.
func (p *Degree) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	const id = "cache.degree"
	if err := checkDataset(id, d); err != nil {
		return nil, err
	}
	_, out := graph.Degrees(d.Graph)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := p.Rows(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return RankByScore(out, k), ctx.Err()
}

// Random caches a seeded random sample of the nodes (a uniformly random
// permutation, truncated to the capacity).
type Random struct {
	Capacity
	Seed int64 `toml:"seed" doc:"random seed; the same seed gives the same ranking"`
}

// StrataModule registers cache.random.
func (*Random) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "cache.random",
		New: func() registry.Module { return &Random{Capacity: Capacity{Capacity: defaultCapacity}} },
		Doc: "cache a seeded random sample of the nodes",
	}
}

// Rank implements Policy.
func (p *Random) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	const id = "cache.random"
	if err := checkDataset(id, d); err != nil {
		return nil, err
	}
	n := d.NumNodes
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	// A partial Fisher-Yates shuffle: position i gets a uniform pick among
	// the nodes not placed yet, so the first k entries are a random sample
	// in random order.
	k, err := p.Rows(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	s := uint64(p.Seed) ^ 0x13198a2e03707344
	for i := 0; i < k; i++ {
		if i%(1<<18) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		j := i + int(below(&s, uint64(n-i)))
		ids[i], ids[j] = ids[j], ids[i]
	}
	return slices.Clip(ids[:k]), nil
}

// SetSeed implements caching.Seeded.
func (r *Random) SetSeed(seed int64) { r.Seed = seed }
