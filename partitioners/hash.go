package partitioners

import (
	"context"

	"strata/core/graph"
	"strata/core/registry"
)

// Hash assigns node i to part i mod k (XGNN's modulo partitioning; apply it
// to a hotness-ordered graph to spread hot nodes over the parts). Node
// weights are ignored.
type Hash struct{}

// StrataModule registers partitioner.hash.
func (*Hash) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "partitioner.hash",
		New: func() registry.Module { return &Hash{} },
		Doc: "node id modulo k",
	}
}

// Partition implements Partitioner.
func (*Hash) Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error) {
	if err := checkArgs("partitioner.hash", g, k, nodeWeights); err != nil {
		return nil, err
	}
	parts := make([]int32, g.NumRows)
	for i := range parts {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		parts[i] = int32(i % k)
	}
	return parts, nil
}
