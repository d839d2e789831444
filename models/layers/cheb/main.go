//go:build wasip1

// ChebConv (Defferrard et al., NeurIPS 2016), as PyG's ChebConv with the
// symmetric normalisation and lambda_max = 2:
//
//	L̂ = 2L/lambda_max - I = -D^-1/2 A D^-1/2   (A without self loops)
//	T_0 = x,  T_1 = L̂ x,  T_t = 2 L̂ T_{t-1} - T_{t-2}
//	h' = act(Σ_{t<k} T_t·W_t + b),  x = dropout(h)
//
// with k Chebyshev terms (PyG's K; k = 1 is a linear layer). Each W_t is
// glorot ("lins.<t>.weight"), b zeros. act is ReLU except on the last
// layer. Options: k (default 2), and the host's in_dim, out_dim, dropout,
// last, batchnorm.
package main

//strata:doc ChebConv (Defferrard et al.): sum over k Chebyshev polynomials T_t(L̂) x W_t of the scaled Laplacian; option k

import (
	"strconv"

	"strata/models/sdk"
	"strata/models/sdk/opts"
)

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	k := opts.Int("cheb", "k", 2, 1, 32)
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	g := sdk.Graph(sdk.Adj)
	lap := func(v sdk.Value) sdk.Value { return sdk.Scale(sdk.Aggregate(g, v, sdk.GCN), -1) } // L̂ v
	term := func(t int64, v sdk.Value) sdk.Value {
		return sdk.MatMul(v, sdk.Param("lins."+strconv.FormatInt(t, 10)+".weight", []int64{in, out}, sdk.Glorot))
	}
	prev, cur := sdk.Value(-1), x
	h := term(0, x)
	for t := int64(1); t < k; t++ {
		next := lap(cur)
		if t > 1 {
			next = sdk.Sub(sdk.Scale(next, 2), prev)
		}
		prev, cur = cur, next
		h = sdk.Add(h, term(t, cur))
	}
	h = sdk.Bias(h, sdk.Param("bias", []int64{out}, sdk.Zeros))
	return sdk.Post(h, sdk.ReLU)
}
