//go:build wasip1

// GATv2 (Brody et al., ICLR 2022), as PyG's GATv2Conv (bias on the
// output, self loops added, share_weights as an option). With K heads of
// D channels and x = dropout(h):
//
//	l = x·W_l, r = x·W_r (W_r = W_l with share_weights), split into heads
//	e_ij  = a · LeakyReLU(l_j + r_i, negative_slope)   over adj_self
//	α     = dropout(softmax_j(e_ij), attn_dropout)
//	h'_i  = act(concat_k or mean_k(Σ_j α_ij l_j) + b)
//
// The attention is dynamic: a is applied after the nonlinearity, so the
// ranking of neighbours depends on the query node (GAT's a_src·z_j +
// a_dst·z_i ranks them the same for every i). Hidden layers use K =
// heads, D = out_dim/heads and concatenate the heads; the last layer uses
// K = out_heads, D = out_dim and averages them. act is ELU except on the
// last layer. Options: heads (1), out_heads (1), attn_dropout (0),
// negative_slope (0.2), share_weights (false), and the host's in_dim,
// out_dim, dropout, last, batchnorm.
package main

//strata:doc GATv2 (Brody et al.): dynamic attention a·LeakyReLU(W_l x_j + W_r x_i); options heads, out_heads, attn_dropout, negative_slope, share_weights

import (
	"strata/models/sdk"
	"strata/models/sdk/opts"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	k, d := opts.Heads("gatv2")
	slope := opts.Float("gatv2", "negative_slope", 0.2, 0, 1)
	attnDrop, share, last := sdk.CfgFloat("attn_dropout", 0), sdk.CfgBool("share_weights", false), sdk.Last()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	g := sdk.Graph(sdk.AdjSelf)
	l := sdk.MatMul(x, sdk.Param("lin_l.weight", []int64{in, k * d}, sdk.Glorot))
	r := l
	if !share {
		r = sdk.MatMul(x, sdk.Param("lin_r.weight", []int64{in, k * d}, sdk.Glorot))
	}
	e := sdk.LeakyReLU(sdk.Add(sdk.GatherSrc(g, l), sdk.GatherDst(g, r)), slope) // [E, K·D]
	s := sdk.HeadDot(e, sdk.Param("att", []int64{k, d}, sdk.Glorot))             // [E, K]
	alpha := sdk.Dropout(sdk.EdgeSoftmax(g, s), attnDrop)
	h := sdk.SpMMEdge(g, alpha, l)
	if last && k > 1 {
		h = sdk.HeadMean(h, k)
	}
	h = sdk.Bias(h, sdk.Param("bias", []int64{out}, sdk.Zeros))
	return sdk.Post(h, sdk.ELU)
}
