//go:build wasip1

// A toy layer for the model.* suite, GraphConv (Morris et al., AAAI
// 2019) with a sum over the neighbours:
//
//	h'_i = act(W_r x_i + b + W_n · Σ_{j in N(i)} x_j),  x = dropout(h)
//
// over the graph without self loops; act is ReLU except on the last
// layer. Dropping this directory here is all it takes for the suite to
// check it (built by scripts/build-models.sh, directives and all).
package main

//strata:doc GraphConv (Morris et al.): X W_root + (sum_j x_j) W_nbr (suite fixture)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.Register(func() sdk.Value {
		in, out := sdk.Dims()
		x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
		sum := sdk.Aggregate(sdk.Graph(sdk.Adj), x, sdk.Sum)
		h := sdk.Add(sdk.Linear("root", x, in, out, true), sdk.Linear("nbr", sum, in, out, false))
		return sdk.Post(h, sdk.ReLU)
	})
}
