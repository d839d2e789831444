//go:build wasip1

// GraphSAGE with the LSTM aggregator, as DGL's SAGEConv(aggregator_type=
// "lstm"):
//
//	h'_i = act(W_r x_i + b + W_n · LSTM(x_j for j in N(i))),  x = dropout(h)
//
// where LSTM runs over the neighbours of i in the graph's CSR order (DGL
// feeds its mailbox order; strata's order is deterministic) and gives its
// last hidden state, zeros for a node without neighbours. The LSTM's hidden
// size is in_dim, as DGL's, unless the option lstm_hidden sets it. W_r and
// W_n are glorot, b zeros, the LSTM as sdk.LSTMAggregation; act is ReLU
// except on the last layer. Options: in_dim, out_dim, dropout, last,
// batchnorm, lstm_hidden.
package main

//strata:doc GraphSAGE-LSTM (DGL's lstm aggregator): X W_root + LSTM(x_j in CSR order) W_nbr; option lstm_hidden
//strata:order-dependent

import "strata/models/sdk"

func main() {}

func init() { sdk.Register(layer) }

func layer() sdk.Value {
	in, out := sdk.Dims()
	hidden := sdk.Cfg("lstm_hidden", 0)
	switch {
	case hidden == 0:
		hidden = in
	case hidden < 0:
		sdk.Fail("sage-lstm: lstm_hidden must be positive (0: in_dim)")
	}
	x := sdk.Dropout(sdk.Input(in), sdk.CfgFloat("dropout", 0))
	root := sdk.Linear("root", x, in, out, true)
	agg := sdk.LSTMAggregation("lstm", sdk.Graph(sdk.Adj), x, in, hidden)
	h := sdk.Add(root, sdk.MatMul(agg, sdk.Param("nbr.weight", []int64{hidden, out}, sdk.Glorot)))
	return sdk.Post(h, sdk.ReLU)
}
