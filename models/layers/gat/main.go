//go:build wasip1

// GAT (Velickovic et al.), as the PyTorch peer's GAT layer. With K heads of
// D channels and z = dropout(h)·W split into heads:
//
//	e_ij  = LeakyReLU(a_src·z_j + a_dst·z_i, negative_slope)   over adj_self
//	α     = dropout(softmax_j(e_ij), attn_dropout)
//	h'_i  = act(concat_k or mean_k(Σ_j α_ij z_j) + b)
//
// Hidden layers use K = heads, D = out_dim/heads and concatenate the heads;
// the last layer uses K = out_heads, D = out_dim and averages them. W,
// a_src and a_dst are glorot, b zeros; act is ELU except on the last layer.
// Options: in_dim, out_dim, dropout, last, batchnorm, heads (1),
// out_heads (1), attn_dropout (0), negative_slope (0.2).
package main

//strata:doc GAT (Velickovic et al.): multi-head attention; options heads, out_heads, attn_dropout, negative_slope

import (
	"strconv"

	"strata/models/sdk"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	heads, outHeads := sdk.Cfg("heads", 1), sdk.Cfg("out_heads", 1)
	slope, attnDrop := sdk.CfgFloat("negative_slope", 0.2), sdk.CfgFloat("attn_dropout", 0)
	last := sdk.Last()
	k, d := heads, int64(0)
	switch {
	case heads <= 0 || outHeads <= 0:
		sdk.Fail("gat: heads=" + strconv.FormatInt(heads, 10) + " and out_heads=" + strconv.FormatInt(outHeads, 10) + " must both be >= 1")
	case last:
		k, d = outHeads, out
	case out%heads != 0:
		sdk.Fail("gat: hidden size out_dim=" + strconv.FormatInt(out, 10) +
			" must be divisible by heads=" + strconv.FormatInt(heads, 10))
	default:
		d = out / heads
	}
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	g := sdk.Graph(sdk.AdjSelf)
	z := sdk.MatMul(x, sdk.Param("lin.weight", []int64{in, k * d}, sdk.Glorot))
	src := sdk.HeadDot(z, sdk.Param("att_src", []int64{k, d}, sdk.Glorot))
	dst := sdk.HeadDot(z, sdk.Param("att_dst", []int64{k, d}, sdk.Glorot))
	e := sdk.LeakyReLU(sdk.UAddV(g, src, dst), slope)
	alpha := sdk.Dropout(sdk.EdgeSoftmax(g, e), attnDrop)
	h := sdk.SpMMEdge(g, alpha, z)
	if last && k > 1 {
		h = sdk.HeadMean(h, k)
	}
	h = sdk.Bias(h, sdk.Param("bias", []int64{out}, sdk.Zeros))
	return sdk.Post(h, sdk.ELU)
}
