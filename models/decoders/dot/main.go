//go:build wasip1

// Dot-product decoder (Kipf & Welling's GAE, PyG's InnerProductDecoder
// without the sigmoid): the score of a pair (u, v) is Σ_c h_u[c]·h_v[c].
package main

//strata:doc inner product of the two embeddings, Σ_c h_u[c]·h_v[c] (GAE)

import (
	"strata/models/sdk"
	"strata/models/sdk/decoder"
)

func main() {}

func init() {
	decoder.Register(func(g, h sdk.Value) sdk.Value { return sdk.UDotV(g, h, h, 1) })
}
