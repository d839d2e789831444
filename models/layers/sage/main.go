//go:build wasip1

// GraphSAGE, as the PyTorch peer's SAGE layer:
//
//	h'_i = act(W_r x_i + b + W_n · aggr_{j in N(i)} x_j),  x = dropout(h)
//
// over the graph without self loops. aggr is the built-in mean (applied on
// the narrow side of W_n) unless option aggr names an aggregator module: a
// registered aggregator.<name> ("powermean", "median", ...) or a .wasm
// file; W_n then maps the aggregator's width to out. With option project
// the aggregator reads ReLU(x W_p + b_p), out wide, instead of x (PyG's
// project=True, narrowed to out: an aggregator with parameters then stays
// small on wide inputs). W_r and W_n are glorot, b zeros; act is ReLU
// except on the last layer.
// With edge weights (//strata:edge-weights) the built-in mean averages
// w_ij·x_j (DGL's SAGEConv edge_weight); an aggr module refuses them.
// Options: in_dim, out_dim, dropout, last, batchnorm, aggr, project.
package main

//strata:aliases graphsage
//strata:edge-weights
//strata:doc GraphSAGE (Hamilton et al.): X W_root + aggr_j(x_j) W_nbr; option aggr names an aggregator.* module or a .wasm file (default: the built-in mean)

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	root := sdk.Linear("root", x, in, out, true)
	var nbr sdk.Value
	project := sdk.CfgBool("project", false)
	if aggr := sdk.CfgStr("aggr", ""); aggr != "" {
		m := x
		if project {
			m = sdk.ReLU(sdk.Linear("proj", x, in, out, true))
		}
		a := sdk.Aggr(aggr, sdk.Graph(sdk.Adj), m)
		nbr = sdk.MatMul(a, sdk.Param("nbr.weight", []int64{sdk.Cols(a), out}, sdk.Glorot))
	} else {
		if project {
			sdk.Fail("option project needs option aggr (the built-in mean aggregates x)")
		}
		wn := sdk.Param("nbr.weight", []int64{in, out}, sdk.Glorot)
		nbr = sdk.NarrowAggregate(sdk.Graph(sdk.Adj), x, wn, sdk.Mean)
	}
	return sdk.Post(sdk.Add(root, nbr), sdk.ReLU)
}
