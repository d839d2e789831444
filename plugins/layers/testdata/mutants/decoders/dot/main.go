//go:build wasip1

// A broken dot decoder: it scores a pair (u, v) with its destination's
// row alone, Σ_c h_v[c]², not Σ_c h_u[c]·h_v[c]. Named dot, it is held to
// the dot decoder's reference, and the suite's Reference subtest must
// fail on it (its gradients are the host's, so they stay right).
package main

//strata:doc the destination's squared norm (mutant: not the dot product)

import (
	"strata/models/sdk"
	"strata/models/sdk/decoder"
)

func main() {}

func init() {
	decoder.Register(func(g, h sdk.Value) sdk.Value {
		in, _ := sdk.Dims()
		v := sdk.GatherDst(g, h)
		return sdk.MatMul(sdk.Mul(v, v), sdk.Buffer("ones", []int64{in, 1}, sdk.Ones))
	})
}
