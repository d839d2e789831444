//go:build wasip1

// GIN (Xu et al.) with a two-layer MLP (Linear-ReLU-Linear, out_dim wide):
//
//	h' = act(MLP((1+eps)·x + Σ_{j in N(i)} x_j)),  x = dropout(h)
//
// over the graph without self loops. eps is the option eps (default 0);
// with train_eps=1 a learnable scalar "eps" (initialised to 0) is added to
// it, so the effective epsilon is eps + param, as GINConv(train_eps=True)
// initialised at eps. The MLP's first Linear is applied on the narrow side
// (it is linear, so the order does not change the result). act is ReLU
// except on the last layer.
// Options: in_dim, out_dim, dropout, last, batchnorm, eps, train_eps.
package main

//strata:doc GIN (Xu et al.): MLP((1+eps) x + sum_j x_j); options eps, train_eps

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	eps, trainEps := sdk.CfgFloat("eps", 0), sdk.CfgBool("train_eps", false)
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	w1 := sdk.Param("mlp.0.weight", []int64{in, out}, sdk.Glorot)
	narrow := in > out
	if narrow {
		x = sdk.MatMul(x, w1)
	}
	self := x
	if eps != 0 {
		self = sdk.Scale(x, 1+eps)
	}
	h := sdk.Add(self, sdk.Aggregate(sdk.Graph(sdk.Adj), x, sdk.Sum))
	if trainEps {
		h = sdk.Add(h, sdk.Mul(x, sdk.Param("eps", []int64{1}, sdk.Zeros)))
	}
	if !narrow {
		h = sdk.MatMul(h, w1)
	}
	h = sdk.ReLU(sdk.Bias(h, sdk.Param("mlp.0.bias", []int64{out}, sdk.Zeros)))
	h = sdk.Linear("mlp.2", h, out, out, true)
	return sdk.Post(h, sdk.ReLU)
}
