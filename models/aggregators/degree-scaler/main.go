//go:build wasip1

// DegreeScaler aggregation (PyG DegreeScalerAggregation, PNA's scalers):
// the aggregator named in option scaled (default "multi") scaled by each of
// option scalers (comma-separated, default
// "identity,amplification,attenuation"; also linear, inverse_linear),
// concatenated. amplification = log(d+1)/delta, attenuation =
// delta/log(max(d,1)+1), linear = d/delta_lin, inverse_linear =
// delta_lin/max(d,1); delta (default 1) is the mean of log(d+1) over the
// training graph, delta_lin (default 1) its mean degree.
package main

//strata:doc PNA's degree scalers over an aggregator; options scaled, scalers, delta, delta_lin (DegreeScalerAggregation)

import (
	"strings"

	"strata/models/sdk"
)

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		delta, deltaLin := sdk.CfgFloat("delta", 1), sdk.CfgFloat("delta_lin", 1)
		scalers := sdk.CfgStr("scalers", "identity,amplification,attenuation")
		a := sdk.Aggr(sdk.CfgStr("scaled", "multi"), g, x)
		deg := sdk.Degree(g, a)
		var out sdk.Value = -1
		for _, s := range strings.Split(scalers, ",") {
			var v sdk.Value
			switch strings.TrimSpace(s) {
			case "identity":
				v = a
			case "amplification":
				v = sdk.Mul(a, sdk.Scale(sdk.Ln(sdk.Shift(deg, 1)), 1/delta))
			case "attenuation":
				v = sdk.Mul(a, sdk.Pow(sdk.Scale(sdk.Ln(sdk.Shift(sdk.ClampMin(deg, 1), 1)), 1/delta), -1))
			case "linear":
				v = sdk.Mul(a, sdk.Scale(deg, 1/deltaLin))
			case "inverse_linear":
				v = sdk.Mul(a, sdk.Pow(sdk.Scale(sdk.ClampMin(deg, 1), 1/deltaLin), -1))
			default:
				sdk.Fail("option scalers: unknown scaler " + s + " (identity, amplification, attenuation, linear, inverse_linear)")
				return -1
			}
			if out < 0 {
				out = v
			} else {
				out = sdk.Concat(out, v)
			}
		}
		return out
	})
}
