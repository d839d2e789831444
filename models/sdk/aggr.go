//go:build wasip1

package sdk

import "strata/models/sdk/abi"

var aggregator func(g, x Value) Value

// RegisterAggregator makes the module an aggregator: f reduces, for every
// node of g, the rows x[N,C] of its in-neighbours into one row, [N,C']
// (PyG's Aggregation.reduce). Call it from init. strata runs f when a layer
// asks for the aggregator by name (Aggr); its parameters get the prefix
// "aggr<k>.<module>." so that several aggregators coexist in one layer.
func RegisterAggregator(f func(g, x Value) Value) { aggregator = f }

//go:wasmexport strata_aggregate
func aggregateExport(g, x int32) int32 {
	if aggregator == nil {
		Fail("the module registered no aggregator: call sdk.RegisterAggregator(f) in func init")
		return -1
	}
	return int32(aggregator(Value(g), Value(x)))
}

// Aggr runs the aggregator named name on (g, x[N,C]): a registered
// aggregator.<name> module (sum, mean, max, powermean, ...; see `strata
// list-plugins`) or, for a name ending in .wasm, the module file a string
// option named. Its result has N rows; its width is the aggregator's
// (Cols). An unknown name fails the layer with the registered list.
func Aggr(name string, g, x Value) Value {
	return Value(abi.AggregateWith(name, int32(g), int32(x)))
}

// CfgStr returns the string option key, or def when it is not set.
func CfgStr(key, def string) string { return abi.CfgStr(key, def) }

// Variance is mean_j(x_j²) - mean_j(x_j)² over each node's in-neighbours
// in g (PyG's VarAggregation).
func Variance(g, x Value) Value {
	e := GatherSrc(g, x)
	m := SegmentMean(g, e)
	return Sub(SegmentMean(g, Mul(e, e)), Mul(m, m))
}
