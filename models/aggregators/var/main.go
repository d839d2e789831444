//go:build wasip1

// Var aggregation (PyG VarAggregation): mean(x_j²) - mean(x_j)² over N(i).
package main

//strata:doc columnwise variance (VarAggregation)

import "strata/models/sdk"

func main() {}

func init() { sdk.RegisterAggregator(sdk.Variance) }
