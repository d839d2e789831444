//go:build wasip1

// Attentional aggregation (PyG AttentionalAggregation, Li et al. "Gated
// Graph Sequence Neural Networks"): Σ_j softmax_j(gate(x_j))·nn(x_j) with
// gate a linear map to per-channel scores and nn a linear map + ReLU, both
// C -> C.
package main

//strata:doc gated attention: softmax(gate(x_j))·nn(x_j) summed (AttentionalAggregation)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		c := sdk.Cols(x)
		gate := sdk.Linear("gate", x, c, c, true)
		h := sdk.ReLU(sdk.Linear("nn", x, c, c, true))
		alpha := sdk.SegmentSoftmax(g, sdk.GatherSrc(g, gate))
		return sdk.SegmentSum(g, sdk.Mul(alpha, sdk.GatherSrc(g, h)))
	})
}
