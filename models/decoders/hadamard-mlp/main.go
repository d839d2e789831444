//go:build wasip1

// MLP decoder over the Hadamard product (OGB's link-prediction baselines'
// LinkPredictor): the score of (u, v) is an MLP of h_u ⊙ h_v, layers
// Linear layers (option, default 2) of width hidden (option, default the
// embedding width) with ReLU between, the last one of width 1.
package main

//strata:doc MLP over h_u ⊙ h_v; options hidden (default the embedding width), layers (default 2)

import (
	"fmt"

	"strata/models/sdk"
	"strata/models/sdk/decoder"
)

func main() {}

func init() {
	decoder.Register(func(g, h sdk.Value) sdk.Value {
		in, _ := sdk.Dims()
		hidden, layers := sdk.Cfg("hidden", in), sdk.Cfg("layers", 2)
		if hidden < 1 {
			sdk.Fail(fmt.Sprintf("option hidden = %d must be at least 1", hidden))
			return -1
		}
		if layers < 1 || layers > 16 {
			sdk.Fail(fmt.Sprintf("option layers = %d must be in 1..16", layers))
			return -1
		}
		z, width := sdk.Mul(sdk.GatherSrc(g, h), sdk.GatherDst(g, h)), in
		for i := range layers - 1 {
			z = sdk.ReLU(sdk.Linear(fmt.Sprintf("mlp.%d", i), z, width, hidden, true))
			width = hidden
		}
		return sdk.Linear(fmt.Sprintf("mlp.%d", layers-1), z, width, 1, true)
	})
}
