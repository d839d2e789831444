//go:build wasip1

// GCN (Kipf & Welling), as the PyTorch peer's GCN layer:
//
//	h' = act(Â · dropout(h) · W + b),  Â = D^-1/2 (A+I) D^-1/2
//
// multiplying by W before aggregating when it narrows the features (DGL's
// rule). W is glorot, b zeros; act is ReLU except on the last layer.
// With edge weights (//strata:edge-weights), Â is PyG's gcn_norm: the
// weights w_ij/sqrt(d_i d_j), d_i the weight sum of i's in-edges and its
// self loop's 1.
// Options: in_dim, out_dim, dropout, last, batchnorm.
package main

//strata:edge-weights
//strata:doc GCN (Kipf & Welling): D^-1/2 (A+I) D^-1/2 X W, as a WASM layer module

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	w := sdk.Param("weight", []int64{in, out}, sdk.Glorot)
	h := sdk.NarrowAggregate(sdk.Graph(sdk.AdjSelf), x, w, sdk.GCN)
	h = sdk.Bias(h, sdk.Param("bias", []int64{out}, sdk.Zeros))
	return sdk.Post(h, sdk.ReLU)
}
