//go:build wasip1

// Variance-preserving aggregation (PyG VariancePreservingAggregation,
// Schneckenreiter et al.): Σ_j x_j / sqrt(max(|N(i)|, 1)).
package main

//strata:doc Σ x_j / sqrt(deg) (VariancePreservingAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		s := sdk.SegmentSum(g, sdk.GatherSrc(g, x))
		return sdk.Div(s, sdk.Sqrt(sdk.ClampMin(sdk.Degree(g, s), 1)))
	})
}
