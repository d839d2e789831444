//go:build wasip1

// GCNII (Chen et al., ICML 2020, "Simple and Deep Graph Convolutional
// Networks"), as PyG's GCN2Conv (shared weights) in the model of its
// Cora example: layer l of model.layers (from 1) is one GCNII convolution
// with initial residual alpha and identity mapping beta_l = ln(lambda/l + 1):
//
//	s   = (1-alpha) · Â dropout(h) + alpha · h0,  Â = D^-1/2 (A+I) D^-1/2
//	h'  = ReLU((1-beta_l) · s + beta_l · s·W_l)
//
// Layer 1 first computes h0 = ReLU(dropout(x)·W_in + b_in) (and h = h0);
// the last layer ends with dropout(h')·W_out + b_out, the class scores.
// Every layer needs h0, which is not its input, so the layers in between
// carry it: their output is [h' || h0] (2·model.hidden wide) and the next
// layer splits it again (a mask and a head mean, exact in floating point).
// Options: alpha (0.1), lambda (0.5, PyG's theta), and the host's in_dim,
// out_dim, dropout, layer, layers, last. model.layers must be >= 2 (the
// hidden width is model.hidden).
package main

//strata:doc GCNII (Chen et al.): deep GCN with initial residual alpha and identity mapping beta_l = ln(lambda/l + 1); options alpha, lambda; model.layers >= 2

import (
	"math"
	"strconv"

	"strata/models/sdk"
	"strata/models/sdk/opts"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	alpha, lambda := opts.Float("gcnii", "alpha", 0.1, 0, 1), opts.Float("gcnii", "lambda", 0.5, 1e-6, 1e6)
	l, layers, last := sdk.Cfg("layer", 0), sdk.Cfg("layers", 1), sdk.Last()
	drop := sdk.CfgFloat("dropout", 0)
	if layers < 2 {
		sdk.Fail("gcnii: model.layers = " + strconv.FormatInt(layers, 10) +
			" must be >= 2: the first layer's output width is model.hidden")
	}
	x := sdk.Input(in)
	var h, h0 sdk.Value
	hid := in / 2
	if l == 0 {
		hid = out
		h0 = sdk.ReLU(sdk.Linear("lin_in", sdk.Dropout(x, drop), in, hid, true))
		h = h0
	} else {
		h, h0 = half(x, 0), half(x, 1)
	}
	beta := math.Log(lambda/float64(l+1) + 1)
	s := sdk.Add(sdk.Scale(sdk.Aggregate(sdk.Graph(sdk.AdjSelf), sdk.Dropout(h, drop), sdk.GCN), 1-alpha), sdk.Scale(h0, alpha))
	w := sdk.Param("weight", []int64{hid, hid}, sdk.Glorot)
	h = sdk.ReLU(sdk.Add(sdk.Scale(s, 1-beta), sdk.Scale(sdk.MatMul(s, w), beta)))
	if last {
		return sdk.Linear("lin_out", sdk.Dropout(h, drop), hid, out, true)
	}
	return sdk.Concat(h, h0)
}

// half returns block b (0 or 1) of the two column blocks of v [N, 2·C]:
// v times a 0/1 mask that keeps the block, then the mean of the blocks
// times 2, (v_b + 0)/2·2 = v_b exactly. The mask is built from v (its
// zeros, shifted), so its gradient is zero.
func half(v sdk.Value, b int) sdk.Value {
	zero := sdk.Scale(sdk.HeadMean(v, 2), 0)
	one := sdk.Shift(zero, 1)
	mask := sdk.Concat(one, zero)
	if b == 1 {
		mask = sdk.Concat(zero, one)
	}
	return sdk.Scale(sdk.HeadMean(sdk.Mul(v, mask), 2), 2)
}
