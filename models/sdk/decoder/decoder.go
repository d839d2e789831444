//go:build wasip1

// Package decoder makes a guest module a link-prediction decoder
// (docs/decoders.md). Importing it exports strata_decode; it is a package
// of its own so that the modules that do not import it (layers,
// aggregators, cost models) keep their bytes, and so their SHA-256.
package decoder

import "strata/models/sdk"

var decode func(g, h sdk.Value) sdk.Value

// Register makes the module a link-prediction decoder: f scores pairs of
// nodes from their embeddings h [N,C] (C is sdk.Dims()'s in). g is the
// pair graph: node i's row lists the sources of the pairs whose
// destination is i, one edge per pair (a pair may repeat, and u may equal
// v), so sdk.GatherSrc(g, h) is each pair's source row and
// sdk.GatherDst(g, h) its destination row. f returns the pairs' scores
// (logits) [E,1], one per edge of g in CSR order. Call it from init. Its
// parameters get the prefix "decoder." (their checkpoint keys); it reads
// options with sdk.Cfg, sdk.CfgFloat and sdk.CfgStr as a layer does.
func Register(f func(g, h sdk.Value) sdk.Value) { decode = f }

//go:wasmexport strata_decode
func decodeExport(g, h int32) int32 {
	if decode == nil {
		sdk.Fail("the module registered no decoder: call decoder.Register(f) in func init")
		return -1
	}
	return int32(decode(sdk.Value(g), sdk.Value(h)))
}
