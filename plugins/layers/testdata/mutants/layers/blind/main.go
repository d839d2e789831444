//go:build wasip1

// A broken layer: its input is scaled by zero before its projection and
// mean over the graph, then biased, so every node gets the same
// output whatever its features. Its gradients are right (the weight's is
// zero) and both backends agree; the suite's Learns subtest must fail on
// it.
package main

//strata:doc bias only, blind to its input (mutant: cannot learn)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.Register(func() sdk.Value {
		in, out := sdk.Dims()
		h := sdk.MatMul(sdk.Scale(sdk.Input(in), 0), sdk.Param("weight", []int64{in, out}, sdk.Glorot))
		h = sdk.Bias(sdk.Aggregate(sdk.Graph(sdk.AdjSelf), h, sdk.Mean), sdk.Param("bias", []int64{out}, sdk.Zeros))
		if sdk.Last() {
			return h
		}
		return sdk.ReLU(h)
	})
}
