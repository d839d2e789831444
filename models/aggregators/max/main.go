//go:build wasip1

// Max aggregation (PyG MaxAggregation): the columnwise max of x_j over
// N(i), 0 for a node without neighbours.
package main

//strata:doc columnwise max (MaxAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentMax(g, sdk.GatherSrc(g, x)) })
}
