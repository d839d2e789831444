//go:build wasip1

// MLP aggregation (PyG MLPAggregation): the first max_num (option,
// default 8) neighbours in CSR order, zero-padded, concatenated and fed to
// an MLP K·C -> C -> C (ReLU between). Order-dependent, as PyG's.
package main

//strata:doc MLP over the first max_num neighbours, zero-padded; option max_num (MLPAggregation)
//strata:order-dependent

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		k := sdk.Cfg("max_num", 8)
		if k < 1 || k > 64 {
			sdk.Fail("option max_num must be in 1..64")
			return -1
		}
		c := sdk.Cols(x)
		e := sdk.GatherSrc(g, x)
		h := sdk.SegmentNth(g, e, 0)
		for i := int64(1); i < k; i++ {
			h = sdk.Concat(h, sdk.SegmentNth(g, e, float64(i)))
		}
		h = sdk.ReLU(sdk.Linear("mlp.0", h, k*c, c, true))
		return sdk.Linear("mlp.1", h, c, c, true)
	})
}
