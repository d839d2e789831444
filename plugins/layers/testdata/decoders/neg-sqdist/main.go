//go:build wasip1

// A toy decoder that the decoder.* suite picks up from this directory with
// no edit elsewhere, and that has no dense reference: minus the squared
// distance of the two embeddings, -Σ_c (h_u[c] - h_v[c])².
package main

//strata:doc minus the squared distance of the embeddings (toy fixture)

import (
	"strata/models/sdk"
	"strata/models/sdk/decoder"
)

func main() {}

func init() {
	decoder.Register(func(g, h sdk.Value) sdk.Value {
		in, _ := sdk.Dims()
		d := sdk.Sub(sdk.GatherSrc(g, h), sdk.GatherDst(g, h))
		return sdk.Scale(sdk.MatMul(sdk.Mul(d, d), sdk.Buffer("ones", []int64{in, 1}, sdk.Ones)), -1)
	})
}
