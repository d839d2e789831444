//go:build wasip1

// TransformerConv (Shi et al., IJCAI 2021), as PyG's TransformerConv with
// root_weight (no beta gate, no edge features). With K heads of D
// channels and x = dropout(h):
//
//	q = x·W_q + b_q, k = x·W_k + b_k, v = x·W_v + b_v   (split into heads)
//	α_ij  = dropout(softmax_j(<q_i, k_j> / sqrt(D)), attn_dropout)   over adj
//	h'_i  = act(concat_k or mean_k(Σ_j α_ij v_j) + x_i·W_s + b_s)
//
// over the dataset's edges without self loops, as PyG (the skip term
// W_s x_i is the node's own message). Hidden layers use K = heads, D =
// out_dim/heads and concatenate the heads; the last layer uses K =
// out_heads, D = out_dim and averages them (PyG's concat = False). act is
// ELU except on the last layer. Options: heads (1), out_heads (1),
// attn_dropout (0), and the host's in_dim, out_dim, dropout, last,
// batchnorm.
package main

//strata:doc TransformerConv (Shi et al.): multi-head scaled dot-product attention over neighbours plus a root weight; options heads, out_heads, attn_dropout

import (
	"math"

	"strata/models/sdk"
	"strata/models/sdk/opts"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	k, d := opts.Heads("transformer")
	attnDrop, last := sdk.CfgFloat("attn_dropout", 0), sdk.Last()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	g := sdk.Graph(sdk.Adj)
	q := sdk.Linear("lin_query", x, in, k*d, true)
	key := sdk.Linear("lin_key", x, in, k*d, true)
	v := sdk.Linear("lin_value", x, in, k*d, true)
	s := sdk.Scale(sdk.UDotV(g, q, key, k), 1/math.Sqrt(float64(max(d, 1)))) // [E, K]
	alpha := sdk.Dropout(sdk.EdgeSoftmax(g, s), attnDrop)
	h := sdk.SpMMEdge(g, alpha, v)
	if last && k > 1 {
		h = sdk.HeadMean(h, k)
	}
	h = sdk.Add(h, sdk.Linear("lin_skip", x, in, out, true))
	return sdk.Post(h, sdk.ELU)
}
