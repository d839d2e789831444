package toyplugins

import (
	"context"
	"fmt"

	"strata/core/graph"
	"strata/core/partition"
	"strata/core/registry"
)

// Stripes is partitioner.toy-stripes: node i goes to part i mod k.
type Stripes struct{}

var _ partition.Partitioner = (*Stripes)(nil)

// StrataModule implements registry.Module.
func (*Stripes) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "partitioner.toy-stripes", New: func() registry.Module { return new(Stripes) },
		Doc: "toy: node i in part i mod k"}
}

// Partition implements partition.Partitioner.
func (*Stripes) Partition(ctx context.Context, g *graph.CSR, k int, w []int64) ([]int32, error) {
	switch {
	case g == nil:
		return nil, fmt.Errorf("toy-stripes: nil graph")
	case k <= 0 || k > g.NumRows:
		return nil, fmt.Errorf("toy-stripes: k = %d parts for %d nodes", k, g.NumRows)
	case w != nil && len(w) != g.NumRows:
		return nil, fmt.Errorf("toy-stripes: %d weights for %d nodes", len(w), g.NumRows)
	}
	for i, x := range w {
		if x < 0 {
			return nil, fmt.Errorf("toy-stripes: node %d has weight %d", i, x)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	parts := make([]int32, g.NumRows)
	for i := range parts {
		parts[i] = int32(i % k)
	}
	return parts, nil
}

func init() { registry.Register(new(Stripes)) }
