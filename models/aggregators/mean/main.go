//go:build wasip1

// Mean aggregation (PyG MeanAggregation): the mean of x_j over N(i), 0 for
// a node without neighbours.
package main

//strata:doc mean of the neighbours' rows (MeanAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentMean(g, sdk.GatherSrc(g, x)) })
}
