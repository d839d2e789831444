package toyplugins

import (
	"context"
	"fmt"
	"math"

	"strata/core/caching"
	"strata/core/graph"
	"strata/core/registry"
)

// LowIDs is cache.toy-low-ids: the nodes of lowest id are hottest.
type LowIDs struct {
	Fraction float64 `toml:"fraction" range:"[0,1]" doc:"fraction of the nodes to cache"`
}

var (
	_ caching.Policy = (*LowIDs)(nil)
	_ caching.Sized  = (*LowIDs)(nil)
)

// StrataModule implements registry.Module.
func (*LowIDs) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "cache.toy-low-ids", New: func() registry.Module { return &LowIDs{Fraction: 0.1} },
		Doc: "toy: caches the nodes of lowest id"}
}

// SetFraction implements caching.Sized.
func (l *LowIDs) SetFraction(f float64) { l.Fraction = f }

// Rank implements caching.Policy.
func (l *LowIDs) Rank(ctx context.Context, d *graph.Dataset) ([]int32, error) {
	if d == nil || d.Graph == nil {
		return nil, fmt.Errorf("toy-low-ids: no graph")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := min(d.NumNodes, int(math.Floor(l.Fraction*float64(d.NumNodes))))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out, nil
}

func init() { registry.Register(new(LowIDs)) }
