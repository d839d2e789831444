//go:build wasip1

// GRU aggregation (PyG GRUAggregation): a GRU (torch.nn.GRU's cell, zero
// initial state) over the first max_num (option, default 16) neighbours
// of each node in CSR order, zero-padded to max_num steps as PyG's dense
// batch pads, and its last hidden state; option gru_hidden (default: the
// input width). It equals PyG's GRUAggregation called with
// max_num_elements = max_num (which pads to and truncates at that
// length). Order-dependent, as PyG's.
package main

//strata:doc GRU over the first max_num neighbours in CSR order, zero-padded; options max_num, gru_hidden (GRUAggregation)
//strata:order-dependent

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value {
		k := sdk.Cfg("max_num", 16)
		if k < 1 || k > 64 {
			sdk.Fail("option max_num must be in 1..64")
			return -1
		}
		c := sdk.Cols(x)
		cell := sdk.NewGRUCell("gru", c, sdk.Cfg("gru_hidden", c))
		e := sdk.GatherSrc(g, x)
		h := sdk.NoState
		for i := range k {
			h = cell.Step(sdk.SegmentNth(g, e, float64(i)), h)
		}
		return h
	})
}
