package partitioners

import (
	"context"
	"fmt"
	"sort"

	"strata/core/graph"
	"strata/core/registry"
)

// Range assigns contiguous id ranges to the parts: part p holds the nodes
// [b_p, b_{p+1}). The boundaries balance the total weight of the parts,
// and every part holds at least one node.
//
// With Balance "nodes" every node weighs 1, or nodeWeights[i] when node
// weights are given. With Balance "edges" node i weighs the length of its
// row (its in-edges), plus nodeWeights[i] when given.
type Range struct {
	Balance string `toml:"balance" enum:"nodes,edges" doc:"what the ranges balance: node count (or node weights) or edges (row lengths)"`
}

// StrataModule registers partitioner.range.
func (*Range) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "partitioner.range",
		New: func() registry.Module { return &Range{Balance: "nodes"} },
		Doc: "contiguous node-id ranges balanced by node count or by edges",
	}
}

// Validate checks the config.
func (r *Range) Validate() error {
	if r.Balance != "nodes" && r.Balance != "edges" {
		return fmt.Errorf("balance = %q: allowed values are \"nodes\", \"edges\"", r.Balance)
	}
	return nil
}

// Partition implements Partitioner.
func (r *Range) Partition(ctx context.Context, g *graph.CSR, k int, nodeWeights []int64) ([]int32, error) {
	const id = "partitioner.range"
	if err := checkArgs(id, g, k, nodeWeights); err != nil {
		return nil, err
	}
	n := g.NumRows
	// prefix[i] = total weight of nodes [0, i).
	prefix := make([]int64, n+1)
	for i := 0; i < n; i++ {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var w int64 = 1
		switch {
		case r.Balance == "edges":
			w = g.Indptr[i+1] - g.Indptr[i]
			if nodeWeights != nil {
				w += nodeWeights[i]
			}
		case nodeWeights != nil:
			w = nodeWeights[i]
		}
		prefix[i+1] = prefix[i] + w
	}
	bounds := RangeBounds(prefix, k)
	parts := make([]int32, n)
	for p := 0; p < k; p++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := bounds[p]; i < bounds[p+1]; i++ {
			parts[i] = int32(p)
		}
	}
	return parts, nil
}

// RangeBounds splits n = len(prefix)-1 items with the given prefix sums of
// their (non-negative) weights into k non-empty contiguous ranges of
// near-equal weight, 1 <= k <= n. It returns k+1 boundaries: range p is
// [b[p], b[p+1]), b[0] = 0 and b[k] = n. Boundary p is the item index whose
// prefix weight is closest to p/k of the total.
func RangeBounds(prefix []int64, k int) []int {
	n := len(prefix) - 1
	total := prefix[n]
	b := make([]int, k+1)
	b[k] = n
	for p := 1; p < k; p++ {
		// target = total*p/k without overflow for total*p > 2^63.
		target := total/int64(k)*int64(p) + total%int64(k)*int64(p)/int64(k)
		i := sort.Search(n+1, func(i int) bool { return prefix[i] >= target })
		if i > 0 && target-prefix[i-1] <= prefix[min(i, n)]-target {
			i--
		}
		// Leave at least one node for this part and every later one.
		b[p] = min(max(i, b[p-1]+1), n-(k-p))
	}
	return b
}
