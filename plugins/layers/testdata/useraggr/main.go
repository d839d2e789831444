//go:build wasip1

// A user's aggregator: the log-mean-exp of the neighbours' rows, a smooth
// mean-to-max, m + log(mean_j exp(x_j - m)) with m the max (stable), 0 for
// a node without neighbours.
package main

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		e := sdk.GatherSrc(g, x)                                               // x_j on every edge j -> i
		m := sdk.SegmentMax(g, e)                                              // max_j x_j per node
		s := sdk.SegmentMean(g, sdk.Exp(sdk.Sub(e, sdk.GatherDst(g, m))))      // in (0, 1]; 0 without neighbours
		none := sdk.Shift(sdk.Scale(sdk.ClampMax(sdk.Degree(g, s), 1), -1), 1) // 1 without neighbours
		return sdk.Add(m, sdk.Ln(sdk.Add(s, none)))
	})
}
