//go:build wasip1

// LCM aggregation (PyG LCMAggregation, "Learnable Commutative Monoids for
// Graph Neural Networks"): the first max_num (option, default 16)
// neighbours of each node in CSR order, zero-padded to max_num, reduced
// over a binary tree whose every pair (l, r) becomes (GRUCell(l, r) +
// GRUCell(r, l))/2 with one shared GRU cell C -> C; an odd element out
// moves up a level unchanged. With option lcm_project (default true, as
// PyG's project) the rows first go through ReLU(x W + b), C -> C. It
// equals PyG's LCMAggregation called with max_num_elements = max_num.
// Order-dependent, as PyG's.
package main

//strata:doc learnable commutative monoid: a GRU cell over a binary tree of the first max_num neighbours, zero-padded; options max_num, lcm_project (LCMAggregation)
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
		if sdk.CfgBool("lcm_project", true) {
			x = sdk.ReLU(sdk.Linear("lcm.lin", x, c, c, true))
		}
		cell := sdk.NewGRUCell("lcm.gru", c, c)
		e := sdk.GatherSrc(g, x)
		level := make([]sdk.Value, k)
		for i := range level {
			level[i] = sdk.SegmentNth(g, e, float64(i))
		}
		for len(level) > 1 {
			var next []sdk.Value
			for i := 0; i+1 < len(level); i += 2 {
				l, r := level[i], level[i+1]
				next = append(next, sdk.Scale(sdk.Add(cell.Step(l, r), cell.Step(r, l)), 0.5))
			}
			if len(level)%2 == 1 {
				next = append(next, level[len(level)-1])
			}
			level = next
		}
		return level[0]
	})
}
