//go:build wasip1

// Median aggregation (PyG MedianAggregation): the lower median of x_j over
// N(i) per column, 0 for a node without neighbours.
package main

//strata:doc lower median (MedianAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentQuantile(g, sdk.GatherSrc(g, x), 0.5) })
}
