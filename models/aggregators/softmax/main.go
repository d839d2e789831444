//go:build wasip1

// Softmax aggregation (PyG SoftmaxAggregation, Li et al. "DeeperGCN"):
// Σ_j softmax_j(t·x_j)·x_j per column, with the inverse temperature t
// learnable (option learn, default true) from option t (default 1).
package main

//strata:doc softmax-weighted sum with learnable inverse temperature; options t, learn (SoftmaxAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		t0 := sdk.CfgFloat("t", 1)
		e := sdk.GatherSrc(g, x)
		var s sdk.Value
		if sdk.CfgBool("learn", true) {
			t := sdk.Scale(sdk.Param("t", []int64{1}, sdk.Ones), t0)
			s = sdk.Mul(e, t)
		} else {
			s = sdk.Scale(e, t0)
		}
		return sdk.SegmentSum(g, sdk.Mul(sdk.SegmentSoftmax(g, s), e))
	})
}
