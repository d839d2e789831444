//go:build wasip1

// Min aggregation (PyG MinAggregation): the columnwise min of x_j over
// N(i), 0 for a node without neighbours.
package main

//strata:doc columnwise min (MinAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentMin(g, sdk.GatherSrc(g, x)) })
}
