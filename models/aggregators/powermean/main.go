//go:build wasip1

// PowerMean aggregation (PyG PowerMeanAggregation, Li et al. "DeeperGCN"):
// (mean_j x_j^p)^(1/p) with x clamped to [1e-6, 100] and p learnable
// (option learn, default true) from option p (default 1). x^p is
// exp(p·log x), so that p can be learned (kept >= 1e-3, the exponents
// clamped so that nothing overflows); a node without neighbours gets 0.
package main

//strata:doc power mean with learnable p; options p, learn (PowerMeanAggregation)

import (
	"math"

	"strata/models/sdk"
)

func main() {}

var logMax = math.Log(100)

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		p0 := sdk.CfgFloat("p", 1)
		learn := sdk.CfgBool("learn", true)
		clamp := func(v sdk.Value) sdk.Value { return sdk.ClampMax(sdk.ClampMin(v, 1e-6), 100) }
		e := clamp(sdk.GatherSrc(g, x))
		var out sdk.Value
		if learn {
			// p stays >= 1e-3 and the exponents <= log(100), so that no
			// exp overflows (its gradient would be inf·0 = NaN).
			p := sdk.ClampMin(sdk.Scale(sdk.Param("p", []int64{1}, sdk.Ones), p0), 1e-3)
			m := clamp(sdk.SegmentMean(g, sdk.Exp(sdk.ClampMax(sdk.Mul(sdk.Ln(e), p), logMax))))
			out = sdk.Exp(sdk.ClampMax(sdk.Div(sdk.Ln(m), p), logMax))
		} else {
			out = sdk.Pow(clamp(sdk.SegmentMean(g, sdk.Pow(e, p0))), 1/p0)
		}
		return sdk.Mul(out, sdk.ClampMax(sdk.Degree(g, out), 1)) // 0 without neighbours, as PyG
	})
}
