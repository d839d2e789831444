//go:build wasip1

// A broken aggregator: the first neighbour's row in CSR order, without
// declaring //strata:order-dependent. The suite's Permutation subtest
// must fail on it.
package main

//strata:doc the first neighbour in CSR order (mutant: undeclared order dependence)

import "strata/models/sdk"

func main() {}

func init() {
	sdk.RegisterAggregator(func(g, x sdk.Value) sdk.Value { return sdk.SegmentNth(g, sdk.GatherSrc(g, x), 0) })
}
