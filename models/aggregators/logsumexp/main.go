//go:build wasip1

// LogSumExp aggregation, a smooth max (as in DeeperGCN's softmax family):
// ln Σ_{j∈N(i)} exp(x_j), columnwise, 0 for a node without neighbours.
// Computed as m + ln Σ exp(x_j − m) with m the columnwise max, so no
// exponential overflows; its gradient is the softmax of the neighbours.
// The sum is at least 1 when a node has neighbours (the max's own term),
// so clamping it at 1 only turns an empty sum's ln 0 into 0.
package main

//strata:doc smooth max ln Σ exp(x_j), numerically stable (LogSumExp)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		e := sdk.GatherSrc(g, x)
		m := sdk.SegmentMax(g, e)
		s := sdk.SegmentSum(g, sdk.Exp(sdk.Sub(e, sdk.GatherDst(g, m))))
		return sdk.Add(m, sdk.Ln(sdk.ClampMin(s, 1)))
	})
}
