//go:build wasip1

// GraphConv (Morris et al., AAAI 2019, "Weisfeiler and Leman Go Neural"),
// as PyG's GraphConv:
//
//	h'_i = act(x_i·W_root + aggr_j(x_j)·W_rel + b),  x = dropout(h)
//
// over the dataset's edges without self loops; aggr is the option aggr
// (sum, as PyG's default, mean or max), and W_rel is applied on the narrow
// side for the linear reducers. W_root has no bias and W_rel's is b, as
// PyG's lin_root and lin_rel. act is ReLU except on the last layer.
// With edge weights (//strata:edge-weights) sum and mean aggregate w_ij·x_j
// (PyG's edge_weight); max refuses them.
// Options: aggr ("sum"), and the host's in_dim, out_dim, dropout, last,
// batchnorm.
package main

//strata:edge-weights
//strata:doc GraphConv (Morris et al.): x_i W_root + sum_j x_j W_rel + b; option aggr (sum, mean, max)

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	aggr := sdk.CfgStr("aggr", "sum")
	r := sdk.Reducer(aggr)
	if r != sdk.Sum && r != sdk.Mean && r != sdk.Max {
		sdk.Fail(`graphconv: option aggr = "` + aggr + `" is not one of "sum", "mean", "max"`)
	}
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	root := sdk.Linear("lin_root", x, in, out, false)
	rel := sdk.Param("lin_rel.weight", []int64{in, out}, sdk.Glorot)
	h := sdk.NarrowAggregate(sdk.Graph(sdk.Adj), x, rel, r)
	h = sdk.Bias(sdk.Add(root, h), sdk.Param("lin_rel.bias", []int64{out}, sdk.Zeros))
	return sdk.Post(h, sdk.ReLU)
}
