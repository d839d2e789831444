//go:build wasip1

// Quantile aggregation (PyG QuantileAggregation with interpolation
// "lower"): the q-quantile of x_j over N(i) per column, option q (default
// 0.5), 0 for a node without neighbours.
package main

//strata:doc q-quantile, lower element; option q (QuantileAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		q := sdk.CfgFloat("q", 0.5)
		if q < 0 || q > 1 {
			sdk.Fail("option q must be in [0,1]")
		}
		return sdk.SegmentQuantile(g, sdk.GatherSrc(g, x), q)
	})
}
