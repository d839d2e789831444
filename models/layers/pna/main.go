//go:build wasip1

// PNA (Corso et al., "Principal Neighbourhood Aggregation for Graph Nets",
// NeurIPS 2020), one tower, built from the shipped aggregators:
//
//	m_j = x_j W_pre + b_pre                  (the message, out wide)
//	a_i = DegreeScaler(Multi(aggrs))(m)_i    (|scalers|·|aggrs|·out wide)
//	h'_i = act([x_i || a_i] W_post + b_post), x = dropout(h)
//
// Options are those of the aggregators: aggrs (multi's; PNA's choice is
// "mean,min,max,std", see configs/pna-cora.toml), scalers (default
// "identity,amplification,attenuation") and delta (the mean of log(d+1)
// over the training graph's nodes, default 1) of degree-scaler; and
// batchnorm. The message depends on x_j alone (PyG's PNAConv also feeds
// x_i and edge features to its pre-network).
package main

//strata:doc PNA (Corso et al.): [x || DegreeScaler(Multi(mean, min, max, std))(x W_pre)] W; options aggrs, scalers, delta (mean log(d+1) of the training graph)

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	m := sdk.Linear("pre", x, in, out, true)
	a := sdk.Aggr("degree-scaler", sdk.Graph(sdk.Adj), m)
	h := sdk.Linear("post", sdk.Concat(x, a), in+sdk.Cols(a), out, true)
	return sdk.Post(h, sdk.ReLU)
}
