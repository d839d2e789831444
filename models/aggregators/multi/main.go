//go:build wasip1

// Multi aggregation (PyG MultiAggregation, mode "cat"): the aggregators
// named in option aggrs (comma-separated, default "mean,max"), each run
// with sdk.Aggr, concatenated: [N, Σ widths].
package main

//strata:doc several aggregators concatenated; option aggrs (MultiAggregation)

import (
	"strings"

	"strata/models/sdk"
)

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		var out sdk.Value = -1
		for _, name := range strings.Split(sdk.CfgStr("aggrs", "mean,max"), ",") {
			a := sdk.Aggr(strings.TrimSpace(name), g, x)
			if out < 0 {
				out = a
			} else {
				out = sdk.Concat(out, a)
			}
		}
		return out
	})
}
