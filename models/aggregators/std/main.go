//go:build wasip1

// Std aggregation (PyG StdAggregation): sqrt(max(var, 1e-5)), set to 0
// where var <= 1e-5, as PyG does.
package main

//strata:doc columnwise standard deviation (StdAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		const eps = 1e-5
		v := sdk.Variance(g, x)
		keep := sdk.ClampMin(sdk.Sign(sdk.Shift(v, -eps)), 0) // 1 where var > eps
		return sdk.Mul(sdk.Sqrt(sdk.ClampMin(v, eps)), keep)
	})
}
