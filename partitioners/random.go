package partitioners

import (
	"context"

	"strata/core/graph"
	"strata/core/registry"
)

// Random assigns nodes to parts at random, balanced by count: a seeded
// random permutation of the nodes is dealt round-robin, so part sizes
// differ by at most one. The result depends only on the seed, the number
// of nodes and k; node weights are ignored.
type Random struct {
	Seed int64 `toml:"seed" doc:"random seed; the same seed gives the same partition"`
}

// StrataModule registers partitioner.random.
func (*Random) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "partitioner.random",
		New: func() registry.Module { return &Random{} },
		Doc: "seeded random assignment with part sizes that differ by at most one",
	}
}

// Partition implements Partitioner.
func (r *Random) Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error) {
	if err := checkArgs("partitioner.random", g, k, nodeWeights); err != nil {
		return nil, err
	}
	n := g.NumRows
	// Deal part labels 0,1,...,k-1,0,1,... and shuffle them (Fisher-Yates):
	// the same as dealing a random permutation of the nodes.
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i % k)
	}
	rng := splitmix64(uint64(r.Seed) ^ 0x243f6a8885a308d3)
	for i := n - 1; i > 0; i-- {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		j := rng.below(uint64(i + 1))
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts, ctx.Err()
}
