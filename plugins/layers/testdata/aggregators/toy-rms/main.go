//go:build wasip1

// A toy aggregator that the aggregator.* suite picks up from this
// directory with no edit elsewhere: the root mean square of the
// neighbours' rows, sqrt(mean_j x_j² + 1e-6) (0 without neighbours).
package main

//strata:doc root mean square of the neighbours' rows (toy fixture)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		e := sdk.GatherSrc(g, x)
		return sdk.Sqrt(sdk.Shift(sdk.SegmentMean(g, sdk.Mul(e, e)), 1e-6))
	})
}
