//go:build wasip1

// A misbehaving layer for the host's tests; option mode picks the failure.
package main

import "strata/models/sdk"

func main() {}

func init() {
	sdk.Register(layer)
	sdk.RegisterAggregator(aggregate)
}

// aggregate is a broken aggregator: option aggr_mode 1 returns edge rows,
// 2 calls itself, 3 panics; otherwise it is the sum.
func aggregate(g, x sdk.Value) sdk.Value {
	e := sdk.GatherSrc(g, x)
	switch sdk.Cfg("aggr_mode", 0) {
	case 1:
		return e
	case 2:
		return sdk.Aggr("misc.wasm", g, x)
	case 3:
		panic("aggregator boom")
	}
	return sdk.SegmentSum(g, e)
}

var hoard [][]byte

func layer() sdk.Value {
	x := sdk.Input(4)
	switch sdk.Cfg("mode", 0) {
	case 1: // panic
		var m map[string]int
		m["boom"]++
	case 2: // out of memory
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	case 3: // infinite loop
		for i := 0; ; i++ {
			if i < 0 {
				break
			}
		}
	case 4: // shape error
		w := sdk.Param("W", []int64{5, 3}, sdk.Glorot)
		return sdk.MatMul(x, w)
	case 5: // log and fail
		sdk.Log("about to fail")
		sdk.Fail("option mode=5 is not supported")
	case 6: // stdout and stderr output, then succeed
		println("hello from the guest")
	case 7: // an aggregator by name
		return sdk.Aggr(sdk.CfgStr("aggr", "sum"), sdk.Graph(sdk.Adj), x)
	case 8: // layer norm, learnable (affine 1) or with buffers (affine 0)
		return sdk.LayerNorm1d("ln", x, 4, sdk.Cfg("affine", 0) == 1)
	}
	return x
}
