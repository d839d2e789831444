//go:build wasip1

// DistMult decoder (Yang et al., 2015) with one relation: the score of
// (u, v) is Σ_c h_u[c]·r[c]·h_v[c], r a learnt diagonal ("relation",
// stored as a column [C,1]) initialised to ones, so that training starts
// from the dot product.
package main

//strata:doc DistMult: Σ_c h_u[c]·r[c]·h_v[c], r a learnt diagonal initialised to ones

import (
	"strata/models/sdk"
	"strata/models/sdk/decoder"
)

func main() {}

func init() {
	decoder.Register(func(g, h sdk.Value) sdk.Value {
		in, _ := sdk.Dims()
		r := sdk.Param("relation", []int64{in, 1}, sdk.Ones)
		return sdk.MatMul(sdk.Mul(sdk.GatherSrc(g, h), sdk.GatherDst(g, h)), r)
	})
}
