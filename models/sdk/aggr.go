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

// SegmentProd is the product over each node's in-edges of e[E,C]
// (PyG's MulAggregation), composed from the op table:
// sign · exp(min(Σ log max(|e|, 1e-30), 80)), the sign the parity of the
// negative values, cos(π·#negatives). A zero value makes the product 0 (to
// 1e-30) and gets no gradient (PyG's: the product of the others); a
// product beyond e^80 saturates there (float32 overflows at e^88).
func SegmentProd(g, e Value) Value {
	mag := Exp(ClampMax(SegmentSum(g, Ln(ClampMin(Abs(e), 1e-30))), 80))
	neg := Scale(Sub(Abs(Sign(e)), Sign(e)), 0.5) // 1 where e < 0, else 0
	return Mul(mag, Cos(Scale(SegmentSum(g, neg), 3.141592653589793)))
}

// Variance is mean_j(x_j²) - mean_j(x_j)² over each node's in-neighbours
// in g (PyG's VarAggregation).
func Variance(g, x Value) Value {
	e := GatherSrc(g, x)
	m := SegmentMean(g, e)
	return Sub(SegmentMean(g, Mul(e, e)), Mul(m, m))
}
