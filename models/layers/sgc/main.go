//go:build wasip1

// SGC (Wu et al., ICML 2019, "Simplifying Graph Convolutional Networks"),
// as PyG's SGConv:
//
//	h' = act(Â^k · dropout(h) · W + b),  Â = D^-1/2 (A+I) D^-1/2
//
// The paper's model is one such layer (model.layers = 1) with k = 2 and
// no nonlinearity. W is applied first when it narrows the features (the
// propagation is linear, so the order does not change the result; PyG
// caches Â^k X instead). act is ReLU except on the last layer. Options: k
// (propagation steps, default 2), and the host's in_dim, out_dim,
// dropout, last, batchnorm.
package main

//strata:doc SGC (Wu et al.): Â^k X W with Â = D^-1/2 (A+I) D^-1/2, one linear layer; option k

import (
	"strata/models/sdk"
	"strata/models/sdk/opts"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	k := opts.Int("sgc", "k", 2, 1, 64)
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	w := sdk.Param("lin.weight", []int64{in, out}, sdk.Glorot)
	g := sdk.Graph(sdk.AdjSelf)
	narrow := in > out
	h := x
	if narrow {
		h = sdk.MatMul(h, w)
	}
	for range k {
		h = sdk.Aggregate(g, h, sdk.GCN)
	}
	if !narrow {
		h = sdk.MatMul(h, w)
	}
	h = sdk.Bias(h, sdk.Param("lin.bias", []int64{out}, sdk.Zeros))
	return sdk.Post(h, sdk.ReLU)
}
