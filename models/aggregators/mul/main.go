//go:build wasip1

// Mul aggregation (PyG MulAggregation): the columnwise product of x_j over
// N(i) (the op table's segment_prod, sdk.SegmentProd), 1 for a node
// without neighbours (the empty product); a factor's gradient is the
// product of the others, zeros included (as PyG's).
package main

//strata:doc columnwise product (MulAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentProd(g, sdk.GatherSrc(g, x)) })
}
