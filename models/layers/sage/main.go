//go:build wasip1

// GraphSAGE-mean, as the PyTorch peer's SAGE layer:
//
//	h'_i = act(W_r x_i + b + W_n · mean_{j in N(i)} x_j),  x = dropout(h)
//
// over the graph without self loops; W_n is applied on the narrow side. W_r
// and W_n are glorot, b zeros; act is ReLU except on the last layer.
// Options: in_dim, out_dim, dropout, last, batchnorm.
package main

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	root := sdk.Linear("root", x, in, out, true)
	wn := sdk.Param("nbr.weight", []int64{in, out}, sdk.Glorot)
	h := sdk.Add(root, sdk.NarrowAggregate(sdk.Graph(sdk.Adj), x, wn, sdk.Mean))
	return sdk.Post(h, sdk.ReLU)
}
