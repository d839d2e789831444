//go:build wasip1

// LSTM aggregation (PyG LSTMAggregation): an LSTM over N(i) in CSR order,
// its last hidden state; option lstm_hidden (default: the input width).
package main

//strata:doc LSTM over the neighbours in CSR order; option lstm_hidden (LSTMAggregation)
//strata:order-dependent

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		c := sdk.Cols(x)
		return sdk.LSTMAggregation("lstm", g, x, c, sdk.Cfg("lstm_hidden", c))
	})
}
