//go:build wasip1

// DeepSets aggregation (PyG DeepSetsAggregation, Zaheer et al.):
// global_nn(Σ_j local_nn(x_j)) with local_nn a linear map + ReLU and
// global_nn a linear map, both C -> C.
package main

//strata:doc global_nn(Σ local_nn(x_j)) (DeepSetsAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		c := sdk.Cols(x)
		phi := sdk.ReLU(sdk.Linear("local", x, c, c, true))
		return sdk.Linear("global", sdk.SegmentSum(g, sdk.GatherSrc(g, phi)), c, c, true)
	})
}
