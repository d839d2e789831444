//go:build wasip1

// APPNP (Klicpera et al., ICLR 2019; PyG's APPNP after an MLP): every
// layer is a linear map (ReLU between layers, dropout on its input); the
// last one then propagates its predictions k times by personalized
// PageRank:
//
//	z_0 = h,  z_{t+1} = (1-alpha) · Â z_t + alpha · h,  Â = D^-1/2 (A+I) D^-1/2
//
// Its last layer reads the graph k hops deep and its other layers not at
// all, so it trains full-graph only: a strategy that binds one sampled
// block per layer (train.mode = "minibatch") refuses it at validate.
// Options: k (propagation steps, default 10), alpha (teleport, default
// 0.1), and the host's in_dim, out_dim, dropout, last, batchnorm.
package main

//strata:doc APPNP (Klicpera et al.): an MLP whose last layer propagates k times by personalized PageRank, z = (1-alpha) Â z + alpha h; options k, alpha; full-graph only

import (
	"strata/models/sdk"
	"strata/models/sdk/opts"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	h := sdk.Linear("lin", x, in, out, true)
	k, alpha := opts.Int("appnp", "k", 10, 0, 1000), opts.Float("appnp", "alpha", 0.1, 0, 1)
	if !sdk.Last() {
		return sdk.Post(h, sdk.ReLU)
	}
	sdk.CfgBool("batchnorm", false) // read on every layer, as Post does
	g := sdk.Graph(sdk.AdjSelf)
	z := h
	for range k {
		z = sdk.Add(sdk.Scale(sdk.Aggregate(g, z, sdk.GCN), 1-alpha), sdk.Scale(h, alpha))
	}
	return z
}
