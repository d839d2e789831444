//go:build wasip1

// mixagg, the example layer of docs/models.md: a GraphSAGE-style layer that
// concatenates each node's own features with the mean and the max of its
// neighbours' features and applies one linear map:
//
//	h'_i = act(W · [x_i || mean_j x_j || max_j x_j] + b),  x = dropout(h)
//
// act is ReLU except on the last layer. Option use_max (default true) drops
// the max aggregator when false.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath \
//
//	-o mixagg.wasm ./models/examples/mixagg
package main

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()                                       // set by the host for every layer
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0)) // message: x_j itself
	g := sdk.Graph(sdk.Adj)                                     // the dataset's edges, no self loops
	h := sdk.Concat(x, sdk.Aggregate(g, x, sdk.Mean))           // [N, 2·in]
	if sdk.CfgBool("use_max", true) {                           // a user option (model.options.use_max)
		h = sdk.Concat(h, sdk.Aggregate(g, x, sdk.Max)) // [N, 3·in]
	}
	h = sdk.Linear("lin", h, sdk.Cols(h), out, true) // update: W·h + b
	return sdk.Post(h, sdk.ReLU)                     // ReLU (and optional batchnorm) unless last
}
