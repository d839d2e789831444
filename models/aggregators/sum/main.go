//go:build wasip1

// Sum aggregation (PyG SumAggregation): Σ_{j∈N(i)} x_j, composed from the
// op table: the source rows gathered onto the edges, summed per node.
package main

//strata:doc sum of the neighbours' rows (SumAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentSum(g, sdk.GatherSrc(g, x)) })
}
