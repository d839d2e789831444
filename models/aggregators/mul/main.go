//go:build wasip1

// Mul aggregation (PyG MulAggregation): the columnwise product of x_j over
// N(i) (sdk.SegmentProd: sign · exp Σ log|x_j|), 1 for a node without
// neighbours (the empty product).
package main

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentProd(g, sdk.GatherSrc(g, x)) })
}
